/**
 * Injection tokens and timeouts of the Temporal client side of the API.
 */

/** Nest injection token of the `@temporalio/client` `Client`: `@Inject(TEMPORAL_CLIENT) client: Client`. */
export const TEMPORAL_CLIENT = Symbol('TEMPORAL_CLIENT');

/**
 * Deadline of one workflow start (including the SDK's gRPC retries), ms. Bounds how long POST /orders waits
 * for an unreachable Temporal before answering 202 anyway (the reconciler starts the workflow later).
 */
export const WORKFLOW_START_TIMEOUT_MS = 5_000;

/** The reconciler only starts workflows of orders older than this, ms, so it never races the POST handler. */
export const RECONCILE_MIN_AGE_MS = 5_000;

/** Maximum number of orders the reconciler starts per pass. */
export const RECONCILE_BATCH_SIZE = 100;

/**
 * Deadline of one short Temporal call made on behalf of an HTTP request (describe, signal, query), ms. An
 * unreachable Temporal is answered 503 after this long.
 */
export const TEMPORAL_CALL_TIMEOUT_MS = 5_000;

/**
 * Default bound of `POST /orders/:id/cancel` (config `CANCEL_WAIT_MS`), ms: how long the request waits for the
 * `cancelOrder` Update's outcome (accepted, then compensated or refused). Compensation is two database steps
 * and, at worst, waiting for an in-flight confirmation email call (provider timeout `PROVIDER_TIMEOUT_MS`, 10 s
 * by default), so 30 s covers the normal path; past it the API answers 202 and the client repeats the request
 * with the same `Idempotency-Key` for the outcome.
 */
export const CANCEL_WAIT_MS = 30_000;

/**
 * Bound of the `retry` Update (`POST /orders/:id/retry`), ms. The Update completes as soon as the workflow has
 * started the retry (one workflow task), so this only passes when no worker serves the task queue.
 */
export const RETRY_UPDATE_TIMEOUT_MS = 10_000;

/** Maximum number of orders the sweeper checks per pass. */
export const SWEEP_BATCH_SIZE = 100;
