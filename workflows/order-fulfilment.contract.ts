/**
 * The order fulfilment workflow's public contract: task queue, workflow id, query, input and result.
 *
 * Imported by the API (to start and query workflows) and by the workflow itself. Sandbox-safe: it
 * depends on `@temporalio/workflow` and `@temporalio/common` definitions only (no Node built-ins), so `src/` may import it as a
 * value without pulling the workflow implementation.
 */
import { defineSearchAttributeKey } from '@temporalio/common';
import { defineQuery, defineSignal } from '@temporalio/workflow';

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
 * Order lifecycle statuses, written as absolute values to `orders.status` after each step, in order.
 * `step` is their position: a status write carries it, and a write with a lower step than the stored one
 * is ignored (a late retry never moves an order backwards).
 */
export const OrderStatus = {
  Received: 'received',
  InventoryReserved: 'inventory_reserved',
  Invoiced: 'invoiced',
  ConfirmationSent: 'confirmation_sent',
  /**
   * The customer has a confirmed order but syncing the invoice to accounting failed for good (e.g. the
   * accounting system rejected it). The order is NOT cancelled: the workflow waits for
   * `retryAccountingSync` (POST /orders/:id/accounting-sync/retry) after someone fixed the cause.
   */
  AttentionRequired: 'attention_required',
  Completed: 'completed',
  Failed: 'failed',
} as const;
export type OrderStatus = (typeof OrderStatus)[keyof typeof OrderStatus];

/** Step number of each status (0 = received by the API). `failed` outranks every other status. */
export const ORDER_STATUS_STEP: Readonly<Record<OrderStatus, number>> = {
  received: 0,
  inventory_reserved: 1,
  invoiced: 2,
  confirmation_sent: 3,
  attention_required: 4,
  completed: 5,
  failed: 9,
};

/** Statuses after which the workflow does nothing more. */
export const TERMINAL_ORDER_STATUSES: readonly OrderStatus[] = [OrderStatus.Completed, OrderStatus.Failed];

/** Workflow input. Only the id travels: activities read the order from PostgreSQL (small histories). */
export interface OrderFulfilmentInput {
  /** The order's UUID, as stored in `orders.id`. */
  orderId: string;
}

/** Workflow result when the order completes. A failed order ends the workflow with `OrderFailedError`. */
export interface OrderFulfilmentResult {
  orderId: string;
  status: typeof OrderStatus.Completed;
  /** Invoice number, e.g. `INV-000042`. */
  invoiceNumber: string;
  /** Email provider's message id of the order confirmation. */
  confirmationMessageId: string;
  /** The accounting system's id of the synced invoice. */
  accountingId: string;
}

/** What the `status` query returns: the workflow's view of the order, live. */
export interface OrderFulfilmentState {
  orderId: string;
  status: OrderStatus;
  /** Name of the step running now, or null when terminal. */
  currentStep: string | null;
  /** Steps that completed, in order. */
  completedSteps: string[];
  invoiceNumber: string | null;
  /** Why the order failed or needs attention (error type and message); null otherwise. */
  failureReason: string | null;
}

/** Query: the current fulfilment state. Name on the wire: `status`. */
export const orderStatusQuery = defineQuery<OrderFulfilmentState>('status');

/**
 * Signal: retry the accounting sync of an order in `attention_required` (after the cause was fixed).
 * Name on the wire: `retryAccountingSync`; no arguments. Ignored in any other state.
 */
export const retryAccountingSyncSignal = defineSignal('retryAccountingSync');

/**
 * Search attributes the workflow upserts, so the Temporal UI can filter orders
 * (e.g. `OrderStatus = "failed"`). Registered at dev-server start (`--search-attribute`) and by the worker
 * at start-up on other clusters. See https://docs.temporal.io/search-attribute
 */
export const SEARCH_ATTRIBUTES = {
  OrderId: defineSearchAttributeKey('OrderId', 'KEYWORD'),
  OrderStatus: defineSearchAttributeKey('OrderStatus', 'KEYWORD'),
} as const;
