/**
 * Classification of errors from `@temporalio/client` calls.
 *
 * Failures raised inside a workflow (an Update's validator or handler) reach the client as SDK classes
 * (`WorkflowUpdateFailedError` whose `cause` is an `ApplicationFailure`); our own error names travel as the
 * failure's `type` string (workflows/errors.ts). So we read `type`, never `instanceof` on our classes, as the
 * Temporal docs advise for failures that cross the workflow boundary:
 * https://docs.temporal.io/references/failures#application-failure
 */
import { ApplicationFailure, ServiceError, WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';

/** gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html) meaning "cannot reach the server". */
const UNREACHABLE_GRPC_CODES = new Set([
  4, // DEADLINE_EXCEEDED
  14, // UNAVAILABLE
]);

/** gRPC RESOURCE_EXHAUSTED: the frontend's rate limit (retry later, like unreachable). */
const RESOURCE_EXHAUSTED = 8;

/**
 * True when `err` (or an error in its `cause` chain) is a gRPC DEADLINE_EXCEEDED or UNAVAILABLE, i.e. the
 * Temporal frontend is down or unreachable rather than the request being wrong.
 */
export function isTemporalUnreachable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'number' && UNREACHABLE_GRPC_CODES.has(code)) return true;
  }
  return false;
}

/**
 * True when the Temporal service cannot take the call now but may later: unreachable
 * ({@link isTemporalUnreachable}) or a `ServiceError` for a rate limit (gRPC RESOURCE_EXHAUSTED).
 * Callers answer these with 503 and `Retry-After`.
 */
export function isTemporalUnavailable(err: unknown): boolean {
  if (isTemporalUnreachable(err)) return true;
  if (!(err instanceof ServiceError)) return false;
  return (err.cause as { code?: unknown } | undefined)?.code === RESOURCE_EXHAUSTED;
}

/** The failure a workflow raised for an Update (its validator or handler), as the client sees it. */
export interface UpdateFailure {
  /** `ApplicationFailure.type`, e.g. `OrderNotCancellableError`; `Error` when the workflow gave none. */
  type: string;
  message: string;
  /** The failure's details (the first element is what our workflows attach, if anything). */
  details: unknown[];
}

/**
 * The `ApplicationFailure` an Update was rejected (validator) or failed (handler) with.
 * @returns null when `err` is not a `WorkflowUpdateFailedError` carrying an `ApplicationFailure`.
 */
export function updateFailureOf(err: unknown): UpdateFailure | null {
  if (!(err instanceof WorkflowUpdateFailedError)) return null;
  const cause = err.cause;
  if (!(cause instanceof ApplicationFailure)) return null;
  return { type: cause.type ?? 'Error', message: cause.message, details: [...(cause.details ?? [])] };
}

/**
 * True when the workflow execution has no handler for the Update: the SDK's workflow runtime rejects it with
 * `ApplicationFailure.nonRetryable("No registered handler for update: <name>")` (SDK 1.24,
 * `@temporalio/workflow` internals), the answer of executions started before the Update existed.
 */
export function isUpdateHandlerMissing(err: unknown): boolean {
  const failure = updateFailureOf(err);
  return failure !== null && /no registered handler for update/i.test(failure.message);
}

/**
 * True for the client's `WorkflowNotFoundError` on an execution that exists but has closed: the server answers
 * an Update (or signal) to it with NOT_FOUND "workflow execution already completed" (verified on the dev server
 * 1.29.1). A workflow id that was never used gives `WorkflowNotFoundError` with another message.
 */
export function isWorkflowClosedError(err: unknown): boolean {
  return err instanceof WorkflowNotFoundError && /already completed/i.test(err.message);
}
