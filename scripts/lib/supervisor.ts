/**
 * Supervision that every launcher shares (`npm start`, the bench, the scale-out run): what was started, stopped
 * again in reverse start order; a child that exits on its own reported (or restarted); the ports a stack needs
 * checked before anything starts. Spawning, signals and readiness are the libraries' (execa and wait-on through
 * ./processes.ts); this is only the bookkeeping around them.
 */
import { describeExit, portsInUse, type Child, type ExitInfo } from './processes.js';

/** Something started that must be stopped again: a child process, a server, a connection. */
export interface Resource {
  /** Its name in messages, e.g. `worker`. */
  name: string;
  /** Stops it; must not throw when it already stopped. */
  stop(): Promise<void>;
  /** Kills it at once (a second Ctrl-C). */
  kill?(): void;
}

/** Options of {@link Supervisor}. */
export interface SupervisorOptions {
  /**
   * The start order by name: {@link Supervisor.stopAll} stops the latest in it first whatever the moment each became
   * ready (names not in it rank last, i.e. are stopped first). Without it: the reverse of registration.
   */
  startOrder?: readonly string[];
  /** Called before each resource is stopped. */
  onStopping?(name: string): void;
  /** Called when stopping a resource failed (the others are stopped anyway). */
  onStopError?(name: string, error: unknown): void;
  /**
   * Called when a supervised child exits while nobody stopped it and it has no handler of its own (e.g. to stop
   * the whole stack with its last log lines).
   */
  onUnexpectedExit?(name: string, exit: ExitInfo): void;
}

/** Thrown when asked to start something while the supervisor is stopping everything; not an error to report. */
export class ShutdownInProgress extends Error {
  constructor() {
    super('shutting down');
  }
}

/** The resources of one stack, stopped in reverse start order. */
export class Supervisor {
  private readonly resources: Resource[] = [];
  /** The resource being stopped right now (no longer in `resources`). */
  private current: Resource | undefined;
  private stopped: Promise<void> | undefined;

  constructor(private readonly opts: SupervisorOptions = {}) {}

  /** True once {@link stopAll} was called. */
  get stopping(): boolean {
    return this.stopped !== undefined;
  }

  /** @throws ShutdownInProgress once {@link stopAll} was called (call it before starting anything). */
  checkNotStopping(): void {
    if (this.stopping) throw new ShutdownInProgress();
  }

  /** Registers a resource to stop; returns it. */
  add<R extends Resource>(resource: R): R {
    this.resources.push(resource);
    return resource;
  }

  /** Forgets a resource (it stopped by itself, or was stopped by its owner). */
  remove(resource: Resource): void {
    const i = this.resources.indexOf(resource);
    if (i >= 0) this.resources.splice(i, 1);
  }

  /**
   * Registers a started child: stopped by {@link stopAll} (its stop signal, then SIGKILL after its timeout), killed
   * by {@link killAll}. When it exits and nobody stopped it, `onUnexpectedExit` runs (e.g. to restart it; the child
   * is no longer registered then), else the supervisor's own.
   * @returns the registered resource (for {@link remove}).
   */
  supervise(
    child: Child,
    opts: { name?: string; onUnexpectedExit?(exit: ExitInfo): void; onForcedStop?(): void } = {},
  ): Resource {
    const name = opts.name ?? child.name;
    let expected = false;
    const resource = this.add({
      name,
      stop: async () => {
        expected = true;
        const exit = await child.stop();
        if (exit.forced) opts.onForcedStop?.();
      },
      kill: () => child.killGroup(),
    });
    void child.exited.then((exit) => {
      if (expected || this.stopping) return;
      this.remove(resource);
      if (opts.onUnexpectedExit) opts.onUnexpectedExit(exit);
      else this.opts.onUnexpectedExit?.(name, exit);
    });
    return resource;
  }

  /**
   * Waits for a one-shot child (migrations, a seed) to exit; stopped like any resource meanwhile.
   * @throws Error when it exits non-zero; ShutdownInProgress when everything is being stopped.
   */
  async runToCompletion(child: Child): Promise<void> {
    const resource = this.add({
      name: child.name,
      stop: async () => void (await child.stop()),
      kill: () => child.killGroup(),
    });
    const exit = await child.exited;
    this.remove(resource);
    this.checkNotStopping();
    if (exit.code !== 0) throw new Error(`${child.name} failed (${describeExit(exit)})`);
  }

  /** Stops every resource, one at a time, in reverse start order. Idempotent: later calls get the same promise. */
  stopAll(): Promise<void> {
    this.stopped ??= (async () => {
      for (let r = this.next(); r !== undefined; r = this.next()) {
        this.opts.onStopping?.(r.name);
        this.current = r;
        try {
          await r.stop();
        } catch (error) {
          this.opts.onStopError?.(r.name, error);
        }
        this.current = undefined;
      }
    })();
    return this.stopped;
  }

  /** Kills every resource at once, the one being stopped included (a second Ctrl-C). */
  killAll(): void {
    for (const r of [...this.resources, ...(this.current ? [this.current] : [])]) r.kill?.();
  }

  /** Removes and returns the resource to stop next. */
  private next(): Resource | undefined {
    const order = this.opts.startOrder;
    if (!order) return this.resources.pop();
    const rank = (r: Resource): number => {
      const i = order.indexOf(r.name);
      return i < 0 ? order.length : i;
    };
    let pick = -1;
    this.resources.forEach((r, i) => {
      if (pick < 0 || rank(r) >= rank(this.resources[pick]!)) pick = i;
    });
    return pick < 0 ? undefined : this.resources.splice(pick, 1)[0];
  }
}

/** A port a stack needs, and what for (e.g. `the API (PORT)`). */
export interface NeededPort {
  what: string;
  port: number;
}

/**
 * Fails before anything starts when one of `ports` is taken on `host` (another stack running).
 * @throws Error listing every busy port and what it was wanted for.
 */
export async function assertPortsFree(ports: readonly NeededPort[], host = '127.0.0.1'): Promise<void> {
  const inUse = new Set(
    await portsInUse(
      ports.map((p) => p.port),
      host,
    ),
  );
  const busy = ports.filter((p) => inUse.has(p.port)).map((p) => `  ${host}:${p.port} (${p.what})`);
  if (busy.length > 0) {
    throw new Error(
      `these ports are already in use (another stack running? stop it or choose other ports):\n${busy.join('\n')}`,
    );
  }
}
