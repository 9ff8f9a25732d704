/**
 * Builds the Temporal Worker of the order task queue. Shared by the worker process (src/worker.ts),
 * the e2e tests and the benchmarks.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { SEARCH_ATTRIBUTES } from '../../workflows/order-fulfilment.contract.js';

/**
 * Path of the workflow bundle entry: `workflows/index.js` next to the compiled code, or
 * `workflows/index.ts` when running from source (tests). The SDK bundles it with webpack into the
 * workflow sandbox. See https://docs.temporal.io/develop/typescript/core-application#workflow-bundling
 */
export function workflowsPath(): string {
  const js = fileURLToPath(new URL('../../workflows/index.js', import.meta.url));
  return existsSync(js) ? js : js.replace(/\.js$/, '.ts');
}

/** Options of createOrderWorker. */
export interface OrderWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  /** The activity implementations, usually `createActivities(deps)`. */
  activities: object;
  /** Extra Worker options (concurrency limits, interceptors, shutdownGraceTime...). */
  overrides?: Partial<WorkerOptions>;
}

/**
 * Creates (and bundles the workflows of) a Worker for the order task queue. Call `run()` on it.
 * Shutdown: `worker.shutdown()` stops polling and lets running activities finish within
 * `shutdownGraceTime` (default here 20 s), then `run()` resolves.
 * @throws if the connection or the workflow bundle fails.
 */
export async function createOrderWorker(opts: OrderWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    workflowsPath: workflowsPath(),
    activities: opts.activities,
    shutdownGraceTime: '20 seconds',
    // Heartbeats carry cancel requests to activities: flush them at least every second (the default throttle
    // is 80% of the heartbeat timeout, 8 s), so a cancel reaches a waiting confirmation within about a second.
    maxHeartbeatThrottleInterval: '1 second',
    ...opts.overrides,
  });
}

/**
 * Registers the search attributes the workflow upserts (OrderId, OrderStatus; Keyword) on the namespace,
 * for clusters other than the dev server (which registers them with `--search-attribute` at start).
 * Already-registered attributes are fine. On Temporal Cloud, register them in the namespace settings.
 * @returns the names that were missing and are now registered.
 */
export async function ensureSearchAttributes(connection: NativeConnection, namespace: string): Promise<string[]> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const known = new Set(Object.keys(existing.customAttributes ?? {}));
  const missing = Object.values(SEARCH_ATTRIBUTES).filter((k) => !known.has(k.name));
  if (missing.length === 0) return [];
  const { temporal } = await import('@temporalio/proto');
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map((k) => [k.name, temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD]),
    ),
  });
  return missing.map((k) => k.name);
}
