/**
 * Retention housekeeping, run by the `purgeIdempotencyRecords` workflow that the Temporal Schedule
 * `purge-idempotency-records` starts (see workflows/idempotency-retention.contract.ts).
 */
import { log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../workflows/errors.js';
import type {
  PurgeExpiredIdempotencyRecordsInput,
  PurgeExpiredIdempotencyRecordsResult,
  RetentionActivities,
} from '../workflows/idempotency-retention.contract.js';
import type { IdempotencyRecords } from './ports.js';

/** Builds the retention activity over the idempotency store's port. */
export function createRetentionActivities(records: IdempotencyRecords): RetentionActivities {
  return {
    /**
     * Deletes `Idempotency-Key` records past their retention through {@link IdempotencyRecords.purgeExpired}.
     * Idempotent: a retry or an overlapping run deletes what is left (nothing, if the first one finished).
     * @throws ApplicationFailure `ValidationError` (non-retryable) for an invalid `now`; whatever the store throws
     *   otherwise (retried by the `housekeeping` profile).
     */
    async purgeExpiredIdempotencyRecords(
      input: PurgeExpiredIdempotencyRecordsInput = {},
    ): Promise<PurgeExpiredIdempotencyRecordsResult> {
      const now = input.now ? new Date(input.now) : new Date();
      if (Number.isNaN(now.getTime())) {
        throw ApplicationFailure.nonRetryable(`now is not an ISO 8601 time: ${input.now}`, ErrorType.Validation);
      }
      const deleted = await records.purgeExpired(now);
      if (deleted > 0) log.info('purged expired idempotency records', { deleted });
      return { deleted, now: now.toISOString() };
    },
  };
}
