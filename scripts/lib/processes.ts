/**
 * Child processes of the stack scripts (`npm start`, `npm run temporal`, the cluster, scale-out, the bench), on
 * well-kept libraries: execa runs and stops them, wait-on waits for their ports and health URLs (the scripts take
 * free ports from get-port directly). What is left here is this project's convention for long-running children:
 * - each leads its own process group (`detached`), so a terminal Ctrl-C reaches only the supervisor, which then
 *   stops its children in order (and {@link Child.killGroup} can kill a child together with its own children);
 * - {@link Child.stop} sends SIGTERM (or the child's own stop signal) to that group, and SIGKILL after a delay;
 * - a safety net signals the child if the supervisor exits without stopping it (execa's `cleanup` does not apply
 *   to detached children).
 */
import { execa, type ResultPromise } from 'execa';
import waitOn from 'wait-on';

/** A line logger. */
export type LogFn = (line: string) => void;

/** How a child process ended. */
export interface ExitInfo {
  /** Exit code; undefined when a signal ended it or it never started. */
  code: number | undefined;
  /** The signal that ended it, e.g. `SIGKILL`. */
  signal: string | undefined;
  /** True when {@link Child.stop} had to send SIGKILL after the stop delay. */
  forced: boolean;
  /** Why it could not be started (e.g. `spawn ... ENOENT`), if so. */
  spawnError?: string;
}

/** `code 1`, `signal SIGKILL`, or the spawn error. */
export function describeExit(exit: Pick<ExitInfo, 'code' | 'signal' | 'spawnError'>): string {
  if (exit.signal !== undefined) return `signal ${exit.signal}`;
  if (exit.code !== undefined) return `code ${exit.code}`;
  return exit.spawnError ?? 'not started';
}

/** Options of {@link Child}. */
export interface ChildOptions {
  /** The child's whole environment. Default: this process's. */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Receives each line of stdout and stderr. Without it (and without `logFile`) the output is discarded. */
  onLine?: (line: string, stream: 'stdout' | 'stderr') => void;
  /** Appends stdout and stderr to this file instead. */
  logFile?: string;
  /** An IPC channel (JSON messages: `child.subprocess.send` / `on('message')`). */
  ipc?: boolean;
  /** Run as this user and group (e.g. PostgreSQL's OS user when we are root). */
  uid?: number;
  gid?: number;
  /** Signal {@link Child.stop} sends first. Default SIGTERM. */
  stopSignal?: NodeJS.Signals;
  /** How long {@link Child.stop} waits before SIGKILL, ms. Default 10 000. */
  stopTimeoutMs?: number;
}

/** A long-running child in its own process group. */
export class Child {
  readonly subprocess: ResultPromise;
  /** Resolves when it exits (never rejects). */
  readonly exited: Promise<ExitInfo>;
  readonly startedAt = Date.now();
  private exit: ExitInfo | undefined;
  private forced = false;
  private readonly stopSignal: NodeJS.Signals;
  private readonly stopTimeoutMs: number;

  constructor(
    readonly name: string,
    file: string,
    args: readonly string[],
    opts: ChildOptions = {},
  ) {
    const { onLine, logFile } = opts;
    this.stopSignal = opts.stopSignal ?? 'SIGTERM';
    this.stopTimeoutMs = opts.stopTimeoutMs ?? 10_000;
    // A generator transform sees every line; it yields nothing, so nothing is kept in memory.
    const output = (stream: 'stdout' | 'stderr') =>
      logFile !== undefined
        ? { file: logFile, append: true }
        : onLine !== undefined
          ? // eslint-disable-next-line require-yield -- an execa transform that consumes each line and passes none on
            function* (line: unknown): Generator<never> {
              onLine(String(line), stream);
            }
          : 'ignore';
    this.subprocess = execa(file, args, {
      cwd: opts.cwd,
      env: opts.env ?? process.env,
      extendEnv: false,
      stdin: 'ignore',
      stdout: output('stdout'),
      stderr: output('stderr'),
      buffer: false,
      reject: false,
      detached: process.platform !== 'win32',
      // stop() signals the whole process group and escalates itself: execa's own escalation reaches only the
      // leader, and a grandchild that keeps the pipes open would keep the result pending.
      forceKillAfterDelay: false,
      ipc: opts.ipc ?? false,
      serialization: 'json',
      uid: opts.uid,
      gid: opts.gid,
    }) as unknown as ResultPromise;
    const safetyNet = (): void => {
      if (this.running) this.signal(this.stopSignal);
    };
    process.once('exit', safetyNet);
    // The `exit` event, not the result: the result also waits for the output pipes to close.
    const exitEvent = new Promise<ExitInfo>((resolve) =>
      this.subprocess.once('exit', (code: number | null, signal: NodeJS.Signals | null) =>
        resolve({ code: code ?? undefined, signal: signal ?? undefined, forced: this.forced }),
      ),
    );
    const spawnFailure = this.subprocess.then((result): ExitInfo => ({
      code: result.exitCode,
      signal: result.signal,
      forced: this.forced,
      spawnError:
        result.failed && result.exitCode === undefined && result.signal === undefined ? errorText(result) : undefined,
    }));
    this.exited = Promise.race([exitEvent, spawnFailure]).then((exit) => {
      process.off('exit', safetyNet);
      this.exit = exit;
      return exit;
    });
  }

  get pid(): number | undefined {
    return this.running ? this.subprocess.pid : undefined;
  }

  /** False once it has exited. */
  get running(): boolean {
    return this.exit === undefined && this.subprocess.exitCode === null && this.subprocess.signalCode === null;
  }

  /**
   * Sends its stop signal to its process group, then SIGKILL after the stop delay; resolves when it exited.
   * Idempotent, never rejects.
   */
  async stop(): Promise<ExitInfo> {
    if (!this.running) return this.exited;
    this.signal(this.stopSignal);
    const timer = setTimeout(() => {
      this.forced = true;
      this.killGroup();
    }, this.stopTimeoutMs);
    const exit = await this.exited;
    clearTimeout(timer);
    return { ...exit, forced: this.forced };
  }

  /** SIGKILL to its whole process group (its own children too), at once. */
  killGroup(): void {
    this.signal('SIGKILL');
  }

  /** Sends `signal` to its process group (to the process alone where it has none). */
  private signal(signal: NodeJS.Signals): void {
    if (!this.running || this.subprocess.pid === undefined) return;
    try {
      if (process.platform === 'win32') throw new Error('no process groups');
      process.kill(-this.subprocess.pid, signal);
    } catch {
      this.subprocess.kill(signal);
    }
  }
}

function errorText(result: object): string {
  const r = result as { originalMessage?: string; shortMessage?: string };
  return r.originalMessage || r.shortMessage || 'could not be started';
}

/**
 * Waits for `wait`, or fails as soon as `child` exits (the usual reason a readiness wait can never succeed).
 * @throws Error naming the child and how it ended.
 */
export async function unlessExited<T>(wait: Promise<T>, what: string, child?: Child): Promise<T> {
  if (child === undefined) return wait;
  const exited = child.exited.then((exit): never => {
    throw new Error(`${child.name} exited (${describeExit(exit)}) before ${what}`);
  });
  exited.catch(() => undefined); // when `wait` wins, the child's later exit is not this wait's business
  return Promise.race([wait, exited]);
}

/** Common wait-on options: no stabilisation window (a health answer is enough), no proxy for 127.0.0.1. */
const WAIT_ON_DEFAULTS = { interval: 250, window: 0, proxy: false, tcpTimeout: 1000, httpTimeout: 2000 } as const;

/**
 * Waits until `GET url` answers 2xx (wait-on), or `child` exits.
 * @throws Error after `timeoutMs` (default 60 000) or when `child` exits first.
 */
export async function waitForHttp(url: string, opts: { timeoutMs?: number; child?: Child } = {}): Promise<void> {
  const timeout = opts.timeoutMs ?? 60_000;
  const what = `${url} to answer 2xx`;
  await unlessExited(
    // `Connection: close`: a probe must not hold a kept-alive socket that the server then waits for when it stops.
    waitOn({
      ...WAIT_ON_DEFAULTS,
      resources: [url.replace(/^http(s?):/, 'http$1-get:')],
      timeout,
      headers: { connection: 'close' },
    }).catch(() => {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    }),
    what,
    opts.child,
  );
}

/**
 * Waits until something accepts TCP connections on `host:port` (wait-on), or `child` exits.
 * @throws Error after `timeoutMs` (default 60 000) or when `child` exits first.
 */
export async function waitForPort(
  port: number,
  opts: { host?: string; timeoutMs?: number; child?: Child } = {},
): Promise<void> {
  const timeout = opts.timeoutMs ?? 60_000;
  const what = `${opts.host ?? '127.0.0.1'}:${port} to accept connections`;
  await unlessExited(
    waitOn({ ...WAIT_ON_DEFAULTS, resources: [`tcp:${opts.host ?? '127.0.0.1'}:${port}`], timeout }).catch(() => {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}`);
    }),
    what,
    opts.child,
  );
}

/**
 * The ones of `ports` on which something accepts TCP connections right now (wait-on in reverse: a free port
 * answers at once; a busy one is reported after 300 ms).
 */
export async function portsInUse(ports: readonly number[], host = '127.0.0.1'): Promise<number[]> {
  const busy = await Promise.all(
    ports.map((port) =>
      waitOn({ ...WAIT_ON_DEFAULTS, resources: [`tcp:${host}:${port}`], reverse: true, timeout: 300 }).then(
        () => undefined,
        () => port,
      ),
    ),
  );
  return busy.filter((p) => p !== undefined);
}

/**
 * Calls `probe` every `intervalMs` (default 250) until it returns a value other than undefined or false; for
 * readiness that is not a port or a URL (a gRPC answer, a poller on a task queue). Errors of `probe` count as
 * "not yet" and the last one is reported on timeout.
 * @throws Error after `timeoutMs`, or when `child` exits first.
 */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  opts: { timeoutMs: number; intervalMs?: number; child?: Child },
): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastError = '';
  for (;;) {
    if (opts.child !== undefined && !opts.child.running) {
      throw new Error(`${opts.child.name} exited (${describeExit(await opts.child.exited)}) before ${what}`);
    }
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${what}${lastError ? `: ${lastError}` : ''}`);
    }
    await new Promise((resolve) => setTimeout(resolve, opts.intervalMs ?? 250));
  }
}
