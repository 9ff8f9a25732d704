/**
 * `purgeIdempotencyRecords`: the workflow the retention Schedule starts (see
 * idempotency-retention.contract.ts). One activity call, through the `housekeeping` retry profile; the purge is
 * idempotent, so a failed run changes nothing the next run does not redo.
 */
import { proxyActivities } from '@temporalio/workflow';
import { housekeeping } from './activity-options.js';
import type {
  PurgeIdempotencyRecordsInput,
  PurgeIdempotencyRecordsResult,
  RetentionActivities,
} from './idempotency-retention.contract.js';

const retention = proxyActivities<RetentionActivities>(housekeeping);

/** Deletes the `Idempotency-Key` records past their retention. */
export async function purgeIdempotencyRecords(
  _input: PurgeIdempotencyRecordsInput = {},
): Promise<PurgeIdempotencyRecordsResult> {
  const { deleted, now } = await retention.purgeExpiredIdempotencyRecords({});
  return { deleted, purgedBefore: now };
}
