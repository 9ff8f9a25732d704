/**
 * Contract of the retention workflow: the Temporal Schedule that purges `Idempotency-Key` records past their
 * retention (DESIGN "Idempotency, layer by layer", 5). Sandbox-safe (no imports), so the worker, the API and tests
 * may import it as a value.
 *
 * The worker creates the Schedule {@link PURGE_SCHEDULE_ID} at start-up (idempotently; updated when its interval or
 * task queue changed: src/worker/retention-schedule.ts). Every interval it starts the workflow
 * {@link PURGE_WORKFLOW_TYPE} on the order task queue, with overlap policy SKIP (a run still going means the next
 * is skipped, never queued). The workflow runs one activity, `purgeExpiredIdempotencyRecords`.
 * See https://docs.temporal.io/schedule
 */

/** Id of the retention Schedule in the namespace. */
export const PURGE_SCHEDULE_ID = 'purge-idempotency-records';

/** Registered name of the workflow type (the exported function name in `workflows/index.ts`). */
export const PURGE_WORKFLOW_TYPE = 'purgeIdempotencyRecords';

/**
 * Workflow id prefix of the Schedule's runs; Temporal appends the scheduled time
 * (`purge-idempotency-records-2026-12-01T10:00:00Z`), so each run has its own id.
 */
export const PURGE_WORKFLOW_ID_PREFIX = 'purge-idempotency-records';

/** Workflow input: empty today (the activity uses its own clock); an object so fields can be added compatibly. */
export type PurgeIdempotencyRecordsInput = Record<string, never>;

/** Workflow result. */
export interface PurgeIdempotencyRecordsResult {
  /** Records deleted by this run. */
  deleted: number;
  /** The reference time of the purge (ISO 8601). */
  purgedBefore: string;
}

/** Input of purgeExpiredIdempotencyRecords. */
export interface PurgeExpiredIdempotencyRecordsInput {
  /** Reference time (ISO 8601); default: the activity's clock when it runs. */
  now?: string;
}

/** Result of purgeExpiredIdempotencyRecords. */
export interface PurgeExpiredIdempotencyRecordsResult {
  /** Records deleted by this attempt. */
  deleted: number;
  /** The reference time used (ISO 8601). */
  now: string;
}

/** The retention activity the workflow calls (activities/retention.activities.ts implements it). */
export interface RetentionActivities {
  /** Deletes the `Idempotency-Key` records past their retention; idempotent. */
  purgeExpiredIdempotencyRecords(
    input?: PurgeExpiredIdempotencyRecordsInput,
  ): Promise<PurgeExpiredIdempotencyRecordsResult>;
}
