/**
 * The return workflow's public contract (`orderReturn`, workflow id `return-<returnId>`): its input, statuses,
 * Updates, query and activities. Imported by the API (to start returns and send Updates) and by the workflow.
 * Sandbox-safe: `@temporalio/workflow` definitions only.
 *
 * A return: a label from the carrier (`return-label:<returnId>`) and an email with it; a bounded wait for the
 * warehouse's receipt (the `receive` Update; `withdraw` ends it first, the bound expires it, nothing refunded); the
 * receipt recorded with the restock of the undamaged units (`return:<returnId>:<sku>` movements); the refund through
 * the payments provider (`refund:<returnId>`, card orders); the credit note in the accounting system
 * (`credit-note:<returnId>`); an email to the customer. A provider step that fails for good waits for an operator's
 * `retry` Update in `attention_required`. See docs/api.md, "Returns".
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';

/** Registered name of the workflow type (the exported function name in `workflows/index.ts`). */
export const RETURN_WORKFLOW_TYPE = 'orderReturn';

/** The workflow id of a return: `return-<returnId>` (a repeated start is a no-op). */
export function returnWorkflowId(returnId: string): string {
  return `return-${returnId}`;
}

/** A return's statuses (`returns.status`), written as absolute values. */
export const ReturnStatus = {
  /** Stored; its workflow started (or about to be). */
  Requested: 'requested',
  /** The carrier's return label exists: the return waits for the warehouse's receipt. */
  LabelCreated: 'label_created',
  /** The warehouse received the parcel; the undamaged units are back in stock. */
  Received: 'received',
  /** The card was refunded (card orders). */
  Refunded: 'refunded',
  /** Received, refunded and credited; the customer was told. Final. */
  Completed: 'completed',
  /** The customer withdrew the return before it was received. Final; nothing refunded. */
  Withdrawn: 'withdrawn',
  /** Nothing was received within the bound (`RETURN_RECEIPT_TIMEOUT`). Final; nothing refunded. */
  Expired: 'expired',
  /** A provider step failed for good: an operator retries it (POST /returns/:id/retry). */
  AttentionRequired: 'attention_required',
} as const;
export type ReturnStatus = (typeof ReturnStatus)[keyof typeof ReturnStatus];

/** The final statuses of a return. */
export const FINAL_RETURN_STATUSES: readonly ReturnStatus[] = [
  ReturnStatus.Completed,
  ReturnStatus.Withdrawn,
  ReturnStatus.Expired,
];

/** Input of the return workflow. */
export interface OrderReturnInput {
  returnId: string;
  orderId: string;
  /** The bound of the wait for the receipt, ms (`RETURN_RECEIPT_TIMEOUT` when the return was asked for). */
  receiptTimeoutMs: number;
  /** The SKUs and quantities of the return (for the validators and the Temporal UI's summaries). */
  lines: ReturnLineInput[];
}

/** A line of a return: `quantity` units of `sku`. */
export interface ReturnLineInput {
  sku: string;
  quantity: number;
}

/** A received line: `quantity` units of `sku` arrived, `damaged` of them damaged (0 ≤ damaged ≤ quantity). */
export interface ReceivedLine {
  sku: string;
  quantity: number;
  damaged: number;
}

/** Input of the `receive` Update: what the warehouse received (lines not named: none received). */
export interface ReceiveReturnInput {
  lines: ReceivedLine[];
  /** Who reports it (the API client). */
  by: string;
}

/** Answer of the `receive` Update: the receipt the return holds (the first one; a second report answers the same). */
export interface ReceiveReturnResult {
  returnId: string;
  /** The Update id of the receipt the return holds. */
  receiptId: string;
  lines: ReceivedLine[];
  by: string;
  /** ISO 8601 (the workflow's clock). */
  receivedAt: string;
}

/** Input of the `withdraw` Update (the customer, or an operator). */
export interface WithdrawReturnInput {
  by: string;
}

/** Answer of the `withdraw` Update. */
export interface WithdrawReturnResult {
  returnId: string;
  status: typeof ReturnStatus.Withdrawn;
}

/** Input of the `retry` Update (an operator). */
export interface RetryReturnInput {
  by: string;
  reason?: string;
}

/** Answer of the `retry` Update: the step retried. */
export interface RetryReturnResult {
  returnId: string;
  step: string;
}

/** What the `status` query answers. */
export interface OrderReturnState {
  returnId: string;
  status: ReturnStatus;
  /** The step the return runs or waits on. */
  step: string | null;
  /** Why it waits for an operator, when it does. */
  attentionReason: string | null;
}

/** The result of the workflow. */
export interface OrderReturnResult {
  returnId: string;
  status: ReturnStatus;
  refundMinor: number;
}

/** The warehouse (or an operator) reports the return received. Validator: the return waits for its receipt. */
export const receiveReturnUpdate = defineUpdate<ReceiveReturnResult, [ReceiveReturnInput]>('receive');
/** The customer (or an operator) withdraws the return. Validator: nothing was received and it has not ended. */
export const withdrawReturnUpdate = defineUpdate<WithdrawReturnResult, [WithdrawReturnInput]>('withdraw');
/** An operator retries the provider step the return waits on. Validator: it waits in `attention_required`. */
export const retryReturnUpdate = defineUpdate<RetryReturnResult, [RetryReturnInput]>('retry');
/** The return's state. */
export const returnStatusQuery = defineQuery<OrderReturnState>('status');

/**
 * How long one wait for an operator's retry lasts before the workflow logs that it still waits and waits again, ms
 * (7 days): the wait has a bound, and the history grows by one timer per week at most.
 */
export const ATTENTION_RECHECK_MS = 7 * 86_400_000;

/** The failure type a validator rejects an Update with: the return does not wait for it. */
export const RETURN_NOT_AWAITING = 'ReturnNotAwaitingError';
/** The failure type the `receive` validator rejects bad lines with (a SKU not in the return, too many units). */
export const RETURN_RECEIPT_INVALID = 'ReturnReceiptInvalidError';

/** The provider of each provider activity of a return: it runs on that provider's task queue. */
export const RETURN_PROVIDER_OF = {
  createReturnLabel: 'carrier',
  sendReturnEmail: 'email',
  refundReturn: 'payments',
  creditReturn: 'accounting',
} as const satisfies Partial<Record<keyof ReturnActivities, string>>;

/** Input of every return activity. */
export interface ReturnActivityInput {
  returnId: string;
}

/** The return's activities (activities/returns/return.activities.ts). */
export interface ReturnActivities {
  /** The carrier's return label (`return-label:<returnId>`), recorded on the return; status `label_created`. */
  createReturnLabel(input: ReturnActivityInput): Promise<{ labelId: string; performed: boolean }>;
  /** An email to the customer (`return-label-email:<id>` with the label, `return-refund-email:<id>` at the end). */
  sendReturnEmail(input: ReturnActivityInput & { kind: 'label' | 'completed' }): Promise<{ messageId: string }>;
  /**
   * The receipt recorded once: received and damaged quantities, the refund amount fixed, the undamaged units
   * restocked (`return:<returnId>:<sku>` movements); status `received`.
   */
  recordReturnReceipt(input: ReturnActivityInput & { receipt: ReceiveReturnResult }): Promise<{
    refundMinor: number;
    restocked: number;
    /** The amount as people read it, e.g. `EUR 14.50`. */ refund?: string;
  }>;
  /** The card refund (`refund:<returnId>`), nothing for an order without a captured payment or a zero amount. */
  refundReturn(input: ReturnActivityInput): Promise<{ refunded: boolean; refundId: string | null }>;
  /** The credit note in accounting (`credit-note:<returnId>`), nothing for a zero amount. */
  creditReturn(input: ReturnActivityInput): Promise<{ credited: boolean; creditNoteId: string | null }>;
  /** Writes the return's status (absolute; a final status is never overwritten). */
  setReturnStatus(
    input: ReturnActivityInput & { status: ReturnStatus; reason?: string | null },
  ): Promise<{ applied: boolean }>;
}
