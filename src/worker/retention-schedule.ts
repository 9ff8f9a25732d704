/**
 * The retention Schedule (DESIGN "Idempotency, layer by layer", 5): every `IDEMPOTENCY_PURGE_INTERVAL_MS` Temporal
 * starts the `purgeIdempotencyRecords` workflow on the order task queue, which deletes the `Idempotency-Key` records
 * past their retention. It replaces the purge loop the API ran inside its reconciler: Temporal keeps the timing
 * (one run per interval for the whole deployment however many workers and APIs run, overlap policy SKIP, runs
 * visible in the UI), and the purge itself stays the idempotency store's one statement.
 *
 * Created idempotently by every worker at start ({@link ensureRetentionSchedule}): "already exists" is fine, and an
 * existing Schedule whose interval, task queue or workflow type differ from the configuration is updated to match.
 * See https://docs.temporal.io/develop/typescript/schedules
 */
import {
  type Client,
  ScheduleAlreadyRunning,
  type ScheduleDescription,
  ScheduleOverlapPolicy,
  type ScheduleOptionsStartWorkflowAction,
} from '@temporalio/client';
import {
  PURGE_SCHEDULE_ID,
  PURGE_WORKFLOW_ID_PREFIX,
  PURGE_WORKFLOW_TYPE,
  type PurgeIdempotencyRecordsInput,
  type PurgeIdempotencyRecordsResult,
} from '../../workflows/idempotency-retention.contract.js';

/** Signature of the workflow, for typing the Schedule's action by name (the function itself is never imported). */
type PurgeIdempotencyRecordsWorkflow = (input: PurgeIdempotencyRecordsInput) => Promise<PurgeIdempotencyRecordsResult>;

/** Options of {@link ensureRetentionSchedule}. */
export interface RetentionScheduleOptions {
  /** Task queue of the worker that runs `purgeIdempotencyRecords` (the order task queue). */
  taskQueue: string;
  /** Interval between runs, ms (Temporal rounds it to whole seconds). */
  intervalMs: number;
  /** Schedule id; default {@link PURGE_SCHEDULE_ID} (tests use their own). */
  scheduleId?: string;
}

/** What {@link ensureRetentionSchedule} did. */
export type RetentionScheduleOutcome = 'created' | 'updated' | 'unchanged';

/** A run may take at most this long, ms; a stuck run never blocks the Schedule for longer (overlap SKIP). */
const RUN_TIMEOUT_MS = 10 * 60_000;

function action(opts: RetentionScheduleOptions): ScheduleOptionsStartWorkflowAction<PurgeIdempotencyRecordsWorkflow> {
  return {
    type: 'startWorkflow',
    workflowType: PURGE_WORKFLOW_TYPE,
    workflowId: opts.scheduleId ?? PURGE_WORKFLOW_ID_PREFIX,
    taskQueue: opts.taskQueue,
    args: [{}],
    workflowExecutionTimeout: RUN_TIMEOUT_MS,
  };
}

/** True when the stored Schedule already runs `opts`' workflow, on its task queue, at its interval. */
function matches(description: ScheduleDescription, opts: RetentionScheduleOptions): boolean {
  const intervals = description.spec.intervals ?? [];
  const wantedEveryMs = Math.round(opts.intervalMs / 1000) * 1000;
  return (
    intervals.length === 1 &&
    intervals[0]!.every === wantedEveryMs &&
    (description.spec.calendars ?? []).length === 0 &&
    description.action.type === 'startWorkflow' &&
    description.action.workflowType === PURGE_WORKFLOW_TYPE &&
    description.action.taskQueue === opts.taskQueue &&
    description.policies.overlap === ScheduleOverlapPolicy.SKIP
  );
}

/**
 * Creates the retention Schedule, or brings an existing one in line with `opts`. Safe to call from every worker at
 * every start, concurrently.
 * @returns `created`, `updated` (it existed with another interval, task queue or workflow), or `unchanged`.
 * @throws the client's error when Temporal refuses or cannot be reached.
 */
export async function ensureRetentionSchedule(
  client: Client,
  opts: RetentionScheduleOptions,
): Promise<RetentionScheduleOutcome> {
  const scheduleId = opts.scheduleId ?? PURGE_SCHEDULE_ID;
  try {
    await client.schedule.create({
      scheduleId,
      spec: { intervals: [{ every: opts.intervalMs }] },
      action: action(opts),
      policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: '1 minute' },
      memo: { purpose: 'Deletes Idempotency-Key records past their retention (IdempotencyService.purgeExpired)' },
    });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  const handle = client.schedule.getHandle(scheduleId);
  if (matches(await handle.describe(), opts)) return 'unchanged';
  await handle.update<PurgeIdempotencyRecordsWorkflow>((previous) => ({
    ...previous,
    spec: { intervals: [{ every: opts.intervalMs }] },
    action: action(opts),
    policies: { ...previous.policies, overlap: ScheduleOverlapPolicy.SKIP },
  }));
  return 'updated';
}
