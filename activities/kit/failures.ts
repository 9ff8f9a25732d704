/**
 * Turns errors into Temporal application failures with the error types of workflows/errors.ts, so the retry
 * profiles can tell permanent errors (non-retryable) from transient ones, and spreads the retries of transient
 * provider failures with jitter.
 * See https://docs.temporal.io/references/failures#application-failure
 */
import { ApplicationFailure, type RetryPolicy } from '@temporalio/common';
import { msOptionalToNumber } from '@temporalio/common/lib/time.js';
import { ErrorType } from '../../workflows/errors.js';
import { ProviderError } from '../../providers/kit/errors.js';

/** A permanent "record not found" failure, e.g. `notFound('order', id)`. */
export function notFound(what: string, id: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`${what} ${id} not found`, ErrorType.NotFound);
}

/**
 * The delay before the next attempt, in ms, with "equal jitter": the retry policy's exponential backoff for this
 * attempt (`initialInterval × backoffCoefficient^(attempt-1)`, capped at `maximumInterval`), of which a random half
 * is waited on top of the other half. A hundred orders that fail at the same moment then retry spread over half
 * the interval instead of in lock-step against a provider that is just recovering. Never longer than the policy's
 * own delay, so the profile's schedule-to-close budget still holds.
 * Source: AWS Architecture Blog, "Exponential Backoff And Jitter" (2015).
 * @param attempt the attempt that just failed (1-based).
 * @param random a number in [0, 1) (default `Math.random()`).
 */
export function jitteredDelayMs(attempt: number, policy: RetryPolicy | undefined, random = Math.random()): number {
  const initial = msOptionalToNumber(policy?.initialInterval) ?? 1000;
  const coefficient = policy?.backoffCoefficient ?? 2;
  const maximum = msOptionalToNumber(policy?.maximumInterval) ?? initial * 100;
  const backoff = Math.min(maximum, initial * coefficient ** Math.max(0, attempt - 1));
  return Math.round(backoff / 2 + (backoff / 2) * random);
}

/** Where a retryable failure's next attempt should wait: the activity's attempt and retry policy. */
export interface RetryTiming {
  attempt: number;
  retryPolicy?: RetryPolicy;
}

/**
 * Maps a provider client error onto an application failure and throws it:
 * unavailable/conflict → retryable `ProviderUnavailableError` (with a jittered `nextRetryDelay` when `timing` is
 * given); unauthorized → non-retryable `UnauthorizedError`; rejected → non-retryable `ProviderRejectedError`;
 * details `{ status, mayHaveActed }` (see providers/kit/errors.ts). Other errors are rethrown as they are (and
 * retried by the profile).
 * @param provider name used in the message, e.g. `email provider`.
 * @throws always.
 */
export function rethrowProviderError(err: unknown, provider: string, timing?: RetryTiming): never {
  if (err instanceof ProviderError) {
    const message = `${provider}: ${err.message}`;
    const details = [{ status: err.status, mayHaveActed: err.mayHaveActed }];
    switch (err.kind) {
      case 'unauthorized':
        throw ApplicationFailure.create({ message, type: ErrorType.Unauthorized, nonRetryable: true, details });
      case 'rejected':
        throw ApplicationFailure.create({ message, type: ErrorType.ProviderRejected, nonRetryable: true, details });
      case 'unavailable':
      case 'conflict':
        throw ApplicationFailure.create({
          message,
          type: ErrorType.ProviderUnavailable,
          nonRetryable: false,
          details,
          ...(timing ? { nextRetryDelay: jitteredDelayMs(timing.attempt, timing.retryPolicy) } : {}),
        });
    }
  }
  throw err;
}
