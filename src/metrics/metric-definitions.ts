/**
 * The service's Prometheus metrics: names, types, labels, help texts and histogram buckets, in one place.
 *
 * Plain data (no prom-client, no Temporal SDK), so three readers share it: the API registers its metrics with
 * prom-client (src/metrics/api-metrics.ts), the worker creates its own through the Temporal SDK's metric meter so
 * that they appear on the SDK's Prometheus endpoint beside the `temporal_*` runtime metrics
 * (src/worker/worker-observability.ts), and `npm run docs:tables` renders the README's metric table from it.
 *
 * Naming follows https://prometheus.io/docs/practices/naming/: one `order_fulfilment_` prefix, base units in the
 * name (`_seconds`), `_total` on counters, snake_case labels with a small, closed set of values.
 */

/** Prefix of every metric of this service (the SDK's own metrics are `temporal_*`). */
export const METRIC_PREFIX = 'order_fulfilment_';

/** Which process serves a metric: the API's `GET /metrics`, or the worker's endpoint on `WORKER_METRICS_PORT`. */
export type MetricProcess = 'api' | 'worker';

/** One metric family. */
export interface MetricDefinition {
  /** Full Prometheus name, e.g. `order_fulfilment_orders_accepted_total`. */
  name: string;
  type: 'counter' | 'gauge' | 'histogram';
  /** Label names, in the order they are documented. */
  labels: readonly string[];
  /** Prometheus `# HELP` text: what one unit of it means. */
  help: string;
  process: MetricProcess;
  /** Histogram bucket upper bounds (in the metric's unit), ascending. */
  buckets?: readonly number[];
}

/** Client label and log value of requests without a valid API key (public routes, 401s). */
export const ANONYMOUS_CLIENT = 'anonymous';

/** Values of the `outcome` label of {@link METRICS.idempotencyOutcomes}: what an `Idempotency-Key` led to. */
export const IdempotencyOutcome = {
  /** A new key: the request was processed and its response stored. */
  New: 'new',
  /** A known key with the same body: the stored response was replayed (`Idempotent-Replayed: true`). */
  Replayed: 'replayed',
  /** A known key whose first request was still in flight: 409 `idempotency-key-in-use`. */
  InUse: 'in_use',
  /** A known key with another body: 422 `idempotency-key-reused`. */
  Reused: 'reused',
} as const;
export type IdempotencyOutcome = (typeof IdempotencyOutcome)[keyof typeof IdempotencyOutcome];

/** Values of the `outcome` label of the activity duration histogram. */
export const ActivityOutcome = {
  Success: 'success',
  /** The activity threw (retryable or not; see the failures counter for the type). */
  Failure: 'failure',
  /** Cancelled by the workflow (or the worker shutting down) while it ran. */
  Cancelled: 'cancelled',
  /**
   * The attempt ran past its start-to-close or heartbeat timeout: Temporal had already timed it out (and
   * scheduled the next attempt) when it ended here, whatever it returned.
   */
  TimedOut: 'timed_out',
} as const;
export type ActivityOutcome = (typeof ActivityOutcome)[keyof typeof ActivityOutcome];

/** Values of the `how` label of the side-effect claim counter (activities/side-effect-claims.ts rules 1-7). */
export const ClaimHow = {
  /** No claim existed: this attempt inserted it (rule 1). */
  New: 'new',
  /** The effect was already performed: nothing sent (rule 2). */
  Done: 'done',
  /** The claim is a tombstone (order halted): nothing sent, ever (rule 3). */
  Cancelled: 'cancelled',
  /** The last call definitely failed: taken again (rule 4). */
  AfterFailure: 'after_failure',
  /** A later attempt of the same activity took over its own earlier claim and re-sent with the same key (rule 5). */
  RetryTakeover: 'retry_takeover',
  /** Another execution's claim outlived its lease (its worker died) and was reclaimed (rule 6). */
  LeaseReclaimed: 'lease_reclaimed',
  /** Another execution holds a live claim: `ClaimInProgressError`, retried later (rule 7). */
  InProgress: 'in_progress',
} as const;
export type ClaimHow = (typeof ClaimHow)[keyof typeof ClaimHow];

/** Bounds of activity durations, seconds: from a fast database step to the 30 s provider start-to-close. */
export const ACTIVITY_DURATION_BUCKETS_SECONDS = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
] as const;

/** Bounds of attempt numbers: the retry profiles allow 5, 10, 15 and 60 attempts. */
export const ACTIVITY_ATTEMPT_BUCKETS = [1, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 60] as const;

/**
 * Bounds of the time an order waited for an outside event (the warehouse's packed report), seconds: from the
 * simulator's few seconds to past the default 4 h bound (WAREHOUSE_PACK_TIMEOUT).
 */
export const EVENT_WAIT_BUCKETS_SECONDS = [5, 15, 60, 300, 900, 1800, 3600, 7200, 14400, 28800] as const;

/** Bounds of HTTP request durations, seconds: from a cached read to the 30 s cancel wait. */
export const HTTP_DURATION_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30] as const;

/** The `route` label of a request no API route matched (404s) and of files served outside the API (page, docs). */
export const RouteLabel = {
  /** No route and not a file: the API's 404. */
  Unmatched: 'unmatched',
  /** The web page's files and the OpenAPI UI (served by static-file middleware, not a route). */
  Static: 'static',
} as const;

/** Every metric family of the service, by a short key. */
export const METRICS = {
  httpRequests: {
    name: `${METRIC_PREFIX}http_requests_total`,
    type: 'counter',
    labels: ['method', 'route', 'status'],
    help: 'HTTP requests answered by the API, by method, route template (e.g. /orders/:id; unmatched or static otherwise, never a raw path) and status code.',
    process: 'api',
  },
  httpRequestDuration: {
    name: `${METRIC_PREFIX}http_request_duration_seconds`,
    type: 'histogram',
    labels: ['method', 'route', 'status'],
    help: 'Time from the request to the end of its answer, seconds, by method, route template and status code.',
    process: 'api',
    buckets: HTTP_DURATION_BUCKETS_SECONDS,
  },
  ordersAccepted: {
    name: `${METRIC_PREFIX}orders_accepted_total`,
    type: 'counter',
    labels: ['client'],
    help: "Orders accepted by POST /orders (202, not an idempotent replay), by API client (the id of the key's client).",
    process: 'api',
  },
  orders: {
    name: `${METRIC_PREFIX}orders`,
    type: 'gauge',
    labels: ['status'],
    help: 'Orders in the database by current status (read from PostgreSQL at scrape time; every status is present, 0 when none).',
    process: 'api',
  },
  oldestOpenOrderAge: {
    name: `${METRIC_PREFIX}oldest_open_order_age_seconds`,
    type: 'gauge',
    labels: ['status'],
    help: 'Age (now - created_at) of the oldest order in each non-terminal status, seconds; 0 when there is none.',
    process: 'api',
  },
  longestInStatus: {
    name: `${METRIC_PREFIX}longest_in_status_seconds`,
    type: 'gauge',
    labels: ['status'],
    help: 'How long the order that has sat longest in each non-terminal status has been in it (now - its last status write), seconds; 0 when there is none. The "order stuck in a status" alert reads it.',
    process: 'api',
  },
  compensationFailedOrders: {
    name: `${METRIC_PREFIX}compensation_failed_orders`,
    type: 'gauge',
    labels: ['compensation'],
    help: 'Orders halted whose compensation failed for good and that wait for an operator (attention_required, compensation_failed: stock may stay reserved, an invoice issued), by the compensation that failed (read from PostgreSQL at scrape time; every compensation is present, 0 when none). The "compensation failed" alert reads it.',
    process: 'api',
  },
  payments: {
    name: `${METRIC_PREFIX}payments`,
    type: 'gauge',
    labels: ['outcome', 'decline_code'],
    help: 'Card payments by outcome (authorized, captured, voided, declined) and decline code (none unless declined), read from PostgreSQL at scrape time; every outcome is present, 0 when none.',
    process: 'api',
  },
  paymentCaptureDeadline: {
    name: `${METRIC_PREFIX}payment_authorization_seconds_to_deadline`,
    type: 'gauge',
    labels: [],
    help: 'Seconds left before the soonest capture deadline among the held (authorized, not captured) payment authorizations, read from PostgreSQL at scrape time; negative once passed; no sample when none is held. The "authorization near its capture deadline" alert reads it.',
    process: 'api',
  },
  returns: {
    name: `${METRIC_PREFIX}returns`,
    type: 'gauge',
    labels: ['status'],
    help: 'Returns by status (requested, label_created, received, refunded, completed, withdrawn, expired, attention_required), read from PostgreSQL at scrape time; every status is present, 0 when none.',
    process: 'api',
  },
  longestWaitingReturn: {
    name: `${METRIC_PREFIX}longest_waiting_return_seconds`,
    type: 'gauge',
    labels: ['status'],
    help: 'Seconds the return longest in an open status (requested, label_created, received, refunded, attention_required) has been in it, read from PostgreSQL at scrape time; 0 when none. The "returns waiting too long" alerts read it.',
    process: 'api',
  },
  idempotencyOutcomes: {
    name: `${METRIC_PREFIX}idempotency_outcomes_total`,
    type: 'counter',
    labels: ['outcome'],
    help: 'POST /orders requests with an Idempotency-Key by outcome: new, replayed, in_use (409), reused (422).',
    process: 'api',
  },
  activityDuration: {
    name: `${METRIC_PREFIX}activity_duration_seconds`,
    type: 'histogram',
    labels: ['activity', 'outcome'],
    help: 'Duration of one activity attempt on this worker, seconds, by activity type and outcome (success, failure, cancelled, timed_out).',
    process: 'worker',
    buckets: ACTIVITY_DURATION_BUCKETS_SECONDS,
  },
  activityAttempts: {
    name: `${METRIC_PREFIX}activity_attempts`,
    type: 'histogram',
    labels: ['activity'],
    help: 'The attempt number on which an activity succeeded (1 = first try), by activity type.',
    process: 'worker',
    buckets: ACTIVITY_ATTEMPT_BUCKETS,
  },
  activityFailures: {
    name: `${METRIC_PREFIX}activity_failures_total`,
    type: 'counter',
    labels: ['activity', 'error_type', 'retryable'],
    help: 'Failed activity attempts by activity type, error type (ApplicationFailure type, or the error name) and whether Temporal retries it (true/false). Every activity and known error type is present from the start, at 0.',
    process: 'worker',
  },
  activityRuns: {
    name: `${METRIC_PREFIX}activity_executions_total`,
    type: 'counter',
    labels: ['activity', 'outcome'],
    help: 'Activity attempts on this worker by activity type and outcome (success, failure, cancelled, timed_out); every activity and outcome is present from the start, at 0.',
    process: 'worker',
  },
  sideEffectClaims: {
    name: `${METRIC_PREFIX}side_effect_claims_total`,
    type: 'counter',
    labels: ['kind', 'how'],
    help: 'Side-effect claim decisions (claim first, act second) by effect kind and how the claim was taken: new, done, cancelled, after_failure, retry_takeover, lease_reclaimed, in_progress.',
    process: 'worker',
  },
  eventWait: {
    name: `${METRIC_PREFIX}event_wait_seconds`,
    type: 'histogram',
    labels: ['event'],
    help: 'How long an order waited for an outside event that ended its wait (e.g. packed: from the last status write before the wait, normally the pick request, to the report), seconds, by event; observed once per order and event, when the report is recorded.',
    process: 'worker',
    buckets: EVENT_WAIT_BUCKETS_SECONDS,
  },
} as const satisfies Record<string, MetricDefinition>;
