/**
 * Builds the Temporal Workers of one worker process: the order task queue's and one per provider. Shared by the
 * worker process (src/worker.ts), the e2e tests and the benchmarks.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { SearchAttributeType } from '@temporalio/common';
// @temporalio/proto is CommonJS whose exports Node's ESM loader cannot name statically: `import { temporal }`
// and `(await import(...)).temporal` are undefined under ESM. Its default export is the protobuf root.
import protoPkg from '@temporalio/proto';
import { type NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import { SEARCH_ATTRIBUTES } from '../../workflows/order-fulfilment.contract.js';
import { activitiesByTaskQueue, type ActivitiesByTaskQueue } from '../../activities/index.js';
import { PROVIDER_LIST } from '../../providers/index.js';
import { providerTaskQueue } from '../../providers/kit/define.js';
import { activityObservability } from './worker-observability.js';

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
  /** The order task queue (`TEMPORAL_TASK_QUEUE`); each provider's activities run on `<taskQueue>.<provider>`. */
  taskQueue: string;
  /**
   * The activity implementations, usually `createActivities(deps)`: a flat record by activity name (split by task
   * queue with `activitiesByTaskQueue`, following the step registry), or already split.
   */
  activities: Record<string, unknown> | ActivitiesByTaskQueue;
  /** Extra Worker options of the order task queue's worker (concurrency limits, interceptors, shutdownGraceTime...). */
  overrides?: Partial<WorkerOptions>;
  /** Extra Worker options of every provider task queue's worker. */
  providerOverrides?: Partial<WorkerOptions>;
}

/**
 * The workers of one process: the order task queue's (workflows, database steps, the kit's activities) and one per
 * provider (its steps and compensations, under the provider's limits). Run, drain and stop them together.
 */
export interface OrderWorkers {
  /** The order task queue's worker. */
  main: Worker;
  /** Each provider's worker, by provider name. */
  providers: Record<string, Worker>;
  /**
   * Runs every worker until all have stopped (after {@link OrderWorkers.shutdown}). When one fails, the others are
   * shut down and the failure is thrown once they stopped.
   */
  run(): Promise<void>;
  /** Stops polling everywhere and lets running activities finish within the grace time. */
  shutdown(): void;
  /** Runs the workers while `fn` runs, then shuts them down (Worker.runUntil for every worker). */
  runUntil<R>(fn: () => Promise<R>): Promise<R>;
}

/** The options every worker of the process shares: drain time, heartbeat flushes, the observability interceptor. */
function sharedOptions(): Partial<WorkerOptions> {
  return {
    shutdownGraceTime: '20 seconds',
    // Heartbeats carry cancel requests to activities: flush them at least every second (the default throttle
    // is 80% of the heartbeat timeout, 8 s), so a cancel reaches a waiting confirmation within about a second.
    maxHeartbeatThrottleInterval: '1 second',
    // Metrics of every activity attempt and orderId/runId on its log lines (src/worker/worker-observability.ts).
    interceptors: { activity: [activityObservability(Runtime.instance().metricMeter)] },
  };
}

/**
 * Creates (and bundles the workflows of) the worker of the order task queue, and one worker per provider of
 * providers/index.ts on `<taskQueue>.<provider>`, whose limits Temporal enforces: `maxTaskQueueActivitiesPerSecond`
 * is the provider's calls per second across every worker (a server-side rate limit of the task queue), and
 * `maxConcurrentActivityTaskExecutions` its concurrent calls per worker.
 * See https://docs.temporal.io/develop/worker-performance
 * Shutdown: `shutdown()` stops polling and lets running activities finish within `shutdownGraceTime` (20 s here),
 * then `run()` resolves.
 * @throws if the connection or the workflow bundle fails.
 */
export async function createOrderWorkers(opts: OrderWorkerOptions): Promise<OrderWorkers> {
  const grouped =
    'main' in opts.activities && 'providers' in opts.activities
      ? (opts.activities as ActivitiesByTaskQueue)
      : activitiesByTaskQueue(opts.activities as Record<string, unknown>);
  const main = await Worker.create({
    connection: opts.connection,
    namespace: opts.namespace,
    taskQueue: opts.taskQueue,
    workflowsPath: workflowsPath(),
    activities: grouped.main,
    ...sharedOptions(),
    ...opts.overrides,
  });
  const providers: Record<string, Worker> = {};
  for (const provider of PROVIDER_LIST) {
    const activities = grouped.providers[provider.name];
    if (!activities || Object.keys(activities).length === 0) continue;
    providers[provider.name] = await Worker.create({
      connection: opts.connection,
      namespace: opts.namespace,
      taskQueue: providerTaskQueue(opts.taskQueue, provider.name),
      activities,
      maxTaskQueueActivitiesPerSecond: provider.limits.callsPerSecond,
      maxConcurrentActivityTaskExecutions: provider.limits.concurrentCallsPerWorker,
      ...sharedOptions(),
      ...opts.providerOverrides,
    });
  }
  const all = [main, ...Object.values(providers)];
  const shutdown = (): void => {
    for (const worker of all) {
      if (worker.getState() === 'RUNNING') worker.shutdown();
    }
  };
  const run = async (): Promise<void> => {
    const results = await Promise.allSettled(
      all.map((worker) =>
        worker.run().catch((err: unknown) => {
          shutdown();
          throw err;
        }),
      ),
    );
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
  };
  return {
    main,
    providers,
    run,
    shutdown,
    async runUntil(fn) {
      const running = run();
      try {
        return await fn();
      } finally {
        shutdown();
        await running;
      }
    },
  };
}

/** The IndexedValueType enum of the Temporal API (temporal/api/enums/v1/common.proto). */
const { IndexedValueType } = protoPkg.temporal.api.enums.v1;
type IndexedValueType = protoPkg.temporal.api.enums.v1.IndexedValueType;

/** IndexedValueType of each SDK search attribute type: `KEYWORD` -> `INDEXED_VALUE_TYPE_KEYWORD` (= 2). */
export const INDEXED_VALUE_TYPES: Readonly<Record<SearchAttributeType, IndexedValueType>> = {
  TEXT: IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  KEYWORD: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  INT: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  DOUBLE: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  BOOL: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  DATETIME: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KEYWORD_LIST: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/** How Temporal's UI, CLI and Cloud spell each type (`Keyword`, `KeywordList`, ...). */
export const SEARCH_ATTRIBUTE_TYPE_LABELS: Readonly<Record<SearchAttributeType, string>> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** A custom search attribute: its name and SDK type, e.g. `{ name: 'OrderId', type: 'KEYWORD' }`. */
export interface SearchAttributeDefinition {
  name: string;
  type: SearchAttributeType;
}

/** Every key of `SEARCH_ATTRIBUTES` in the workflow contract, with its own type. */
export function projectSearchAttributes(): SearchAttributeDefinition[] {
  return Object.values(SEARCH_ATTRIBUTES).map((key) => ({ name: key.name, type: key.type }));
}

/** `OrderId (Keyword), OrderStatus (Keyword)`. */
export function describeSearchAttributes(attributes: readonly SearchAttributeDefinition[]): string {
  return attributes.map((a) => `${a.name} (${SEARCH_ATTRIBUTE_TYPE_LABELS[a.type]})`).join(', ');
}

/**
 * The namespace lacks search attributes the workflow needs and they cannot be added from here: the
 * connection may not call the OperatorService (Temporal Cloud: gRPC PERMISSION_DENIED or UNIMPLEMENTED), or
 * a name is registered with another type. The message names every attribute and how to add it.
 */
export class SearchAttributesNotRegisteredError extends Error {
  override readonly name = 'SearchAttributesNotRegisteredError';

  constructor(
    readonly namespace: string,
    /** The attributes to add (or fix) in the namespace settings. */
    readonly missing: readonly SearchAttributeDefinition[],
    reason: string,
  ) {
    const cli = missing
      .map((a) => `--name ${a.name} --type ${SEARCH_ATTRIBUTE_TYPE_LABELS[a.type]}`)
      .map((args) => `temporal operator search-attribute create --namespace ${namespace} ${args}`);
    super(
      `Namespace ${namespace} needs the custom search attributes ${describeSearchAttributes(missing)} and they ` +
        `cannot be registered from this worker (${reason}). Add them in the namespace settings: on Temporal ` +
        `Cloud, Namespaces > ${namespace} > Custom Search Attributes in the UI, or ` +
        `\`tcld namespace search-attributes add --namespace <namespace>.<account> ${missing
          .map((a) => `--search-attribute "${a.name}=${SEARCH_ATTRIBUTE_TYPE_LABELS[a.type]}"`)
          .join(' ')}\`; on a self-hosted cluster, as an operator: ${cli.join('; ')}.`,
    );
  }
}

/** The calls {@link ensureSearchAttributes} makes; a worker `NativeConnection` or a client `Connection` has them. */
export interface SearchAttributeConnection {
  operatorService: {
    listSearchAttributes(
      request: protoPkg.temporal.api.operatorservice.v1.IListSearchAttributesRequest,
    ): Promise<protoPkg.temporal.api.operatorservice.v1.IListSearchAttributesResponse>;
    addSearchAttributes(
      request: protoPkg.temporal.api.operatorservice.v1.IAddSearchAttributesRequest,
    ): Promise<unknown>;
  };
  workflowService: {
    countWorkflowExecutions(
      request: protoPkg.temporal.api.workflowservice.v1.ICountWorkflowExecutionsRequest,
    ): Promise<unknown>;
  };
}

/** Options of {@link ensureSearchAttributes}. */
export interface EnsureSearchAttributesOptions {
  /** What to register. Default: every key of `SEARCH_ATTRIBUTES` in the workflow contract. */
  attributes?: readonly SearchAttributeDefinition[];
  /** How long to wait for added attributes to become usable, ms. Default 60 000. */
  timeoutMs?: number;
  /** Delay between checks, ms. Default 500. */
  pollIntervalMs?: number;
}

/** gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
const GRPC = { INVALID_ARGUMENT: 3, ALREADY_EXISTS: 6, PERMISSION_DENIED: 7, UNIMPLEMENTED: 12 } as const;

function grpcCode(error: unknown): number | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

function isRefused(error: unknown): boolean {
  const code = grpcCode(error);
  return code === GRPC.PERMISSION_DENIED || code === GRPC.UNIMPLEMENTED;
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Makes sure the namespace has every custom search attribute the workflow sets (the workflow contract's
 * `SEARCH_ATTRIBUTES`: OrderId, OrderStatus, ... each with the IndexedValueType of its key's type), on any
 * Temporal cluster: the dev server, a self-hosted cluster (Elasticsearch or SQL visibility, where the mapping
 * is per namespace), or Temporal Cloud.
 *
 * 1. `OperatorService.ListSearchAttributes`; attributes already there with the same type are kept.
 * 2. The missing ones are added with `OperatorService.AddSearchAttributes` (ALREADY_EXISTS, from a second
 *    worker starting at the same time, is fine; other failures are retried until the deadline).
 * 3. Waits (polling every `pollIntervalMs`) until ListSearchAttributes lists them and a visibility query on
 *    each (`CountWorkflowExecutions` with `<name> IS NULL`) is accepted: a new attribute takes a moment to
 *    reach the frontend's caches, and until then a workflow start that sets it fails with INVALID_ARGUMENT
 *    ("Namespace ... has no mapping defined for search attribute ...").
 *
 * Where the OperatorService is refused (PERMISSION_DENIED or UNIMPLEMENTED, e.g. Temporal Cloud with a
 * namespace API key), the attributes are checked with the visibility query alone: present ones pass, and
 * missing ones give one {@link SearchAttributesNotRegisteredError}.
 * @returns the names that were missing and are now registered (empty when nothing was added).
 * @throws SearchAttributesNotRegisteredError when attributes are missing and cannot be added here, or when a
 *   name is registered with another type; Error when they are not usable within `timeoutMs`; gRPC errors
 *   (e.g. UNAVAILABLE, NOT_FOUND for an unknown namespace) as they come.
 */
export async function ensureSearchAttributes(
  connection: SearchAttributeConnection,
  namespace: string,
  opts: EnsureSearchAttributesOptions = {},
): Promise<string[]> {
  const wanted = opts.attributes ?? projectSearchAttributes();
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const pollIntervalMs = opts.pollIntervalMs ?? 500;
  const deadline = Date.now() + timeoutMs;
  if (wanted.length === 0) return [];

  let listed: Map<string, IndexedValueType>;
  try {
    listed = await listCustomSearchAttributes(connection, namespace);
  } catch (error) {
    if (!isRefused(error)) throw error;
    const missing = await unqueryableAttributes(connection, namespace, wanted);
    if (missing.length === 0) return [];
    throw new SearchAttributesNotRegisteredError(
      namespace,
      missing,
      `the OperatorService refused ListSearchAttributes: ${messageOf(error)}`,
    );
  }

  const conflicting = wanted.filter((a) => listed.has(a.name) && listed.get(a.name) !== INDEXED_VALUE_TYPES[a.type]);
  if (conflicting.length > 0) {
    throw new SearchAttributesNotRegisteredError(
      namespace,
      conflicting,
      `already registered with another type: ${conflicting
        .map((a) => `${a.name} is ${indexedValueTypeLabel(listed.get(a.name))}`)
        .join(', ')}; remove or rename them first`,
    );
  }
  const missing = wanted.filter((a) => !listed.has(a.name));
  if (missing.length === 0) return [];

  let lastError = '';
  let addAccepted = false;
  for (;;) {
    if (!addAccepted) {
      const toAdd = missing.filter((a) => !listed.has(a.name));
      try {
        await connection.operatorService.addSearchAttributes({
          namespace,
          searchAttributes: Object.fromEntries(toAdd.map((a) => [a.name, INDEXED_VALUE_TYPES[a.type]])),
        });
        addAccepted = true;
      } catch (error) {
        if (isRefused(error)) {
          throw new SearchAttributesNotRegisteredError(
            namespace,
            toAdd,
            `the OperatorService refused AddSearchAttributes: ${messageOf(error)}`,
          );
        }
        // ALREADY_EXISTS: another worker added them meanwhile. Anything else is retried on the next poll.
        if (grpcCode(error) === GRPC.ALREADY_EXISTS) addAccepted = true;
        else lastError = messageOf(error);
      }
    }
    listed = await listCustomSearchAttributes(connection, namespace);
    const unlisted = missing.filter((a) => !listed.has(a.name));
    if (unlisted.length === 0) {
      const unusable = await unqueryableAttributes(connection, namespace, missing);
      if (unusable.length === 0) return missing.map((a) => a.name);
      lastError = `not yet usable in visibility queries: ${unusable.map((a) => a.name).join(', ')}`;
    } else if (addAccepted) {
      lastError = `not yet listed: ${unlisted.map((a) => a.name).join(', ')}`;
    }
    if (Date.now() + pollIntervalMs > deadline) {
      throw new Error(
        `Search attributes ${describeSearchAttributes(missing)} of namespace ${namespace} were not usable ` +
          `within ${timeoutMs} ms (${lastError})`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
  }
}

/** `Keyword` for INDEXED_VALUE_TYPE_KEYWORD (2), or the number when unknown. */
function indexedValueTypeLabel(value: IndexedValueType | undefined): string {
  const type = (Object.keys(INDEXED_VALUE_TYPES) as SearchAttributeType[]).find(
    (t) => INDEXED_VALUE_TYPES[t] === value,
  );
  return type === undefined ? `type ${String(value)}` : SEARCH_ATTRIBUTE_TYPE_LABELS[type];
}

/** Custom search attributes of the namespace: name -> IndexedValueType. */
async function listCustomSearchAttributes(
  connection: SearchAttributeConnection,
  namespace: string,
): Promise<Map<string, IndexedValueType>> {
  const res = await connection.operatorService.listSearchAttributes({ namespace });
  return new Map(Object.entries(res.customAttributes ?? {}));
}

/**
 * The attributes a visibility query on the namespace does not accept yet (the server answers
 * INVALID_ARGUMENT for an unknown search attribute). Other errors are thrown.
 */
async function unqueryableAttributes(
  connection: SearchAttributeConnection,
  namespace: string,
  attributes: readonly SearchAttributeDefinition[],
): Promise<SearchAttributeDefinition[]> {
  const unknown: SearchAttributeDefinition[] = [];
  for (const attribute of attributes) {
    try {
      await connection.workflowService.countWorkflowExecutions({ namespace, query: `${attribute.name} IS NULL` });
    } catch (error) {
      if (grpcCode(error) !== GRPC.INVALID_ARGUMENT) throw error;
      unknown.push(attribute);
    }
  }
  return unknown;
}
