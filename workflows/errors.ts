/**
 * Application failure type names shared by activities and workflows.
 *
 * Sandbox-safe: plain string constants, no imports. Activities throw
 * `ApplicationFailure.nonRetryable(message, ErrorType.X)` for permanent errors; workflows read
 * `failure.cause.type` (never `instanceof`, which fails across the workflow sandbox).
 * See https://docs.temporal.io/references/failures#application-failure
 */
export const ErrorType = {
  /** Input that can never become valid (malformed order, bad quantity). Permanent. */
  Validation: 'ValidationError',
  /**
   * A record the step needs does not exist (order, product, invoice). Permanent. Not `NotFoundError`: that is the
   * type the Temporal SDK gives an activity no worker has registered (retryable: during a rolling deploy a new step
   * may reach an old worker), and listing it as non-retryable would fail such an order for good.
   */
  NotFound: 'RecordNotFoundError',
  /** Not enough available stock for at least one line. Permanent for this order. */
  InsufficientStock: 'InsufficientStockError',
  /** The provider rejected our credentials (HTTP 401/403). Permanent until reconfigured. */
  Unauthorized: 'UnauthorizedError',
  /** The provider rejected the request itself (HTTP 4xx other than 401/403/408/409/425/429). Permanent. */
  ProviderRejected: 'ProviderRejectedError',
  /** Another execution holds a fresh claim on the same side effect. Transient: retry later. */
  ClaimInProgress: 'ClaimInProgressError',
  /** The provider is unavailable or timed out (HTTP 5xx, 408, 429, network). Transient. */
  ProviderUnavailable: 'ProviderUnavailableError',
  /**
   * A forward step refused to act because the order stopped moving forward: it was halted for compensation
   * (cancel or failure), its reservation was released or its invoice voided. Permanent.
   */
  OrderHalted: 'OrderHaltedError',
  /** The order is already final (completed, failed or cancelled): a second run does nothing. Permanent. */
  OrderClosed: 'OrderClosedError',
  /** A cancel request the order cannot honour any more (the confirmation went out, or it is final). */
  OrderNotCancellable: 'OrderNotCancellableError',
  /** An operator retry while the workflow does not wait for one (or waits on another step). */
  OrderNotAwaitingRetry: 'OrderNotAwaitingRetryError',
  /** The workflow's own deliberate failure after compensating a permanently failed order. */
  OrderFailed: 'OrderFailedError',
  /**
   * A provider answered (the effect happened), but the claim could not record it: it is a tombstone or gone. Thrown
   * non-retryable with `mayHaveActed: true`; a person reconciles it.
   */
  SideEffectUnrecorded: 'SideEffectUnrecordedError',
  /** An operator's resolve or close of an order that does not wait for it (or waits on another step). */
  OrderNotAwaitingResolution: 'OrderNotAwaitingResolutionError',
  /**
   * A provider's definite refusal that a step declares the customer's business (e.g. a card declined: the step's
   * `refused`). Its message starts `<public failure code>: <reason or ->; `. Permanent.
   */
  Refused: 'RefusedError',
  /** A report of an outside event (e.g. `packed`) to an order that does not wait for it and has no step for it. */
  OrderNotAwaitingEvent: 'OrderNotAwaitingEventError',
} as const;
export type ErrorType = (typeof ErrorType)[keyof typeof ErrorType];

/** Error types that no retry can fix; used as `nonRetryableErrorTypes` in every retry profile. */
export const PERMANENT_ERROR_TYPES: readonly ErrorType[] = [
  ErrorType.Validation,
  ErrorType.NotFound,
  ErrorType.InsufficientStock,
  ErrorType.Unauthorized,
  ErrorType.ProviderRejected,
  ErrorType.OrderHalted,
  ErrorType.OrderClosed,
];
