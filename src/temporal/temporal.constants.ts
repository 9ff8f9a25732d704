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
