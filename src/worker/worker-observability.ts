/**
 * The worker's metrics and activity log context, without touching activity code.
 *
 * Metrics go through the Temporal SDK's metric meter (`Runtime.instance().metricMeter`), so that the SDK's
 * Prometheus exporter serves them on `WORKER_METRICS_PORT` beside its own `temporal_*` runtime metrics: one
 * endpoint per worker. Definitions (names, help, labels, buckets): src/metrics/metric-definitions.ts.
 * - {@link activityObservability}: an activity interceptor (WorkerOptions `interceptors.activity`, see
 *   https://docs.temporal.io/develop/typescript/interceptors) that measures every attempt (duration by outcome,
 *   the attempt that succeeded, failures by error type and retryability) and adds `orderId` and `runId` to every
 *   log line of the activity (the SDK adds workflowId, workflowRunId, activityType, activityId, attempt...).
 * - {@link recordSideEffectClaims}: counts claim decisions through the observer hook of
 *   activities/side-effect-claims.ts.
 * - {@link recordEventWaits}: the time orders waited for an outside event, through the observer hook of
 *   activities/kit/events.ts.
 * - {@link workerMetricsOptions}: the SDK runtime's Prometheus exporter options, with this service's buckets.
 */
import type { Context as ActivityContext } from '@temporalio/activity';
import {
  ApplicationFailure,
  CancelledFailure,
  type MetricMeter,
  type MetricTags,
  TimeoutFailure,
} from '@temporalio/common';
import type { ActivityInterceptorsFactory, MetricsExporterConfig } from '@temporalio/worker';
import { observeSideEffectClaims, type ClaimObservation } from '../../activities/kit/claims.js';
import { observeEventWaits } from '../../activities/kit/events.js';
import { STEPS } from '../../activities/index.js';
import { ErrorType, PERMANENT_ERROR_TYPES } from '../../workflows/errors.js';

/** The activities of the registry (steps and compensations) and the kit's own, for the zero series. */
const KNOWN_ACTIVITIES: readonly string[] = [
  ...STEPS.flatMap((s) => [s.name, ...(s.compensation ? [s.compensation.name] : [])]),
  'haltOrder',
  'setOrderStatus',
  'planOrder',
  'purgeExpiredIdempotencyRecords',
];

/** The claim kinds of the registry: each provider step and provider compensation. */
const KNOWN_CLAIM_KINDS: readonly string[] = STEPS.flatMap((s) => [
  ...(s.kind === 'provider' ? [s.name] : []),
  ...(s.compensation?.kind === 'provider' ? [s.compensation.name] : []),
]);

/** The error types an activity is known to fail with, and whether Temporal retries them. */
const KNOWN_ERROR_TYPES: ReadonlyArray<[string, boolean]> = [
  ...PERMANENT_ERROR_TYPES.map((t): [string, boolean] => [t, false]),
  [ErrorType.ProviderUnavailable, true],
  [ErrorType.ClaimInProgress, true],
  ['TimeoutFailure', true],
];
import { ActivityOutcome, ClaimHow, METRICS } from '../metrics/metric-definitions.js';

/**
 * Options of the SDK runtime's metrics exporter (`Runtime.install({ telemetryOptions: { metrics } })`): Prometheus
 * on `host:port` at `/metrics`, SDK metrics prefixed `temporal_`, this service's histograms with their own buckets.
 * @param port TCP port (`WORKER_METRICS_PORT`).
 * @param host interface to bind (default `0.0.0.0`, like the API).
 */
export function workerMetricsOptions(port: number, host = '0.0.0.0'): MetricsExporterConfig {
  return {
    metricPrefix: 'temporal_',
    prometheus: {
      bindAddress: `${host}:${port}`,
      histogramBucketOverrides: {
        [METRICS.activityDuration.name]: [...METRICS.activityDuration.buckets],
        [METRICS.activityAttempts.name]: [...METRICS.activityAttempts.buckets],
        [METRICS.eventWait.name]: [...METRICS.eventWait.buckets],
      },
    },
  };
}

/** The order an activity works on: `orderId` of its single input object (every activity of this service). */
function orderIdOf(args: unknown[]): string | undefined {
  const first = args[0] as { orderId?: unknown } | undefined;
  return typeof first?.orderId === 'string' ? first.orderId : undefined;
}

/** How an activity attempt failed, for the `outcome`, `error_type` and `retryable` labels. */
export interface FailureClass {
  outcome: ActivityOutcome;
  /** ApplicationFailure type, else the error's name (e.g. `CancelledFailure`, `TypeError`). */
  errorType: string;
  /** Whether Temporal schedules another attempt: not non-retryable, not a permanent type, attempts left. */
  retryable: boolean;
}

/**
 * Classifies a failed attempt. `retryable` follows the rules Temporal applies: an ApplicationFailure marked
 * non-retryable, an error type in the retry policy's `nonRetryableErrorTypes`, or the last allowed attempt ends
 * the retries; a cancellation is never retried.
 */
export function classifyFailure(
  err: unknown,
  ctx: Pick<ActivityContext, 'info' | 'cancellationDetails'>,
): FailureClass {
  const { info } = ctx;
  const details = ctx.cancellationDetails;
  const cancelled = err instanceof CancelledFailure || (err instanceof Error && err.name === 'AbortError');
  if (cancelled || details?.timedOut) {
    const timedOut = details?.timedOut === true;
    return {
      outcome: timedOut ? ActivityOutcome.TimedOut : ActivityOutcome.Cancelled,
      errorType: timedOut ? 'TimeoutFailure' : 'CancelledFailure',
      retryable: timedOut && attemptsLeft(info),
    };
  }
  if (err instanceof TimeoutFailure) {
    return { outcome: ActivityOutcome.TimedOut, errorType: 'TimeoutFailure', retryable: attemptsLeft(info) };
  }
  const errorType =
    err instanceof ApplicationFailure
      ? (err.type ?? 'ApplicationFailure')
      : err instanceof Error
        ? err.name || 'Error'
        : typeof err;
  const nonRetryable =
    (err instanceof ApplicationFailure && err.nonRetryable === true) ||
    (info.retryPolicy?.nonRetryableErrorTypes ?? []).includes(errorType);
  return { outcome: ActivityOutcome.Failure, errorType, retryable: !nonRetryable && attemptsLeft(info) };
}

function attemptsLeft(info: ActivityContext['info']): boolean {
  const max = info.retryPolicy?.maximumAttempts ?? 0;
  return max <= 0 || info.attempt < max;
}

/**
 * The activity interceptor factory. Per attempt it records:
 * - `order_fulfilment_activity_duration_seconds{activity, outcome}`: `timed_out` also when the attempt returned
 *   after its start-to-close timeout had passed (Temporal had already given up on it);
 * - `order_fulfilment_activity_attempts{activity}`: the attempt number, on success;
 * - `order_fulfilment_activity_failures_total{activity, error_type, retryable}`: on failure or timeout (not on a
 *   cancellation);
 * - `order_fulfilment_activity_executions_total{activity, outcome}`: every attempt;
 * every known activity (`known`, default the registry's and the kit's) with every outcome and known error type is
 * present from the start, at 0;
 * and logs `activity completed` (info, with `durationMs`) on success; the SDK itself logs `Activity failed`
 * (warn) on failure. Every activity log line gets `orderId` (from the input) and `runId`, and loses the SDK's
 * `taskToken` (an opaque blob).
 * @param meter the SDK runtime's meter (`Runtime.instance().metricMeter`), or a fake in tests.
 */
export function activityObservability(
  meter: MetricMeter,
  known: readonly string[] = KNOWN_ACTIVITIES,
): ActivityInterceptorsFactory {
  const duration = meter.createHistogram(METRICS.activityDuration.name, 'float', 's', METRICS.activityDuration.help);
  const attempts = meter.createHistogram(METRICS.activityAttempts.name, 'int', '', METRICS.activityAttempts.help);
  const failures = meter.createCounter(METRICS.activityFailures.name, '', METRICS.activityFailures.help);
  const executions = meter.createCounter(METRICS.activityRuns.name, '', METRICS.activityRuns.help);
  // Every known activity, outcome and error type at 0 from the start: rate() and absent() see the series before the
  // first failure.
  for (const activity of known) {
    for (const outcome of Object.values(ActivityOutcome)) executions.add(0, { activity, outcome });
    for (const [errorType, retryable] of KNOWN_ERROR_TYPES) {
      failures.add(0, { activity, error_type: errorType, retryable: String(retryable) });
    }
  }

  return (ctx) => {
    let orderId: string | undefined;
    return {
      inbound: {
        async execute(input, next) {
          orderId = orderIdOf(input.args);
          const activity = ctx.info.activityType;
          const started = performance.now();
          const seconds = () => (performance.now() - started) / 1000;
          let result: unknown;
          try {
            result = await next(input);
          } catch (err) {
            const failure = classifyFailure(err, ctx);
            duration.record(seconds(), { activity, outcome: failure.outcome });
            executions.add(1, { activity, outcome: failure.outcome });
            if (failure.outcome !== ActivityOutcome.Cancelled) {
              failures.add(1, { activity, error_type: failure.errorType, retryable: String(failure.retryable) });
            }
            throw err;
          }
          const elapsed = seconds();
          const limitMs = ctx.info.startToCloseTimeoutMs;
          const late = limitMs > 0 && elapsed * 1000 > limitMs;
          const outcome = late ? ActivityOutcome.TimedOut : ActivityOutcome.Success;
          duration.record(elapsed, { activity, outcome });
          executions.add(1, { activity, outcome });
          if (late) {
            failures.add(1, { activity, error_type: 'TimeoutFailure', retryable: String(attemptsLeft(ctx.info)) });
          } else {
            attempts.record(ctx.info.attempt, { activity });
          }
          ctx.log.info(late ? 'activity returned after its timeout' : 'activity completed', {
            durationMs: Math.round(elapsed * 1000),
          });
          return result;
        },
      },
      outbound: {
        getLogAttributes(attributes, next) {
          // The task token is an opaque blob of ~200 characters that says nothing a reader needs.
          const { taskToken: _taskToken, ...rest } = attributes;
          return next({
            ...rest,
            ...(orderId ? { orderId } : {}),
            runId: ctx.info.workflowExecution?.runId,
          });
        },
      },
    };
  };
}

/** The `how` label of a claim decision. */
export function claimHow(outcome: ClaimObservation['outcome']): string {
  switch (outcome.state) {
    case 'done':
      return ClaimHow.Done;
    case 'cancelled':
      return ClaimHow.Cancelled;
    case 'in-progress':
      return ClaimHow.InProgress;
    case 'owned':
      return {
        new: ClaimHow.New,
        'after-failure': ClaimHow.AfterFailure,
        'retry-takeover': ClaimHow.RetryTakeover,
        'lease-expired': ClaimHow.LeaseReclaimed,
      }[outcome.how];
  }
}

/**
 * Counts every side-effect claim decision of this process in `order_fulfilment_side_effect_claims_total{kind, how}`
 * (installs the observer of activities/kit/claims.ts); every known kind (each provider step and provider
 * compensation of the registry) and decision is present from the start, at 0.
 * @returns a function that removes the observer again.
 */
export function recordSideEffectClaims(meter: MetricMeter, kinds: readonly string[] = KNOWN_CLAIM_KINDS): () => void {
  const claims = meter.createCounter(METRICS.sideEffectClaims.name, '', METRICS.sideEffectClaims.help);
  for (const kind of kinds) for (const how of Object.values(ClaimHow)) claims.add(0, { kind, how });
  observeSideEffectClaims(({ kind, outcome }) => {
    const tags: MetricTags = { kind, how: claimHow(outcome) };
    claims.add(1, tags);
  });
  return () => observeSideEffectClaims(undefined);
}

/**
 * Records how long orders waited for an outside event (`order_fulfilment_event_wait_seconds{event}`, once per order
 * and event; installs the observer of activities/kit/events.ts).
 * @returns a function that removes the observer again.
 */
export function recordEventWaits(meter: MetricMeter): () => void {
  const waits = meter.createHistogram(METRICS.eventWait.name, 'float', 's', METRICS.eventWait.help);
  observeEventWaits(({ event, seconds }) => waits.record(seconds, { event }));
  return () => observeEventWaits(undefined);
}
