/**
 * Starting the built processes of the stack (STACK_PROCESSES of ./stack-definition.ts) and knowing when each is
 * ready: `node --enable-source-maps <entry>` in its own process group (./processes.ts, on execa), then its health
 * URL (wait-on) or, for the worker, a poller of its own on every task queue it serves (Temporal's DescribeTaskQueue).
 * `npm start`, the bench and the scale-out run start their simulators, workers and APIs through here and only say
 * which, with which environment and where the output goes.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Connection } from '@temporalio/client';
import type { StepDefinition } from '../../activities/kit/define.js';
import { STEPS } from '../../activities/steps/index.js';
import { PROVIDER_LIST } from '../../providers/index.js';
import { providerTaskQueue, type ProviderDefinition } from '../../providers/kit/define.js';
import { Child, pollUntil, waitForHttp, type ChildOptions } from './processes.js';
import type { StackProcess } from './stack-definition.js';

/** How long a process may take to be ready by default, ms (the worker bundles its workflows first). */
export const READY_TIMEOUT_MS = { http: 60_000, pollers: 120_000 } as const;

/** Options of {@link spawnStackProcess}. */
export interface SpawnOptions extends Pick<ChildOptions, 'onLine' | 'logFile' | 'ipc' | 'stopTimeoutMs'> {
  /** The child's whole environment. */
  env: NodeJS.ProcessEnv;
  /** The checkout it runs from (its `dist/`); default: the current directory. */
  root?: string;
  /** Its name in logs when not the process's own (e.g. `worker-2`). */
  name?: string;
  /** Another entry point (e.g. a bench variant's worker; a `.ts` file runs through tsx). */
  entry?: string;
  /** Node options before the entry (e.g. `--import <preload>`). */
  nodeArgs?: readonly string[];
}

/** Starts one process of the stack: `node --enable-source-maps <entry>` in its own process group. */
export function spawnStackProcess(proc: StackProcess, opts: SpawnOptions): Child {
  const entry = opts.entry ?? proc.entry;
  return new Child(
    opts.name ?? proc.name,
    process.execPath,
    [...(opts.nodeArgs ?? []), ...(entry.endsWith('.ts') ? ['--import', 'tsx'] : []), '--enable-source-maps', entry],
    {
      cwd: opts.root ?? process.cwd(),
      env: opts.env,
      onLine: opts.onLine,
      logFile: opts.logFile,
      ipc: opts.ipc,
      stopTimeoutMs: opts.stopTimeoutMs,
    },
  );
}

/** What {@link waitUntilReady} needs to know about where the process runs. */
export interface ReadyOptions {
  /** Base URL of an HTTP process (its `readyPath` is appended). */
  baseUrl?: string;
  /** For the worker: the Temporal connection, namespace and order task queue its pollers are looked for on. */
  temporal?: { connection: Connection; namespace: string; taskQueue: string };
  timeoutMs?: number;
}

/**
 * Waits until a process of the stack is ready: its health URL answers 2xx, or (the worker) it polls every task
 * queue it serves. Fails as soon as the child exits.
 * @throws Error on timeout, when the child exits first, or when the options lack what the process needs.
 */
export async function waitUntilReady(proc: StackProcess, child: Child, opts: ReadyOptions): Promise<void> {
  if (proc.readyPath !== undefined) {
    if (opts.baseUrl === undefined) throw new Error(`${child.name}: no base URL to wait for`);
    await waitForHttp(`${opts.baseUrl.replace(/\/+$/, '')}${proc.readyPath}`, {
      timeoutMs: opts.timeoutMs ?? READY_TIMEOUT_MS.http,
      child,
    });
    return;
  }
  if (proc.readyWhen === 'pollers') {
    if (opts.temporal === undefined) throw new Error(`${child.name}: no Temporal connection to wait for its pollers`);
    await waitForWorkerPollers({ ...opts.temporal, worker: child, timeoutMs: opts.timeoutMs });
  }
}

/** Spawns a process of the stack and waits until it is ready ({@link spawnStackProcess}, {@link waitUntilReady}). */
export async function startStackProcess(
  proc: StackProcess,
  opts: SpawnOptions & ReadyOptions & { onSpawn?(child: Child): void },
): Promise<Child> {
  const child = spawnStackProcess(proc, opts);
  opts.onSpawn?.(child);
  await waitUntilReady(proc, child, opts);
  return child;
}

/** The providers a step or a compensation of `steps` calls, in registry order. */
export function calledProviders(
  steps: readonly StepDefinition[] = STEPS,
  providers: readonly ProviderDefinition[] = PROVIDER_LIST,
): ProviderDefinition[] {
  const called = new Set(
    steps.flatMap((s) => [
      ...(s.kind === 'provider' ? [s.provider.name] : []),
      ...(s.compensation?.kind === 'provider' ? [s.compensation.provider.name] : []),
    ]),
  );
  return providers.filter((p) => called.has(p.name));
}

/**
 * The task queues a worker process polls, from the step registry: the order task queue (workflows and the database
 * steps) and `<taskQueue>.<provider>` of each provider a step or a compensation calls (src/worker/order-worker.ts
 * creates a worker only for those).
 */
export function workerTaskQueues(
  taskQueue: string,
  steps: readonly StepDefinition[] = STEPS,
): Array<{ name: string; workflows: boolean }> {
  return [
    { name: taskQueue, workflows: true },
    ...calledProviders(steps).map((p) => ({ name: providerTaskQueue(taskQueue, p.name), workflows: false })),
  ];
}

/**
 * Waits until `worker` (a process running the stack's worker, or any worker whose identity is the SDK's default
 * `<pid>@<host>`) polls every task queue it serves: workflow and activity tasks on the order task queue, activity
 * tasks on each provider's ({@link workerTaskQueues}; `queues` overrides them, e.g. the bench's bare floor worker).
 * @throws Error after `timeoutMs` (default 120 000), or when the worker exits first.
 */
export async function waitForWorkerPollers(opts: {
  connection: Connection;
  namespace: string;
  taskQueue: string;
  worker: Child;
  queues?: ReadonlyArray<{ name: string; workflows: boolean }>;
  timeoutMs?: number;
}): Promise<void> {
  const pid = opts.worker.subprocess.pid;
  const identity = `${pid}@`;
  const queues = opts.queues ?? workerTaskQueues(opts.taskQueue);
  // TaskQueueType: 1 = workflow, 2 = activity. TaskQueueKind: 1 = normal.
  const targets = queues.flatMap((q) => [
    ...(q.workflows ? [{ name: q.name, type: 1 as const }] : []),
    { name: q.name, type: 2 as const },
  ]);
  const ready = new Set<string>();
  await pollUntil(
    `${opts.worker.name} to poll ${queues.map((q) => q.name).join(', ')}`,
    async () => {
      for (const t of targets) {
        const key = `${t.name}/${t.type}`;
        if (ready.has(key)) continue;
        const res = await opts.connection.withDeadline(Date.now() + 2000, () =>
          opts.connection.workflowService.describeTaskQueue({
            namespace: opts.namespace,
            taskQueue: { name: t.name, kind: 1 },
            taskQueueType: t.type,
          }),
        );
        if (!(res.pollers ?? []).some((p) => p.identity?.startsWith(identity))) return false;
        ready.add(key);
      }
      return true;
    },
    { timeoutMs: opts.timeoutMs ?? READY_TIMEOUT_MS.pollers, child: opts.worker },
  );
}

/**
 * Fails before anything starts when the build of a process to start is missing.
 * @throws Error naming the missing entry points and the command that makes them.
 */
export function assertBuilt(procs: readonly StackProcess[], root = process.cwd()): void {
  const missing = procs.map((p) => p.entry).filter((entry) => !existsSync(path.join(root, entry)));
  if (missing.length > 0) {
    throw new Error(`missing ${missing.join(', ')}: run \`npm run build\` first (\`npm start\` does both)`);
  }
}
