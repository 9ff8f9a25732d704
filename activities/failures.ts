/**
 * Turns errors into Temporal application failures with the error types of workflows/errors.ts, so the
 * retry profiles can tell permanent errors (non-retryable) from transient ones.
 * See https://docs.temporal.io/references/failures#application-failure
 */
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../workflows/errors.js';
import { ProviderError } from './provider-error.js';

/** A permanent "record not found" failure, e.g. `notFound('order', id)`. */
export function notFound(what: string, id: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`${what} ${id} not found`, ErrorType.NotFound);
}

/**
 * Maps a provider client error onto an application failure and throws it:
 * unavailable/conflict → retryable `ProviderUnavailableError`; unauthorized → non-retryable
 * `UnauthorizedError`; rejected → non-retryable `ProviderRejectedError`; details `{ status, mayHaveActed }`
 * (see provider-error.ts). Other errors are rethrown as they are (and retried by the profile).
 * @param provider name used in the message, e.g. `email provider`.
 * @throws always.
 */
export function rethrowProviderError(err: unknown, provider: string): never {
  if (err instanceof ProviderError) {
    const message = `${provider}: ${err.message}`;
    const details = { status: err.status, mayHaveActed: err.mayHaveActed };
    switch (err.kind) {
      case 'unauthorized':
        throw ApplicationFailure.nonRetryable(message, ErrorType.Unauthorized, details);
      case 'rejected':
        throw ApplicationFailure.nonRetryable(message, ErrorType.ProviderRejected, details);
      case 'unavailable':
      case 'conflict':
        throw ApplicationFailure.retryable(message, ErrorType.ProviderUnavailable, details);
    }
  }
  throw err;
}
