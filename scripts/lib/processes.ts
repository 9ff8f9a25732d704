/**
 * Child processes (execa) and readiness (wait-on, Temporal describe calls) for the launchers that run the stack's
 * processes themselves: the bench, the scale-out run, the e2e helpers, the demo.
 */
import { Connection } from '@temporalio/client';
import { execa, type Options, type ResultPromise } from 'execa';
import waitOn from 'wait-on';
import { workerTaskQueues } from './stack-definition.js';

export type LogFn = (line: string) => void;

/** A child process (execa): awaiting it waits for its exit and never rejects; `kill()` escalates to SIGKILL. */
export type Proc = ResultPromise<{ reject: false; all: true; buffer: false }>;

/** Spawns a child: no stdin, never rejecting, killed with us, SIGKILL 25 s after a stop; output to `logFile`. */
export function spawnChild(file: string, args: readonly string[], options: Options, logFile?: string): Proc {
  const out = logFile ? ({ file: logFile, append: true } as const) : 'ignore';
  const defaults = { stdin: 'ignore', stdout: out, stderr: out, reject: false, forceKillAfterDelay: 25_000 } as const;
  return execa(file, args, { ...defaults, cleanup: true, ...options }) as unknown as Proc;
}

/** Stops a child: SIGTERM, then SIGKILL after its delay. Resolves once it exited; never rejects. */
export async function stop(proc: Proc | undefined): Promise<void> {
  if (proc === undefined || proc.exitCode !== null || proc.signalCode !== null) return;
  proc.kill('SIGTERM');
  await proc;
}

function exitOf(child: Proc | undefined, what: string): Promise<never> {
  if (!child) return new Promise(() => undefined);
  const exited = child.then((r): never => {
    throw new Error(`${r.command.split(' ').at(-1)} exited (${r.signal ?? `code ${r.exitCode}`}) before ${what}`);
  });
  exited.catch(() => undefined);
  return exited;
}

const WAIT_ON = { interval: 250, window: 0, proxy: false, tcpTimeout: 1000, httpTimeout: 2000 } as const;

/** Waits until `GET url` answers 2xx. @throws Error after `timeoutMs` (60 000), or when `child` exits first. */
export async function waitForHttp(url: string, opts: { timeoutMs?: number; child?: Proc } = {}): Promise<void> {
  const timeout = opts.timeoutMs ?? 60_000;
  const what = `${url} to answer 2xx`;
  // `Connection: close`: a probe must not hold a kept-alive socket that the server then waits for when it stops.
  const resources = [url.replace(/^http(s?):/, 'http$1-get:')];
  const wait = waitOn({ ...WAIT_ON, resources, timeout, headers: { connection: 'close' } });
  await Promise.race([
    wait.catch(() => Promise.reject(new Error(`timed out after ${timeout} ms waiting for ${what}`))),
    exitOf(opts.child, what),
  ]);
}

/** The ones of `ports` on which something accepts TCP connections right now. */
export async function portsInUse(ports: readonly number[], host = '127.0.0.1'): Promise<number[]> {
  const busy = (port: number): Promise<number[]> =>
    waitOn({ ...WAIT_ON, resources: [`tcp:${host}:${port}`], reverse: true, timeout: 300 }).then(
      () => [],
      () => [port],
    );
  return (await Promise.all(ports.map(busy))).flat();
}

/**
 * Calls `probe` every `intervalMs` until it returns a value (errors count as not yet, the last one reported).
 * @throws Error after `timeoutMs`, or when `child` exits first.
 */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  opts: { timeoutMs: number; intervalMs?: number; child?: Proc },
): Promise<T> {
  const poll = async (): Promise<T> => {
    const deadline = Date.now() + opts.timeoutMs;
    for (let lastError = ''; ; await new Promise((resolve) => setTimeout(resolve, opts.intervalMs ?? 250))) {
      try {
        const value = await probe();
        if (value !== undefined && value !== false) return value;
      } catch (error) {
        lastError = error instanceof Error ? error.message : String(error);
      }
      if (Date.now() > deadline)
        throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${what}${lastError ? `: ${lastError}` : ''}`);
    }
  };
  return Promise.race([poll(), exitOf(opts.child, what)]);
}

/** Waits until Temporal at `address` serves `namespace`. @throws Error after `timeoutMs`, or when `child` exits first. */
export async function waitForTemporal(opts: { address: string; namespace: string; timeoutMs: number; child?: Proc }) {
  await pollUntil(
    `Temporal at ${opts.address} to serve namespace ${opts.namespace}`,
    async () => {
      const connection = await Connection.connect({ address: opts.address, connectTimeout: 1000 });
      try {
        const describe = () => connection.workflowService.describeNamespace({ namespace: opts.namespace });
        return !!(await connection.withDeadline(Date.now() + 2000, describe));
      } finally {
        await connection.close().catch(() => undefined);
      }
    },
    opts,
  );
}

/**
 * Waits until worker `pid` polls each of its task queues ({@link workerTaskQueues}, or `queues`).
 * @throws Error after `timeoutMs` (120 000), or when `child` exits first.
 */
export async function waitForWorkerPollers(opts: {
  connection: Connection;
  namespace: string;
  taskQueue: string;
  pid: number | undefined;
  queues?: ReadonlyArray<{ name: string; workflows: boolean }>;
  timeoutMs?: number;
  child?: Proc;
}): Promise<void> {
  const queues = opts.queues ?? workerTaskQueues(opts.taskQueue);
  // TaskQueueType: 1 = workflow, 2 = activity. TaskQueueKind 1 = normal.
  const pending = queues.flatMap((q) => [...(q.workflows ? [1] : []), 2].map((type) => ({ name: q.name, type })));
  await pollUntil(
    `the worker (pid ${opts.pid}) to poll ${queues.map((q) => q.name).join(', ')}`,
    async () => {
      while (pending.length > 0) {
        const { name, type } = pending[0]!;
        const request = { namespace: opts.namespace, taskQueue: { name, kind: 1 }, taskQueueType: type };
        const res = await opts.connection.withDeadline(Date.now() + 2000, () =>
          opts.connection.workflowService.describeTaskQueue(request),
        );
        if (!(res.pollers ?? []).some((p) => p.identity?.startsWith(`${opts.pid}@`))) return false;
        pending.shift();
      }
      return true;
    },
    { timeoutMs: opts.timeoutMs ?? 120_000, child: opts.child },
  );
}
