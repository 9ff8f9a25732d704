/**
 * Turns errors into Temporal application failures with the error types of workflows/errors.ts, so the retry
 * profiles can tell permanent errors (non-retryable) from transient ones, and spreads the retries of transient
 * provider failures with jitter.
 * See https://docs.temporal.io/references/failures#application-failure
 */
import { ApplicationFailure, CancelledFailure, type RetryPolicy } from '@temporalio/common';
import { msOptionalToNumber } from '@temporalio/common/lib/time.js';
import { ErrorType } from '../../workflows/errors.js';
import { ProviderError } from '../../providers/kit/errors.js';
import type { BusinessRefusal } from './define.js';

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
 * Whether a refusal is about the idempotency key itself rather than the request: the IETF draft's 422 for a key
 * reused with another request, Stripe's `idempotency_error`, a missing key. Such a refusal proves the provider holds
 * (or held) a request under the key, so it never settles a doubt. Read from the RFC 9457 problem `type` when the
 * client error carries one (`problemType`), else from the error's message, which carries the problem's detail or
 * title: any mention of idempotency counts (a false positive only keeps a doubt for a person to settle).
 */
export function isKeyReuseRefusal(err: ProviderError): boolean {
  const type = (err as { problemType?: unknown }).problemType;
  return /idempoten/i.test(typeof type === 'string' ? type : err.message);
}

/**
 * Whether a provider's definite refusal settles the doubt an earlier call under the same key left (a `sending` claim):
 * a compliant provider replays its first answer to a same-key retry with the identical request when the first request
 * was performed (draft-ietf-httpapi-idempotency-key-header §2.6), so a refusal of that retry means the first one was
 * not performed. Holds only when
 * - the refusal is about the request (`rejected`: a 4xx other than 401/403/408/409/425/429): a 401 or a 503 says
 *   nothing about an earlier request;
 * - the identical body was sent under the key from the first call on (`frozenBefore`: the claim carried its frozen
 *   body before this call; a claim taken before bodies were frozen cannot say what its first call sent);
 * - it is not about the key itself ({@link isKeyReuseRefusal}).
 */
export function refusalSettlesDoubt(err: ProviderError, frozenBefore: boolean): boolean {
  return err.kind === 'rejected' && !err.mayHaveActed && frozenBefore && !isKeyReuseRefusal(err);
}

/**
 * `err` with `mayHaveActed` in its details set to `doubt` (the first details object keeps its other fields), so the
 * workflow reads from any failure whether the effect may have happened. An error that is not an ApplicationFailure
 * becomes a retryable one of the same type name (its error name), with the original as its cause; a cancellation is
 * returned as it is. With `doubt` false an error is returned unchanged.
 */
export function withDoubt(err: unknown, doubt: boolean): unknown {
  if (!doubt || err instanceof CancelledFailure) return err;
  if (err instanceof ApplicationFailure) {
    const first = (err.details?.[0] ?? {}) as Record<string, unknown>;
    if (first.mayHaveActed === true) return err;
    return ApplicationFailure.create({
      message: err.message,
      type: err.type ?? 'Error',
      nonRetryable: err.nonRetryable ?? false,
      details: [{ ...first, mayHaveActed: true }, ...(err.details?.slice(1) ?? [])],
      ...(err.nextRetryDelay != null ? { nextRetryDelay: err.nextRetryDelay } : {}),
      ...(err.cause ? { cause: err.cause } : {}),
    });
  }
  const error = err instanceof Error ? err : new Error(String(err));
  return ApplicationFailure.create({
    message: error.message,
    type: error.name,
    nonRetryable: false,
    details: [{ mayHaveActed: true }],
    cause: error,
  });
}

/**
 * Maps a provider client error onto an application failure and throws it:
 * unavailable/conflict → retryable `ProviderUnavailableError` (with a jittered `nextRetryDelay` when `timing` is
 * given); unauthorized → non-retryable `UnauthorizedError`; rejected → non-retryable `ProviderRejectedError`;
 * details `{ status, mayHaveActed }` (see providers/kit/errors.ts). Other errors are rethrown as they are (and
 * retried by the profile), through {@link withDoubt} when `mayHaveActed` is given.
 * @param provider name used in the message, e.g. `email provider`.
 * @param mayHaveActed overrides the error's own `mayHaveActed` in the details: whether the effect may have happened
 *   under the key at all (this call or an earlier one whose doubt it did not settle), which is what the workflow
 *   decides on. Default: the error's.
 * @throws always.
 */
export function rethrowProviderError(
  err: unknown,
  provider: string,
  timing?: RetryTiming,
  mayHaveActed?: boolean,
): never {
  if (err instanceof ProviderError) {
    const message = `${provider}: ${err.message}`;
    const details = [{ status: err.status, mayHaveActed: mayHaveActed ?? err.mayHaveActed }];
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
  throw mayHaveActed === undefined ? err : withDoubt(err, mayHaveActed);
}

/** A reason a business refusal may echo to the customer: a provider's code, lower-case words. */
const REFUSAL_REASON = /^[a-z0-9_]{1,64}$/;

/**
 * The business refusal `err` is for a step that declares `refused`: a definite refusal (`rejected`, the provider did
 * not act) whose problem type's last segment is one of `refused.problems`, with the reason from
 * `refused.reasonMember` when it is a safe code.
 * @returns null when `err` is not that refusal (it is then a provider failure like any other).
 */
export function businessRefusal(
  refused: BusinessRefusal | undefined,
  err: unknown,
): { failure: string; reason: string | null } | null {
  if (!refused || !(err instanceof ProviderError) || err.kind !== 'rejected' || err.mayHaveActed) return null;
  const slug = err.problemType?.split('/').at(-1) ?? '';
  if (!refused.problems.includes(slug)) return null;
  const value = refused.reasonMember === undefined ? undefined : err.problem?.[refused.reasonMember];
  return { failure: refused.failure, reason: typeof value === 'string' && REFUSAL_REASON.test(value) ? value : null };
}

/**
 * The non-retryable `RefusedError` of a step whose precondition failed (`precondition` of a provider step): nothing
 * was called. Its message starts with the public failure code and the reason, as {@link refusalFailure}'s; details
 * `{ mayHaveActed: false, failure, reason }` (a reason that is not `[a-z0-9_]{1,64}` is kept in the text only).
 */
export function preconditionFailure(step: string, failure: string, reason: string): ApplicationFailure {
  const safe = REFUSAL_REASON.test(reason) ? reason : null;
  return ApplicationFailure.create({
    message: `${failure}: ${safe ?? '-'}; ${step} did not act: its precondition failed (${reason})`,
    type: ErrorType.Refused,
    nonRetryable: true,
    details: [{ mayHaveActed: false, failure, reason: safe }],
  });
}

/**
 * The non-retryable `RefusedError` of a business refusal: its message starts with the public failure code and the
 * reason (`payment_declined: insufficient_funds; …`), which src/orders/public-failure.ts reads; details
 * `{ status, mayHaveActed: false, failure, reason }`.
 */
export function refusalFailure(
  refusal: { failure: string; reason: string | null },
  provider: string,
  err: ProviderError,
): ApplicationFailure {
  return ApplicationFailure.create({
    message: `${refusal.failure}: ${refusal.reason ?? '-'}; ${provider}: ${err.message}`,
    type: ErrorType.Refused,
    nonRetryable: true,
    details: [{ status: err.status, mayHaveActed: false, failure: refusal.failure, reason: refusal.reason }],
  });
}
