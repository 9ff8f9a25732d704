/**
 * Compensation of a halted order: the undo of every step that acted, newest first, then the order's final status
 * (`failed` or `cancelled`). A compensation that fails for good makes the order wait for an operator. It reads and
 * changes the order's run through {@link CompensationHost} (the workflow's OrderLifecycle). Sandbox-safe.
 */
import { ApplicationFailure, CancellationScope, isCancellation, log, patched } from '@temporalio/workflow';
import { compensationActivity, kit } from './activity-proxies.js';
import { ErrorType } from './errors.js';
import { describeFailure, mayHaveActed } from './failure-wording.js';
import {
  COMPENSATION_FAILED,
  OrderStatus,
  Resolution,
  type OrderFulfilmentResult,
  type OrderFulfilmentState,
} from './order-fulfilment.contract.js';
import type { CancelRequest, OperatorDecision, OperatorWait } from './order-handlers.js';
import { COMPENSATION_ATTENTION_RANK, FINAL_FAILURE_RANK, type PlannedStep } from './order-plan.js';
import { PATCHES } from './patches.js';

/** What the compensation reads and changes of one order's run (the workflow's OrderLifecycle). */
export interface CompensationHost {
  readonly orderId: string;
  /** The order as the workflow knows it (the `orderStatus` query's answer). */
  readonly state: OrderFulfilmentState;
  /** The cancel request being honoured, until it has its answer. */
  cancelRequest: CancelRequest | null;
  /** The cancel request that cancelled the order, once it did. */
  cancelled: CancelRequest | null;
  /** Why the order halts, kept across an operator's resolution. */
  readonly halt: { reason: string; cancel: CancelRequest | null; failure: unknown } | null;
  /** The steps up to and including the pivot. */
  readonly beforeAndPivot: PlannedStep[];
  /** The index of the last pre-pivot step started. */
  readonly lastStarted: number;
  /** Shows what the order does now as the workflow's current details. */
  showDetails(now?: string): void;
  /** Records the order's status in the workflow state (and the search attribute where needed). */
  setStatus(status: string): void;
  /** Puts the order in `attention_required` and waits for the operator's decision. */
  awaitOperator(wait: OperatorWait): Promise<OperatorDecision>;
}

/**
 * Compensates a halted order: the compensation of every step that started in this workflow or that the fence
 * found committed (`committedRank`: a step ranked at or below it wrote its effect, though the history may not
 * say so when a worker died after the step's commit and before its workflow task completed), newest first
 * (no-ops when the step never acted), in a non-cancellable scope. A compensation that fails after its retries does
 * not stop the others; then the order waits for an operator in `attention_required` (`compensation_failed`) until
 * each failed one is retried successfully or resolved as done by hand: never a final order with its stock
 * reserved or its invoice issued. Then the final status, and the end.
 * @param committedRank `HaltOrderResult.rank`; null when the fence's result did not carry it (1.0.0 workers).
 */
export async function compensate(
  order: CompensationHost,
  reason: string,
  failure: unknown,
  committedRank: number | null,
): Promise<OrderFulfilmentResult> {
  const { orderId, state } = order;
  log.warn('order halted; compensating', { orderId, reason });
  // A cancel refused at an unknown outcome that an operator then resolved as not performed still cancels.
  const request = order.cancelRequest ?? order.halt?.cancel ?? null;
  const cancelled = request !== null;
  const failures: string[] = [];
  // Executions that started before the rank was read (1.0.0) compensate the steps they started, as they did.
  const byRank = patched(PATCHES.compensateByHaltedRank);
  const undo = order.beforeAndPivot
    .filter((s, i) => s.compensation && (i <= order.lastStarted || (byRank && (committedRank ?? -1) >= s.rank)))
    .reverse();
  // Executions that started before 1.1 name a compensation that failed for good in the reason and end anyway.
  const waits = patched(PATCHES.compensationFailureWaits);
  await CancellationScope.nonCancellable(async () => {
    let pending = undo;
    while (pending.length > 0) {
      const failed: Array<{ step: PlannedStep; err: unknown }> = [];
      for (const step of pending) {
        const name = step.compensation!.name;
        state.currentStep = name;
        order.showDetails(`**Compensating**: \`${name}\` (undo of \`${step.name}\`)`);
        try {
          await compensationActivity(step)({ orderId });
          state.completedSteps.push(name);
        } catch (err) {
          if (waits) failed.push({ step, err });
          else failures.push(`${name} failed: ${describeFailure(err)}`);
          log.error('compensation failed', { orderId, compensation: name, error: describeFailure(err) });
        }
      }
      state.currentStep = null;
      if (failed.length === 0) break;
      const [first] = failed;
      const name = first!.step.compensation!.name;
      const decision = await order.awaitOperator({
        step: { name, summary: `undo: ${first!.step.summary}` },
        rank: COMPENSATION_ATTENTION_RANK,
        reason: `${COMPENSATION_FAILED}: ${name} failed: ${describeFailure(first!.err)} (the order halted: ${reason})`,
        outcomeUnknown: mayHaveActed(first!.err),
        why: `the undo of ${first!.step.name} failed for good; the order cannot end before it is undone`,
        kind: 'compensation',
        resolutions: [Resolution.Performed],
        closable: false,
        continueAsNew: false,
      });
      if (decision.kind === 'resolve') state.completedSteps.push(name);
      // A retry runs every compensation still undone again; a resolution leaves the resolved one out.
      pending = (decision.kind === 'resolve' ? failed.slice(1) : failed).map((f) => f.step);
    }
    state.currentStep = null;
    state.failureReason = failures.length ? `${reason} (${failures.join('; ')})` : reason;
    const status = cancelled ? OrderStatus.Cancelled : OrderStatus.Failed;
    await kit.setOrderStatus({ orderId, status, rank: FINAL_FAILURE_RANK, failureReason: state.failureReason });
    order.setStatus(status);
    order.showDetails();
  });
  if (request) {
    request.outcome = { cancelled: true };
    order.cancelled = request;
    order.cancelRequest = null;
    if (request.source === 'workflow-cancel' && isCancellation(failure)) throw failure;
    return { orderId, status: OrderStatus.Cancelled, reason: request.reason };
  }
  throw ApplicationFailure.nonRetryable(`order ${orderId} failed: ${reason}`, ErrorType.OrderFailed, {
    orderId,
    reason,
    compensationFailures: failures,
  });
}
