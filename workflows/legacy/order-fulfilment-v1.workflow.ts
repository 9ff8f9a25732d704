/**
 * FROZEN: the first version of the order workflow, kept so that executions started before the lifecycle
 * change (histories without the `lifecycle-v2` patch marker) replay and finish on the code that started them.
 * Never change its command sequence; it is retired under the versioning policy in the README once no such
 * execution can be running. Its retry profiles are frozen copies too.
 *
 * The order fulfilment workflow (v1): reserve inventory → create invoice → send the order confirmation →
 * sync the invoice to accounting, writing the order's status (an absolute value) after each step.
 *
 * The confirmation email is the pivot: before it, a step that fails for good cancels the order (the
 * completed steps are compensated); after it, the customer holds a confirmed order, so a failed
 * accounting sync never cancels it: the order goes to `attention_required` and the workflow waits for the
 * `retryAccountingSync` signal (sent by POST /orders/:id/accounting-sync/retry once the cause is fixed).
 *
 * Every activity is idempotent (see activities/), so Temporal's at-least-once execution is safe; each is
 * called through a named, finite retry profile (activity-options.ts). When a step fails for good
 * (a non-retryable error type, or its retries exhausted), the completed steps are compensated in reverse
 * order in a non-cancellable scope, the order is marked `failed` with the reason, and the workflow fails
 * on purpose with `OrderFailedError`.
 * Workflow id: `order-<orderId>` (orderWorkflowId). See https://docs.temporal.io/workflows
 */
import {
  ApplicationFailure,
  CancellationScope,
  TemporalFailure,
  condition,
  isCancellation,
  log,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import type { ActivityOptions } from '@temporalio/workflow';
import type { OrderActivities } from '../../activities/index.js';
import { ErrorType, PERMANENT_ERROR_TYPES } from '../errors.js';
import {
  OrderStatus,
  SEARCH_ATTRIBUTES,
  retryAccountingSyncSignal,
  type OrderFulfilmentInput,
  type OrderStatus as OrderStatusValue,
} from '../order-fulfilment.contract.js';
import { orderStatusQueryV1, type OrderFulfilmentStateV1 } from './order-fulfilment-v1.contract.js';

const nonRetryableErrorTypes = [...PERMANENT_ERROR_TYPES];
const local = proxyActivities<OrderActivities>({
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '90 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 5,
    nonRetryableErrorTypes,
  },
} satisfies ActivityOptions);
const remote = proxyActivities<OrderActivities>({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '20 minutes',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '60 seconds',
    maximumAttempts: 15,
    nonRetryableErrorTypes,
  },
} satisfies ActivityOptions);
const compensating = proxyActivities<OrderActivities>({
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '240 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '15 seconds',
    maximumAttempts: 10,
    nonRetryableErrorTypes,
  },
} satisfies ActivityOptions);

/** The v1 workflow's result when the order completes. */
export interface OrderFulfilmentResultV1 {
  orderId: string;
  status: typeof OrderStatus.Completed;
  invoiceNumber: string;
  confirmationMessageId: string;
  accountingId: string;
}

/**
 * Describes why a step failed, from the failure chain's types (never `instanceof` on error classes of
 * activities: they do not cross the sandbox). E.g. `InsufficientStockError: insufficient stock for ...`.
 */
export function describeFailure(err: unknown): string {
  let cause: unknown = err;
  // Walk to the innermost failure: ActivityFailure → ApplicationFailure / TimeoutFailure.
  while (cause instanceof TemporalFailure && cause.cause) cause = cause.cause;
  if (cause instanceof ApplicationFailure) return `${cause.type ?? 'Error'}: ${cause.message}`;
  if (cause instanceof Error) return `${cause.name}: ${cause.message}`;
  return String(cause);
}

/** Runs one order to completion or to a compensated failure (v1). */
export async function orderFulfilmentV1(input: OrderFulfilmentInput): Promise<OrderFulfilmentResultV1> {
  const { orderId } = input;
  const state: OrderFulfilmentStateV1 = {
    orderId,
    status: OrderStatus.Received,
    currentStep: null,
    completedSteps: [],
    invoiceNumber: null,
    failureReason: null,
  };
  setHandler(orderStatusQueryV1, () => state);
  let retryRequests = 0;
  setHandler(retryAccountingSyncSignal, () => {
    if (state.status === OrderStatus.AttentionRequired) retryRequests++;
  });

  const setStatus = async (status: OrderStatusValue, failureReason?: string) => {
    const activities = status === OrderStatus.Failed ? compensating : local;
    await activities.setOrderStatus({ orderId, status, failureReason });
    state.status = status;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.OrderStatus, value: status }]);
  };
  const step = async <T>(name: string, run: () => Promise<T>): Promise<T> => {
    state.currentStep = name;
    const result = await run();
    state.completedSteps.push(name);
    state.currentStep = null;
    return result;
  };
  /** Compensations of completed steps, most recent first. */
  const compensations: Array<{ name: string; run: () => Promise<unknown> }> = [];

  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.OrderId, value: orderId },
    { key: SEARCH_ATTRIBUTES.OrderStatus, value: OrderStatus.Received },
  ]);

  try {
    await step('reserveInventory', () => local.reserveInventory({ orderId }));
    compensations.unshift({ name: 'releaseInventory', run: () => compensating.releaseInventory({ orderId }) });
    await setStatus(OrderStatus.InventoryReserved);

    const invoice = await step('createInvoice', () => local.createInvoice({ orderId }));
    compensations.unshift({ name: 'voidInvoice', run: () => compensating.voidInvoice({ orderId }) });
    state.invoiceNumber = invoice.invoiceNumber;
    await setStatus(OrderStatus.Invoiced);

    const confirmation = await step('sendOrderConfirmation', () => remote.sendOrderConfirmation({ orderId }));
    await setStatus(OrderStatus.ConfirmationSent);

    // Past the pivot: retry until an operator gives up (cancels the workflow), never compensate on our own.
    const sync = await step('syncInvoiceToAccounting', async () => {
      for (;;) {
        const seen = retryRequests;
        try {
          return await remote.syncInvoiceToAccounting({ orderId });
        } catch (err) {
          if (isCancellation(err)) throw err;
          const reason = describeFailure(err);
          state.failureReason = reason;
          log.warn('accounting sync failed for good; waiting for retryAccountingSync', { orderId, reason });
          await setStatus(OrderStatus.AttentionRequired, reason);
          await condition(() => retryRequests > seen);
          state.failureReason = null;
        }
      }
    });
    await setStatus(OrderStatus.Completed);

    return {
      orderId,
      status: OrderStatus.Completed,
      invoiceNumber: invoice.invoiceNumber,
      confirmationMessageId: confirmation.messageId,
      accountingId: sync.accountingId,
    };
  } catch (err) {
    const reason = describeFailure(err);
    state.failureReason = reason;
    log.warn('order failed; compensating', { orderId, step: state.currentStep, reason });
    // Compensations run even if the workflow was cancelled: the scope ignores cancellation.
    // Compensations run even if the workflow was cancelled: the scope ignores cancellation. A compensation
    // that fails after its own retries does not stop the others; it is named in the failure reason so that
    // someone can finish it by hand.
    const compensationFailures: string[] = [];
    await CancellationScope.nonCancellable(async () => {
      for (const c of compensations) {
        state.currentStep = c.name;
        try {
          await c.run();
          state.completedSteps.push(c.name);
        } catch (compErr) {
          compensationFailures.push(`${c.name} failed: ${describeFailure(compErr)}`);
          log.error('compensation failed', { orderId, compensation: c.name, error: describeFailure(compErr) });
        }
      }
      state.currentStep = null;
      if (compensationFailures.length) state.failureReason = `${reason} (${compensationFailures.join('; ')})`;
      await setStatus(OrderStatus.Failed, state.failureReason ?? reason);
    });
    throw ApplicationFailure.nonRetryable(`order ${orderId} failed: ${reason}`, ErrorType.OrderFailed, {
      orderId,
      reason,
      compensationFailures,
    });
  }
}
