/**
 * The workflow's failure wording: what a failure at the end of an activity's failure chain says (an order's failure
 * reason, an operator's "why"), whether the provider may have acted, and the failures the workflow's Update
 * validators and handlers raise. Read from the failure chain's types only (never `instanceof` on error classes of
 * activities: they do not cross the sandbox). Sandbox-safe.
 */
import { ApplicationFailure, CancelledFailure, TemporalFailure, TimeoutFailure } from '@temporalio/workflow';
import { ErrorType } from './errors.js';
import type { OrderAttention } from './order-fulfilment.contract.js';
import type { PlannedStep } from './order-plan.js';

/**
 * Describes why a step failed, from the failure chain's types (never `instanceof` on error classes of
 * activities: they do not cross the sandbox). E.g. `InsufficientStockError: insufficient stock for ...`.
 */
export function describeFailure(err: unknown): string {
  const cause = innermost(err);
  if (cause instanceof ApplicationFailure) return `${cause.type ?? 'Error'}: ${cause.message}`;
  if (cause instanceof TimeoutFailure) return `TimeoutFailure: activity ${cause.timeoutType} timeout`;
  // A cancelled activity's failure has no message: say what happened (the cancel stopped the attempt's wait).
  if (cause instanceof CancelledFailure && !cause.message) return 'CancelledFailure: the attempt was cancelled';
  if (cause instanceof Error) return `${cause.name}: ${cause.message}`;
  return String(cause);
}

/** The innermost failure: ActivityFailure → ApplicationFailure / TimeoutFailure / CancelledFailure. */
export function innermost(err: unknown): unknown {
  let cause: unknown = err;
  while (cause instanceof TemporalFailure && cause.cause) cause = cause.cause;
  return cause;
}

/** The application failure type at the end of the chain, if any (e.g. `OrderClosedError`). */
export function failureType(err: unknown): string | undefined {
  const cause = innermost(err);
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

/**
 * Whether the provider may have performed the effect of a failed provider step: the activity says so in its
 * failure details (`mayHaveActed`); a timeout (the worker died or hung mid-call) may have acted too.
 */
export function mayHaveActed(err: unknown): boolean {
  const cause = innermost(err);
  if (cause instanceof TimeoutFailure) return true;
  if (cause instanceof ApplicationFailure) {
    const details = cause.details?.[0] as { mayHaveActed?: unknown } | undefined;
    return details?.mayHaveActed === true || cause.type === ErrorType.ClaimInProgress;
  }
  return false;
}

/**
 * Why a step stopped, in words a person reads in the Temporal UI (the failure's type and HTTP status, never its
 * message: that is shown escaped as the cause), e.g. `the <provider> provider refused it (HTTP 422)`.
 */
export function humanWhy(step: PlannedStep, err: unknown): string {
  const cause = innermost(err);
  const who = step.provider ? `the ${step.provider} provider` : 'the database step';
  if (cause instanceof TimeoutFailure) return 'its attempt timed out (the worker may have died mid-call)';
  if (!(cause instanceof ApplicationFailure)) return `it failed (${cause instanceof Error ? cause.name : 'error'})`;
  const status = (cause.details?.[0] as { status?: unknown } | undefined)?.status;
  const http = typeof status === 'number' ? ` (HTTP ${status})` : '';
  switch (cause.type) {
    case ErrorType.ProviderRejected:
      return `${who} refused it${http}`;
    case ErrorType.Unauthorized:
      return `${who} refused our credentials${http}`;
    case ErrorType.ProviderUnavailable:
      return `${who} did not answer${http}`;
    case ErrorType.ClaimInProgress:
      return 'another attempt still holds its claim';
    case ErrorType.Validation:
      return 'it failed a check';
    default:
      return `it failed (${cause.type ?? 'error'})`;
  }
}

/** The `OrderNotAwaitingResolutionError` of a resolve or close the order cannot take now. */
export function notAwaitingResolution(
  orderId: string,
  status: string,
  waiting: OrderAttention | null,
  why?: string,
): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    why
      ? `order ${orderId} cannot take this: ${why}`
      : `order ${orderId} is ${status} and does not wait for an operator`,
    ErrorType.OrderNotAwaitingResolution,
    {
      status,
      waitingStep: waiting?.step ?? null,
      resolutions: waiting?.resolutions ?? [],
      closable: waiting?.closable ?? false,
    },
  );
}

/** A validator's check of a text argument: a string of 1..`max` characters after trimming. */
export function requireText(value: unknown, name: string, max: number): void {
  if (typeof value !== 'string' || value.trim() === '' || value.length > max) {
    throw ApplicationFailure.nonRetryable(`${name} must be a string of 1..${max} characters`, ErrorType.Validation);
  }
}

/** The `OrderNotCancellableError` of a cancel the order cannot take now, with why. */
export function notCancellable(orderId: string, why: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `order ${orderId} cannot be cancelled: ${why}`,
    ErrorType.OrderNotCancellable,
    {
      why,
    },
  );
}
