/**
 * Injection tokens and timeouts of the Temporal client side of the API.
 */

/** Nest injection token of the `@temporalio/client` `Client`: `@Inject(TEMPORAL_CLIENT) client: Client`. */
export const TEMPORAL_CLIENT = Symbol('TEMPORAL_CLIENT');

/**
 * Deadline of one workflow start (including the SDK's gRPC retries), ms: the start dispatcher's (after an order's
 * commit) and an order action's for an order whose workflow was not started yet. POST /orders never waits for it: it
 * commits the order with its start intent and answers 202; a start that fails leaves the intent for the next try.
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
 * by default), so 30 s covers the normal path and a worker crash ({@link RETRY_UPDATE_TIMEOUT_MS}); past it the API
 * answers 202 and the client repeats the request with the same `Idempotency-Key` for the outcome. Counted from the
 * request's arrival: reading the order, starting a workflow that was not started yet and the Update all fit in it.
 */
export const CANCEL_WAIT_MS = 30_000;

/**
 * Temporal's default workflow task timeout, ms: when the worker that took a workflow task dies, the server hands
 * the task (and the Updates it carried) to another worker after this long.
 * See https://docs.temporal.io/encyclopedia/detecting-workflow-failures#workflow-task-timeout
 */
export const WORKFLOW_TASK_TIMEOUT_MS = 10_000;

/**
 * How long a worker takes to be back after a crash, ms: `npm start` restarts a dead worker after 1 s and it polls
 * again within a few seconds (bundling its workflows); an orchestrator restarting a container takes about as long.
 */
export const WORKER_RECOVERY_MS = 10_000;

/**
 * Bound of the `retry` Update (`POST /orders/:id/retry`), ms. The Update completes as soon as the workflow has
 * started the retry (one workflow task). It outlasts a worker crash: the workflow task timeout plus the worker's
 * recovery, plus 5 s, so a retry sent as a worker dies still gets its definite answer (202) instead of a 503 whose
 * retry was applied a moment later. Past it (no worker at all), 503: repeat with the same Idempotency-Key, which is
 * the same Update and gets its outcome.
 */
export const RETRY_UPDATE_TIMEOUT_MS = WORKFLOW_TASK_TIMEOUT_MS + WORKER_RECOVERY_MS + 5_000;

/** Maximum number of orders the sweeper checks per pass. */
export const SWEEP_BATCH_SIZE = 100;
