/**
 * Operator and customer actions on a running order workflow, sent as Temporal Updates (see
 * https://docs.temporal.io/encyclopedia/workflow-message-passing#sending-updates):
 * - {@link OrderWorkflowActions.cancel}: the `cancelOrder` Update, waited for up to a bound;
 * - {@link OrderWorkflowActions.retry}: the `retry` Update;
 * - {@link OrderWorkflowActions.resolve} and {@link OrderWorkflowActions.close}: the `resolve` and `close` Updates
 *   (an operator's audited decision on what an order waits on).
 *
 * Each method answers with an outcome (a tagged union) instead of throwing for the expected cases, so the HTTP
 * layer maps every case deliberately. Every error class the client can throw here is classified:
 * - `WorkflowUpdateFailedError` with an `ApplicationFailure` cause: the validator rejected the Update or the
 *   handler failed; we read `cause.type` (workflows/errors.ts), never `instanceof` on our own classes;
 * - `WorkflowNotFoundError`: "already completed" (the execution closed) or no execution at all;
 * - `WorkflowUpdateRPCTimeoutOrCancelledError`: our deadline passed before the Update's stage or outcome (the
 *   Update itself may still be admitted or run);
 * - `ServiceError` / gRPC UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED: Temporal unavailable.
 * Anything else (a bug, a refused request) is thrown to the caller.
 *
 * Update ids: the caller passes one derived from the request's `Idempotency-Key` (prefixed per action, so one key
 * used for a cancel and a retry names two Updates). Temporal de-duplicates Updates by id within a workflow run: a
 * repeated request with the same id gets the first Update's outcome, and a retry runs once.
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  type Client,
  WorkflowNotFoundError,
  type WorkflowHandle,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  WorkflowUpdateStage,
} from '@temporalio/client';
import { ErrorType } from '../../../workflows/errors.js';
import {
  cancelOrderUpdate,
  type CancelOrderInput,
  closeOrderUpdate,
  type CloseOrderInput,
  type OperatorAnswer,
  type OrderClosedByOperatorResult,
  resolveStepUpdate,
  type ResolveStepInput,
  type ResolveStepResult,
  type OrderCancelledResult,
  type OrderFulfilmentState,
  orderStatusQuery,
  orderWorkflowId,
  retryAnswerQuery,
  type RetryStepInput,
  type RetryStepResult,
  retryStepUpdate,
  reportEventUpdateName,
  type ReportEventInput,
  type ReportEventResult,
} from '../../../workflows/order-fulfilment.contract.js';
import {
  isTemporalUnavailable,
  isUpdateHandlerMissing,
  isWorkflowClosedError,
  type UpdateFailure,
  updateFailureOf,
} from '../../temporal/temporal-errors.js';
import {
  RETRY_UPDATE_TIMEOUT_MS,
  TEMPORAL_CALL_TIMEOUT_MS,
  TEMPORAL_CLIENT,
} from '../../temporal/temporal.constants.js';

/** Outcomes every action shares: the workflow cannot be reached or is not running. */
export type WorkflowUnreachableOutcome =
  /** The execution has closed (`workflowStatus`: COMPLETED, FAILED, CANCELLED, TERMINATED, TIMED_OUT, ...). */
  | { kind: 'closed'; workflowStatus: string }
  /** There is no execution with the order's workflow id. */
  | { kind: 'not-found' }
  /** Temporal is unreachable or rate-limits us; try again later. */
  | { kind: 'unavailable'; error: unknown };

/** Outcome of {@link OrderWorkflowActions.cancel}. */
export type CancelOrderOutcome =
  /** The order was compensated and is `cancelled`. */
  | { kind: 'cancelled'; result: OrderCancelledResult }
  /**
   * `OrderNotCancellableError`: the validator refused (confirmation sent, final, waits for an operator), or the
   * handler found the confirmation accepted by the provider before the cancel took effect.
   */
  | { kind: 'refused'; failure: UpdateFailure }
  /** The Update failed with another failure type (e.g. the execution has no `cancelOrder` handler). */
  | { kind: 'failed'; failure: UpdateFailure; handlerMissing: boolean }
  /** The bound passed before the outcome was known; the same Update id later returns it. */
  | { kind: 'pending' }
  | WorkflowUnreachableOutcome;

/** Outcome of {@link OrderWorkflowActions.retry}. */
export type RetryStepOutcome =
  /** The retry has started through the `retry` Update (`retry` is the operator retry's number). */
  | { kind: 'started'; result: RetryStepResult }
  /**
   * The workflow does not wait for a retry (of `step`, when given). `failure` is the validator's
   * `OrderNotAwaitingRetryError`; `state` is the workflow's live view, when its `status` query answered, to say
   * what it waits for.
   */
  | { kind: 'refused'; failure: UpdateFailure; state: OrderFulfilmentState | null }
  /** No worker completed the Update within {@link RETRY_UPDATE_TIMEOUT_MS}; repeat with the same Update id. */
  | { kind: 'timeout' }
  | WorkflowUnreachableOutcome;

/** Outcome of {@link OrderWorkflowActions.resolve} and {@link OrderWorkflowActions.close}. */
export type OperatorActionOutcome<T> =
  /** The decision is recorded (who, why, when) and the order goes on from it. */
  | { kind: 'done'; result: T }
  /**
   * The workflow does not take it: `OrderNotAwaitingResolutionError` (nothing waits, another step waits, the wait does
   * not offer that resolution or a close; details `waitingStep`, `resolutions`, `closable`) or `ValidationError`.
   * `state` is the workflow's live view when its `status` query answered.
   */
  | { kind: 'refused'; failure: UpdateFailure; state: OrderFulfilmentState | null }
  /** The workflow took it but could not record it (the database failed for good); nothing changed, it still waits. */
  | { kind: 'not-recorded'; failure: UpdateFailure }
  /** No worker completed the Update within {@link RETRY_UPDATE_TIMEOUT_MS}; repeat with the same Update id. */
  | { kind: 'timeout' }
  | WorkflowUnreachableOutcome;

/** Options of {@link OrderWorkflowActions.cancel}. */
export interface CancelOrderOptions {
  /** Update id; the same id for a repeated request returns the first Update's outcome. */
  updateId: string;
  /** Epoch ms until which to wait for the outcome (accepted, then completed), before answering `pending`. */
  deadline: number;
}

@Injectable()
export class OrderWorkflowActions {
  private readonly logger = new Logger(OrderWorkflowActions.name);

  constructor(@Inject(TEMPORAL_CLIENT) private readonly client: Client) {}

  /**
   * Sends the `cancelOrder` Update to `order-<orderId>` and waits until `options.deadline` for its outcome:
   * `startUpdate(..., { waitForStage: ACCEPTED })`, then the handle's `result()`, both under the caller's deadline.
   * Before that, one `describe` (within {@link TEMPORAL_CALL_TIMEOUT_MS} and the deadline) tells an unreachable
   * Temporal, a missing and a closed execution apart from a slow one.
   * @throws the client's error for anything not listed in {@link CancelOrderOutcome} (a bug, a refused request).
   */
  async cancel(orderId: string, input: CancelOrderInput, options: CancelOrderOptions): Promise<CancelOrderOutcome> {
    const handle = this.client.workflow.getHandle(orderWorkflowId(orderId));
    const { deadline } = options;
    const unreachable = await this.checkRunning(handle, deadline);
    if (unreachable) return unreachable;

    try {
      const update = await this.client.withDeadline(deadline, () =>
        handle.startUpdate(cancelOrderUpdate, {
          args: [input],
          updateId: options.updateId,
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        }),
      );
      const result = await this.client.withDeadline(deadline, () => update.result());
      return { kind: 'cancelled', result };
    } catch (err) {
      if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return { kind: 'pending' };
      const failure = updateFailureOf(err);
      if (failure?.type === ErrorType.OrderNotCancellable) return { kind: 'refused', failure };
      if (failure) return { kind: 'failed', failure, handlerMissing: isUpdateHandlerMissing(err) };
      return this.classifyUnreachable(err, handle);
    }
  }

  /**
   * Asks the order's workflow to retry the step it waits on: the `retry` Update with `updateId`, bounded by
   * {@link RETRY_UPDATE_TIMEOUT_MS}. It completes once the retry has started, so `started` means the workflow
   * really runs the step again.
   * @throws the client's error for anything not listed in {@link RetryStepOutcome}.
   */
  async retry(orderId: string, input: RetryStepInput, updateId: string): Promise<RetryStepOutcome> {
    const handle = this.client.workflow.getHandle(orderWorkflowId(orderId));
    const unreachable = await this.checkRunning(handle);
    if (unreachable) return unreachable;

    try {
      const result = await this.client.withDeadline(Date.now() + RETRY_UPDATE_TIMEOUT_MS, () =>
        handle.executeUpdate(retryStepUpdate, { args: [input], updateId }),
      );
      return { kind: 'started', result };
    } catch (err) {
      if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return { kind: 'timeout' };
      const failure = updateFailureOf(err);
      if (failure?.type === ErrorType.OrderNotAwaitingRetry) {
        return { kind: 'refused', failure, state: await this.queryState(handle) };
      }
      if (failure) throw err;
      return this.classifyUnreachable(err, handle);
    }
  }

  /**
   * Sends the `resolve` Update (an operator's audited decision: performed or not performed) with `updateId`, bounded
   * by {@link RETRY_UPDATE_TIMEOUT_MS}. It completes once the decision is recorded.
   * @throws the client's error for anything not listed in {@link OperatorActionOutcome}.
   */
  resolve(
    orderId: string,
    input: ResolveStepInput,
    updateId: string,
  ): Promise<OperatorActionOutcome<ResolveStepResult>> {
    return this.operatorUpdate(orderId, (handle) =>
      handle.executeUpdate(resolveStepUpdate, { args: [input], updateId }),
    );
  }

  /**
   * Sends the `close` Update (an operator closes an order whose step after the pivot waits) with `updateId`, bounded
   * by {@link RETRY_UPDATE_TIMEOUT_MS}. It completes once the close is recorded and the order is `closed`.
   * @throws the client's error for anything not listed in {@link OperatorActionOutcome}.
   */
  close(
    orderId: string,
    input: CloseOrderInput,
    updateId: string,
  ): Promise<OperatorActionOutcome<OrderClosedByOperatorResult>> {
    return this.operatorUpdate(orderId, (handle) =>
      handle.executeUpdate(closeOrderUpdate, { args: [input], updateId }),
    );
  }

  /**
   * Reports an outside event (`packed`) to the order's workflow: the `report<Event>` Update with `updateId`, bounded by
   * {@link RETRY_UPDATE_TIMEOUT_MS}. `refused`: `OrderNotAwaitingEventError` or `ValidationError`, or the workflow has
   * no such Update (its plan has no step for the event: `failure.type` is `UpdateHandlerMissing`).
   * @throws the client's error for anything not listed in {@link OperatorActionOutcome}.
   */
  async reportEvent(
    orderId: string,
    event: string,
    input: ReportEventInput,
    updateId: string,
  ): Promise<OperatorActionOutcome<ReportEventResult>> {
    const update = reportEventUpdateName(event);
    const handle = this.client.workflow.getHandle(orderWorkflowId(orderId));
    const unreachable = await this.checkRunning(handle);
    if (unreachable) return unreachable;
    try {
      const result = await this.client.withDeadline(Date.now() + RETRY_UPDATE_TIMEOUT_MS, () =>
        handle.executeUpdate<ReportEventResult, [ReportEventInput]>(update, { args: [input], updateId }),
      );
      return { kind: 'done', result };
    } catch (err) {
      if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return { kind: 'timeout' };
      if (isUpdateHandlerMissing(err)) {
        const missing = updateFailureOf(err)!;
        return { kind: 'refused', failure: { ...missing, type: 'UpdateHandlerMissing' }, state: null };
      }
      const failure = updateFailureOf(err);
      if (failure?.type === ErrorType.OrderNotAwaitingEvent || failure?.type === ErrorType.Validation) {
        return { kind: 'refused', failure, state: null };
      }
      if (failure) return { kind: 'not-recorded', failure };
      return this.classifyUnreachable(err, handle);
    }
  }

  /** One resolve or close Update, classified. */
  private async operatorUpdate<T>(
    orderId: string,
    send: (handle: WorkflowHandle) => Promise<T>,
  ): Promise<OperatorActionOutcome<T>> {
    const handle = this.client.workflow.getHandle(orderWorkflowId(orderId));
    const unreachable = await this.checkRunning(handle);
    if (unreachable) return unreachable;
    try {
      const result = await this.client.withDeadline(Date.now() + RETRY_UPDATE_TIMEOUT_MS, () => send(handle));
      return { kind: 'done', result };
    } catch (err) {
      if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return { kind: 'timeout' };
      const failure = updateFailureOf(err);
      if (failure?.type === ErrorType.OrderNotAwaitingResolution || failure?.type === ErrorType.Validation) {
        return { kind: 'refused', failure, state: await this.queryState(handle) };
      }
      if (failure) return { kind: 'not-recorded', failure };
      return this.classifyUnreachable(err, handle);
    }
  }

  /**
   * The answer of the retry Update `updateId` of the order, when its workflow accepted it: see
   * {@link OrderWorkflowActions.previousAnswer}. Null when it is not a retry's answer.
   */
  async previousRetry(orderId: string, updateId: string): Promise<RetryStepResult | null> {
    const answer = await this.previousAnswer(orderId, updateId);
    return answer && 'retry' in answer ? answer : null;
  }

  /**
   * The answer of the operator Update (retry, resolve, close) `updateId` of the order, when its workflow accepted it:
   * from Temporal's record of the Update (PollWorkflowExecutionUpdate, which answers for a closed run too), else from
   * the workflow's own memory of the latest answers (the `retryAnswer` query; it survives a continue-as-new). Null when
   * neither knows it (never sent, refused, or Temporal unreachable) within {@link TEMPORAL_CALL_TIMEOUT_MS} each.
   * Never throws.
   */
  async previousAnswer(orderId: string, updateId: string): Promise<OperatorAnswer | null> {
    const handle = this.client.workflow.getHandle(orderWorkflowId(orderId));
    try {
      return await this.client.withDeadline(Date.now() + TEMPORAL_CALL_TIMEOUT_MS, () =>
        handle.getUpdateHandle<OperatorAnswer>(updateId).result(),
      );
    } catch (err) {
      this.logger.debug({ err, orderId, updateId }, 'no record of the operator Update; asking the workflow');
    }
    try {
      return await this.client.withDeadline(Date.now() + TEMPORAL_CALL_TIMEOUT_MS, () =>
        handle.query(retryAnswerQuery, updateId),
      );
    } catch (err) {
      this.logger.debug({ err, orderId, updateId }, 'the workflow did not say whether it accepted the Update');
      return null;
    }
  }

  /**
   * The workflow's live state through the `status` query, or null when it does not answer within
   * {@link TEMPORAL_CALL_TIMEOUT_MS} (no worker) or fails. Never throws.
   */
  async queryState(handle: WorkflowHandle): Promise<OrderFulfilmentState | null> {
    try {
      return await this.client.withDeadline(Date.now() + TEMPORAL_CALL_TIMEOUT_MS, () =>
        handle.query(orderStatusQuery),
      );
    } catch (err) {
      this.logger.debug({ err, workflowId: handle.workflowId }, 'status query did not answer');
      return null;
    }
  }

  /**
   * One `describe` of the execution: null when it is running, otherwise why an action cannot reach it.
   * @throws the client's error when it is neither "not found" nor "unavailable".
   */
  private async checkRunning(
    handle: WorkflowHandle,
    deadline = Date.now() + TEMPORAL_CALL_TIMEOUT_MS,
  ): Promise<WorkflowUnreachableOutcome | null> {
    try {
      const description = await this.client.withDeadline(
        Math.min(deadline, Date.now() + TEMPORAL_CALL_TIMEOUT_MS),
        () => handle.describe(),
      );
      const status = description.status.name;
      return status === 'RUNNING' || status === 'PAUSED' ? null : { kind: 'closed', workflowStatus: status };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return { kind: 'not-found' };
      if (isTemporalUnavailable(err)) return { kind: 'unavailable', error: err };
      throw err;
    }
  }

  /**
   * Maps the errors a workflow call can meet once the execution was seen running.
   * @throws `err` when it is none of them.
   */
  private async classifyUnreachable(err: unknown, handle: WorkflowHandle): Promise<WorkflowUnreachableOutcome> {
    if (isWorkflowClosedError(err)) {
      // It closed between the describe and the call: ask once more for its final status (best effort).
      const closed = await this.checkRunning(handle).catch(() => null);
      return { kind: 'closed', workflowStatus: closed?.kind === 'closed' ? closed.workflowStatus : 'CLOSED' };
    }
    if (err instanceof WorkflowNotFoundError) return { kind: 'not-found' };
    if (isTemporalUnavailable(err)) return { kind: 'unavailable', error: err };
    throw err;
  }
}
