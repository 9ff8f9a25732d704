/**
 * The order fulfilment workflow's public contract: task queue, workflow id, query, input and result.
 *
 * Imported by the API (to start and query workflows) and by the workflow itself. Sandbox-safe: it
 * depends on `@temporalio/workflow` and `@temporalio/common` definitions only (no Node built-ins), so `src/` may import it as a
 * value without pulling the workflow implementation.
 */
import { defineSearchAttributeKey } from '@temporalio/common';
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { OrderPlan } from './order-plan.js';

/** Default task queue of the order worker; override with `TEMPORAL_TASK_QUEUE`. */
export const ORDER_TASK_QUEUE = 'order-fulfilment';

/** Registered name of the workflow type (the exported function name in `workflows/index.ts`). */
export const ORDER_WORKFLOW_TYPE = 'orderFulfilment';

/**
 * The workflow id of an order: `order-<orderId>`. Deriving it from the order id makes a repeated start a
 * no-op (Temporal rejects or reuses a running workflow with the same id), so the API and the reconciler
 * can both start it safely.
 */
export function orderWorkflowId(orderId: string): string {
  return `order-${orderId}`;
}

/**
 * The statuses of an order's lifecycle, written as absolute values to `orders.status`. Between `received` and
 * `completed`, each step of the order's plan writes its own status (e.g. `inventory_reserved`, `shipped`: the
 * step catalogue, activities/catalogue/steps.ts, names them; the plan's last step writes `completed`). See
 * docs/api.md, "Order statuses".
 *
 * Before the pivot a failure or a cancel compensates (stock released, invoice voided) and ends in `failed` or
 * `cancelled`; after it nothing compensates: a step that fails for good, or whose outcome at a provider is unknown,
 * puts the order in `attention_required` until an operator retries it, resolves it, or closes the order (`closed`).
 */
export const OrderStatus = {
  /** Stored; its workflow started (or about to be). */
  Received: 'received',
  /**
   * A step could not finish on its own and no compensation is allowed (past the pivot), or the provider may
   * have acted and we cannot know, or a compensation failed for good (`compensation_failed: …`): the workflow waits
   * for an operator's `retry`, `resolve` or (after the pivot) `close` Update (POST /orders/:id/retry, /resolve,
   * /close). `failureReason` says which step and why.
   */
  AttentionRequired: 'attention_required',
  /** Every step of the plan succeeded. Final. */
  Completed: 'completed',
  /** A step failed for good before the pivot; the earlier steps were compensated. Final. */
  Failed: 'failed',
  /** Cancelled before the pivot (API or Temporal cancel); the earlier steps were compensated. Final. */
  Cancelled: 'cancelled',
  /**
   * Closed by an operator (the `close` Update, POST /orders/:id/close) while a step after the pivot waited for one:
   * the remaining steps did not run and nothing was compensated; the operator's reason is the failure reason. Final.
   */
  Closed: 'closed',
} as const;
/** An order status: one of {@link OrderStatus} or a step's status (e.g. `shipped`). */
export type OrderStatus = string;

/** The activity name of a step of the registry (e.g. `shipOrder`). */
export type OrderStep = string;

/** Statuses after which nothing happens to the order any more. */
export const TERMINAL_ORDER_STATUSES: readonly OrderStatus[] = [
  OrderStatus.Completed,
  OrderStatus.Failed,
  OrderStatus.Cancelled,
  OrderStatus.Closed,
];

/**
 * How the failure reason of an order that waits because a compensation failed for good starts
 * (`compensation_failed: voidInvoice failed: ...`): the metrics and the public failure read it.
 */
export const COMPENSATION_FAILED = 'compensation_failed';

/** True for `completed`, `failed`, `cancelled` and `closed`. */
export function isTerminalStatus(status: string): boolean {
  return (TERMINAL_ORDER_STATUSES as readonly string[]).includes(status);
}

/**
 * Workflow input: the order's id and the plan it runs (the API passes the plan it stored with the order; a run
 * started without one reads it with the `planOrder` activity). Activities read the order from PostgreSQL.
 */
export interface OrderFulfilmentInput {
  /** The order's UUID, as stored in `orders.id`. */
  orderId: string;
  plan?: OrderPlan;
  /**
   * Set when an earlier run of the order continued as new (its history had grown long with operator retries): where
   * that run left the order. See {@link OrderResumeState}.
   */
  resume?: OrderResumeState;
}

/**
 * What a run of an order hands to the next when it continues as new (https://docs.temporal.io/workflows#continue-as-new):
 * everything the lifecycle decides on, so the next run goes on where this one stopped, and the answers of the retry
 * Updates it accepted, so a request repeated with the same Idempotency-Key after the switch gets the same answer
 * instead of a second retry.
 */
export interface OrderResumeState {
  /** Which run of the order the next one is (2 for the first continuation). */
  run: number;
  status: OrderStatus;
  completedSteps: string[];
  /** Provider ids of the steps done so far (null: a database step), by step name. */
  results: Record<string, string | null>;
  pivotPassed: boolean;
  /** Operator retries so far, by step. */
  retries: Record<string, number>;
  /** Index (in the plan's steps up to the pivot) of the last one started: its compensation runs if the order halts. */
  lastStarted: number;
  /** The `OrderStatus` search attribute as last set. */
  visibleStatus: OrderStatus;
  /**
   * The answers of the latest operator Updates (retry, resolve), by Update id (at most {@link REMEMBERED_UPDATES}).
   */
  answered: Record<string, OperatorAnswer>;
  /** The outside events the order received (an event step's report, e.g. `packed`), by event name. From 1.2. */
  events?: Record<string, ReceivedEvent>;
}

/** An outside event as the order received it (the report Update), e.g. the warehouse's `packed`. */
export interface ReceivedEvent {
  /** The report's id (the Update id, from the reporter's `Idempotency-Key`). */
  id: string;
  /** When the workflow received it (ISO 8601). */
  receivedAt: string;
  /** Who reported it (the API client). */
  by: string;
  /** What the reporter sent (e.g. `{ parcels, note }`). */
  report: Record<string, unknown>;
}

/** Argument of an event's report Update (e.g. `reportPacked`). */
export interface ReportEventInput {
  /** Who reports it (the API client), 1..200 characters. */
  by: string;
  /** What the reporter sends (a JSON object, e.g. `{ parcels, note }`); default `{}`. */
  report?: Record<string, unknown>;
}

/** Result of an event's report Update: the first report the order received (a second one answers the same). */
export interface ReportEventResult {
  orderId: string;
  event: string;
  reportId: string;
  receivedAt: string;
  by: string;
}

/** The name of the Update that reports the event `event` to an order: `report<Event>` (e.g. `reportPacked`). */
export function reportEventUpdateName(event: string): string {
  return `report${event.charAt(0).toUpperCase()}${event.slice(1)}`;
}

/**
 * Update: the warehouse (or an operator) reports the order packed (POST /orders/:id/packed). Accepted while the order
 * is not final or stopping and its plan has a `packed` event step not yet done; an early report (before the wait
 * started) is kept and ends the wait at once; a second report answers the same as the first. Refused otherwise with
 * `OrderNotAwaitingEventError`. Send it with the Update id from the reporter's Idempotency-Key.
 */
export const reportPackedUpdate = defineUpdate<ReportEventResult, [ReportEventInput]>(reportEventUpdateName('packed'));

/** How many retry Update answers an order remembers across runs (a repeated request older than that is a new one). */
export const REMEMBERED_UPDATES = 100;

/**
 * An order's run continues as new once its history reaches this many events (or the server suggests it): each
 * operator retry that fails again adds about 15 events, so a run stays far below the server's 10 240-event warning
 * and 51 200-event limit however many retries it gets. See docs/guarantees.md, "Bounds".
 */
export const HISTORY_EVENTS_LIMIT = 1_000;

/** Workflow result when the order completes. */
export interface OrderCompletedResult {
  orderId: string;
  status: typeof OrderStatus.Completed;
  /** Each step's provider id (provider steps, e.g. `msg_…`) or null (database steps), by step name. */
  steps: Record<string, string | null>;
}

/** Workflow result when the order was cancelled through the `cancelOrder` Update (compensated). */
export interface OrderCancelledResult {
  orderId: string;
  status: typeof OrderStatus.Cancelled;
  /** The reason given with the cancel request. */
  reason: string;
}

/** Workflow result when an operator closed the order after the pivot (the `close` Update). */
export interface OrderClosedByOperatorResult {
  orderId: string;
  status: typeof OrderStatus.Closed;
  /** The step that waited when the order was closed (it and the steps after it did not run). */
  step: OrderStep;
  reason: string;
  /** Who closed it. */
  by: string;
}

/**
 * Workflow result. A failed order ends the workflow with `OrderFailedError`; a cancel requested through
 * Temporal (UI/CLI) before the pivot ends it as cancelled (after compensating); a run on an order that was
 * already final ends with `OrderClosedError` and changes nothing.
 */
export type OrderFulfilmentResult = OrderCompletedResult | OrderCancelledResult | OrderClosedByOperatorResult;

/** How an operator may resolve what an order waits on: the effect happened (by hand, or the provider did), or not. */
export const Resolution = {
  Performed: 'performed',
  NotPerformed: 'not_performed',
} as const;
export type Resolution = (typeof Resolution)[keyof typeof Resolution];

/** Why an order waits in `attention_required`. */
export interface OrderAttention {
  /** The step (or, with `kind` `compensation`, the compensation) that waits for an operator. */
  step: OrderStep;
  /** Error type and message, e.g. `ProviderRejectedError: accounting system: ... → 422`. */
  reason: string;
  /** True when the provider may have performed the step's effect (its outcome is unknown). */
  outcomeUnknown: boolean;
  /** How many operator retries this step had so far. */
  retries: number;
  /**
   * What waits: a forward step (`step`), or a compensation that failed for good (`compensation`: the order is halted
   * and cannot end before it is undone or resolved). Absent in states of runs started before 1.1: a step.
   */
  kind?: 'step' | 'compensation';
  /**
   * The resolutions the `resolve` Update accepts here besides a retry: `performed` and `not_performed` while the
   * outcome is unknown, `performed` (done by hand) for a step after the pivot that was refused and for a failed
   * compensation. Absent before 1.1: none.
   */
  resolutions?: Resolution[];
  /** True when the `close` Update may end the order here (a step after the pivot waits). Absent before 1.1: false. */
  closable?: boolean;
}

/** What the `status` query returns: the workflow's view of the order, live. */
export interface OrderFulfilmentState {
  orderId: string;
  status: OrderStatus;
  /** Name of the step running now, or null. */
  currentStep: string | null;
  /** Steps (and compensations) that completed, in order. */
  completedSteps: string[];
  /** True once the pivot step acted (e.g. the confirmation was accepted): from then on nothing compensates. */
  pivotPassed: boolean;
  /** Set while the order waits for an operator in `attention_required`. */
  attention: OrderAttention | null;
  /** The cancel request being honoured, if any. */
  cancellation: { reason: string; source: 'update' | 'workflow-cancel' } | null;
  /** Why the order failed or needs attention (error type and message); null otherwise. */
  failureReason: string | null;
  /** Set while an event step waits for its event (from 1.2): which, since when, until when at most. */
  waitingFor?: { step: string; event: string; since: string; until: string } | null;
}

/** Query: the current fulfilment state. Name on the wire: `status`. */
export const orderStatusQuery = defineQuery<OrderFulfilmentState>('status');

/** Argument of the `cancelOrder` Update. */
export interface CancelOrderInput {
  /** Why the order is cancelled (1..500 characters), stored as the order's failure reason. */
  reason: string;
}

/**
 * Update: cancel the order. Accepted (its validator passes) while the confirmation has not gone out and the
 * order is not final or waiting for an operator; rejected otherwise with `OrderNotCancellableError`. The
 * Update completes only once the outcome is certain: with {@link OrderCancelledResult} after the
 * compensations and the `cancelled` status write, or with an `OrderNotCancellableError` failure when the
 * confirmation email was accepted by the provider before the cancel took effect (the order then goes on to
 * completion). Name on the wire: `cancelOrder`. See https://docs.temporal.io/encyclopedia/workflow-message-passing
 */
export const cancelOrderUpdate = defineUpdate<OrderCancelledResult, [CancelOrderInput]>('cancelOrder');

/** Argument of the `retry` Update. */
export interface RetryStepInput {
  /** When given, the retry is accepted only if this is the step that waits (e.g. `syncInvoiceToAccounting`). */
  step?: OrderStep;
}

/** Result of the `retry` Update: the step whose retry started, and the how-many-th operator retry it is. */
export interface RetryStepResult {
  orderId: string;
  step: OrderStep;
  retry: number;
}

/**
 * Update (operator action): retry the step an order in `attention_required` waits on, after its cause was
 * fixed. The validator rejects it with `OrderNotAwaitingRetryError` unless the workflow is waiting (or waits
 * for another step than `step`); it completes once the retry has started. Send it with an update id derived
 * from the request (the Idempotency-Key), so a repeated request is one retry. Name on the wire: `retry`.
 */
export const retryStepUpdate = defineUpdate<RetryStepResult, [RetryStepInput]>('retry');

/** Argument of the `resolve` Update: an operator's audited decision on what the order waits on. */
export interface ResolveStepInput {
  /** The step (or compensation) the order waits on: the resolution applies only there. */
  step: OrderStep;
  /** What happened: `performed` (the provider did act, or it was done by hand) or `not_performed`. */
  outcome: Resolution;
  /** Why the operator decided so (1..1000 characters): stored with the decision. */
  reason: string;
  /** Who decided (1..200 characters): the API passes the operator's client id. */
  by: string;
  /** For `performed`: the reference of the effect (e.g. the provider's id found in its dashboard), 1..200 characters. */
  providerId?: string;
}

/** Result of the `resolve` Update: the decision as recorded. */
export interface ResolveStepResult {
  orderId: string;
  step: OrderStep;
  outcome: Resolution;
  by: string;
}

/**
 * Update (operator action): resolve the outcome the order waits on when no provider answer can settle it, e.g. the
 * provider cannot replay an old key, or a refused step was done by hand. Accepted only for the waiting step and for a
 * resolution its wait offers ({@link OrderAttention.resolutions}); refused with `OrderNotAwaitingResolutionError`
 * otherwise. The decision is stored (who, why, when: `order_resolutions`) with its effect on the step's claim before
 * the Update completes; then the order goes on: before the pivot the fence runs again (a confirmation resolved
 * performed passes the pivot; anything else compensates), after it a step resolved performed counts as done and one
 * resolved not performed runs again, and a compensation resolved performed counts as undone. Same Update id, same
 * answer. Name on the wire: `resolve`.
 */
export const resolveStepUpdate = defineUpdate<ResolveStepResult, [ResolveStepInput]>('resolve');

/** Argument of the `close` Update. */
export interface CloseOrderInput {
  /** Why the order is closed (1..1000 characters): its failure reason. */
  reason: string;
  /** Who closed it (1..200 characters). */
  by: string;
}

/**
 * Update (operator action): close an order whose step after the pivot waits for an operator and will not be done
 * (e.g. the carrier refuses the address for good and the customer was refunded by hand): the order ends `closed` with
 * the reason, the remaining steps do not run, nothing is compensated (stock and invoice stay as they are: see
 * docs/operations.md). Refused with `OrderNotAwaitingResolutionError` unless such a step waits. Same Update id, same
 * answer. Name on the wire: `close`.
 */
export const closeOrderUpdate = defineUpdate<OrderClosedByOperatorResult, [CloseOrderInput]>('close');

/** An operator Update's answer, as the order remembers it by Update id. */
export type OperatorAnswer = RetryStepResult | ResolveStepResult | OrderClosedByOperatorResult;

/**
 * Query: the answer of the operator Update (retry, resolve or close) with this id, if this order accepted it (in this run or, carried across a
 * continue-as-new, an earlier one), else null. Lets the API answer a repeated request with its first outcome even
 * after the workflow closed. Name on the wire: `retryAnswer`.
 */
export const retryAnswerQuery = defineQuery<OperatorAnswer | null, [string]>('retryAnswer');

/**
 * Search attributes of order workflows, so the Temporal UI can filter orders
 * (e.g. `OrderStatus = "failed"`). Registered at dev-server start (`--search-attribute`) and by the worker
 * at start-up on other clusters. See https://docs.temporal.io/search-attribute
 * - `OrderId`, `OrderStatus`: upserted by the workflow (and set at start by the API).
 * - `CustomerId`: set at start by the API, never by the workflow: a pseudonymous customer id (first 16 hex digits of
 *   HMAC-SHA256 of the lower-cased email with `CUSTOMER_ID_SECRET`; src/orders/workflow/customer-id.ts), never the email.
 * - `OrderSummary`: set at start by the API, the line a person scans in the UI's workflow list (add it as a column):
 *   `Order 1a2b3c4d · Ada Lovelace · 2 lines · 39.98 EUR` (short id, the customer's name or masked email, the number
 *   of lines, the total). Never a full email address (docs/operations.md, "What the Temporal UI shows").
 */
export const SEARCH_ATTRIBUTES = {
  OrderId: defineSearchAttributeKey('OrderId', 'KEYWORD'),
  OrderStatus: defineSearchAttributeKey('OrderStatus', 'KEYWORD'),
  CustomerId: defineSearchAttributeKey('CustomerId', 'KEYWORD'),
  OrderSummary: defineSearchAttributeKey('OrderSummary', 'KEYWORD'),
} as const;
