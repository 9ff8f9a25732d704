/**
 * The workflow's Query and Update handlers (the order's status, a retry's answer, cancel, retry, resolve, close) and
 * the validators that refuse what the order cannot take now. They read and change the order's run through
 * {@link OrderHandlerHost} (the workflow's OrderLifecycle): an Update records the operator's decision, and the run
 * waits for it (`awaitOperator` in order-fulfilment.workflow.ts). Sandbox-safe.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  currentUpdateInfo,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { kit } from './activity-proxies.js';
import { ErrorType } from './errors.js';
import { describeFailure, notAwaitingResolution, notCancellable, requireText } from './failure-wording.js';
import {
  OrderStatus,
  REMEMBERED_UPDATES,
  Resolution,
  cancelOrderUpdate,
  closeOrderUpdate,
  isTerminalStatus,
  orderStatusQuery,
  resolveStepUpdate,
  retryAnswerQuery,
  retryStepUpdate,
  type OperatorAnswer,
  type OrderAttention,
  type OrderClosedByOperatorResult,
  type OrderFulfilmentState,
  type ResolveStepResult,
  type RetryStepResult,
} from './order-fulfilment.contract.js';
import { FINAL_FAILURE_RANK, StepPhase, type OrderPlan, type PlannedStep } from './order-plan.js';

/** What the handlers read and change of one order's run (the workflow's OrderLifecycle). */
export interface OrderHandlerHost {
  readonly orderId: string;
  /** The order as the workflow knows it (the `orderStatus` query's answer). */
  readonly state: OrderFulfilmentState;
  readonly plan: OrderPlan;
  /** Answers of the operator Updates this order accepted, by id, oldest first. */
  readonly answered: Map<string, OperatorAnswer>;
  /** Operator retries per step, by name. */
  readonly retries: Map<string, number>;
  /** The cancel request being honoured, until it has its answer. */
  readonly cancelRequest: CancelRequest | null;
  /** The cancel request that cancelled the order, if one did. */
  readonly cancelled: CancelRequest | null;
  /** Whether the order is halting (fencing and compensating). */
  readonly compensating: boolean;
  /** The operator's decision on what the order waits on; `pending` while a resolve or close records itself. */
  decision: OperatorDecision | { kind: 'pending' } | null;
  /** Starts honouring a cancel request (the running pre-pivot steps are cancelled and the order fenced). */
  requestCancel(reason: string, source: CancelRequest['source']): CancelRequest;
  /** The pivot step's name, for messages. */
  pivotName(): string;
}

/** What an order waits on for an operator, and the ways out its wait offers. */
export interface OperatorWait {
  /** The waiting step (or compensation: its name and `undo: <summary>`). */
  step: Pick<PlannedStep, 'name' | 'summary'>;
  /** The rank of its `attention_required` status write. */
  rank: number;
  reason: string;
  outcomeUnknown: boolean;
  /** Why in words, for the current details. */
  why: string;
  kind: 'step' | 'compensation';
  resolutions: Resolution[];
  closable: boolean;
  /** False where the run's state cannot be carried to a next run (a compensation): no continue-as-new. */
  continueAsNew?: boolean;
}

/** The operator's decision on a wait. */
export type OperatorDecision =
  | { kind: 'retry' }
  | { kind: 'resolve'; outcome: Resolution; providerId: string | null }
  | { kind: 'close'; answer: OrderClosedByOperatorResult };

/** A cancel request and, once known, its answer. */
export interface CancelRequest {
  reason: string;
  source: 'update' | 'workflow-cancel';
  outcome: { cancelled: true } | { cancelled: false; why: string } | null;
}

/** Registers the order's Query and Update handlers, with their validators and descriptions. */
export function registerOrderHandlers(order: OrderHandlerHost): void {
  const { state } = order;
  // Descriptions: what `temporal workflow metadata` and the UI list for each handler.
  setHandler(orderStatusQuery, () => state, {
    description: 'The order as the workflow knows it: status, current step, completed steps, what it waits for.',
  });
  setHandler(retryAnswerQuery, (updateId) => order.answered.get(updateId) ?? null, {
    description: 'The answer of an earlier retry Update by its id (kept across continue-as-new), or null.',
  });
  setHandler(
    cancelOrderUpdate,
    async ({ reason }) => {
      const request = order.cancelled ?? order.cancelRequest ?? order.requestCancel(reason, 'update');
      // Non-cancellable: a workflow cancel request arriving meanwhile must not fail this Update; it gets the
      // same answer as the order.
      await CancellationScope.nonCancellable(() => condition(() => request.outcome !== null));
      const outcome = request.outcome!;
      if (!outcome.cancelled) throw notCancellable(order.orderId, outcome.why);
      return { orderId: order.orderId, status: OrderStatus.Cancelled, reason: request.reason };
    },
    {
      validator: (arg) => {
        const reason: unknown = arg?.reason;
        if (typeof reason !== 'string' || reason.trim() === '' || reason.length > 500) {
          throw ApplicationFailure.nonRetryable('reason must be a string of 1..500 characters', ErrorType.Validation);
        }
        if (order.cancelled || order.cancelRequest) return; // joins the request under way, or its answer
        if (state.pivotPassed) throw notCancellable(order.orderId, `the ${order.pivotName()} was already done`);
        if (isTerminalStatus(state.status)) throw notCancellable(order.orderId, `the order is already ${state.status}`);
        if (state.attention) {
          throw notCancellable(order.orderId, `the order waits for an operator at ${state.attention.step}`);
        }
        if (order.compensating) throw notCancellable(order.orderId, 'the order is failing');
      },
      description: 'Cancel the order before its point of no return (compensates); refused once it passed it.',
    },
  );
  setHandler(
    retryStepUpdate,
    () => {
      // The same Update id again after a continue-as-new (Temporal de-duplicates within a run only): its answer.
      const id = currentUpdateInfo()?.id;
      const known = id === undefined ? undefined : order.answered.get(id);
      if (known) return known as RetryStepResult;
      const waiting = state.attention!;
      order.decision = { kind: 'retry' };
      waiting.retries += 1;
      order.retries.set(waiting.step, waiting.retries);
      const answer = { orderId: order.orderId, step: waiting.step, retry: waiting.retries };
      if (id !== undefined) remember(order, id, answer);
      return answer;
    },
    {
      validator: (arg) => {
        const step = arg?.step;
        const id = currentUpdateInfo()?.id;
        if (id !== undefined && order.answered.has(id)) return;
        if (!state.attention || order.decision) {
          throw ApplicationFailure.nonRetryable(
            `order ${order.orderId} is ${state.status} and does not wait for a retry`,
            ErrorType.OrderNotAwaitingRetry,
            { status: state.status, waitingStep: null },
          );
        }
        if (step !== undefined && step !== state.attention.step) {
          throw ApplicationFailure.nonRetryable(
            `order ${order.orderId} waits for a retry of ${state.attention.step}, not ${String(step)}`,
            ErrorType.OrderNotAwaitingRetry,
            { status: state.status, waitingStep: state.attention.step },
          );
        }
      },
      description:
        'Operator: retry the step the order waits on, after its cause was fixed (same Update id, same answer).',
    },
  );
  setHandler(
    resolveStepUpdate,
    async (input) => {
      const id = currentUpdateInfo()?.id;
      const known = id === undefined ? undefined : order.answered.get(id);
      if (known) return known as ResolveStepResult;
      const waiting = state.attention!;
      order.decision = { kind: 'pending' };
      try {
        // The audited write first (who, why, when; the claim settled): the order moves on only once it is stored.
        await kit.recordResolution({
          orderId: order.orderId,
          id: id ?? `resolve:${workflowInfo().runId}:${waiting.step}`,
          step: waiting.step,
          decision: input.outcome,
          reason: input.reason,
          by: input.by,
          ...(input.providerId ? { providerId: input.providerId } : {}),
          ...resolutionTarget(order, waiting, input.outcome),
        });
      } catch (err) {
        order.decision = null;
        throw ApplicationFailure.nonRetryable(
          `the resolution of ${waiting.step} could not be recorded: ${describeFailure(err)}`,
          'ResolutionNotRecordedError',
        );
      }
      const answer = { orderId: order.orderId, step: waiting.step, outcome: input.outcome, by: input.by };
      order.decision = { kind: 'resolve', outcome: input.outcome, providerId: input.providerId ?? null };
      if (id !== undefined) remember(order, id, answer);
      return answer;
    },
    {
      validator: (arg) => {
        const id = currentUpdateInfo()?.id;
        if (id !== undefined && order.answered.has(id)) return;
        requireText(arg?.reason, 'reason', 1000);
        requireText(arg?.by, 'by', 200);
        if (arg?.providerId !== undefined) requireText(arg.providerId, 'providerId', 200);
        const waiting = state.attention;
        if (!waiting || order.decision) throw notAwaitingResolution(order.orderId, state.status, null);
        if (arg?.step !== waiting.step) {
          throw notAwaitingResolution(order.orderId, state.status, waiting, `it waits on ${waiting.step}`);
        }
        if (!(waiting.resolutions ?? []).includes(arg.outcome)) {
          throw notAwaitingResolution(
            order.orderId,
            state.status,
            waiting,
            `${waiting.step} may be resolved ${(waiting.resolutions ?? []).join(' or ') || 'in no way'} here`,
          );
        }
      },
      description:
        'Operator: resolve what the order waits on as performed or not performed, with who and why (audited).',
    },
  );
  setHandler(
    closeOrderUpdate,
    async (input) => {
      const id = currentUpdateInfo()?.id;
      const known = id === undefined ? undefined : order.answered.get(id);
      if (known) return known as OrderClosedByOperatorResult;
      const waiting = state.attention!;
      order.decision = { kind: 'pending' };
      try {
        await kit.recordResolution({
          orderId: order.orderId,
          id: id ?? `close:${workflowInfo().runId}`,
          step: waiting.step,
          decision: 'closed',
          reason: input.reason,
          by: input.by,
          status: { status: OrderStatus.Closed, rank: FINAL_FAILURE_RANK },
        });
      } catch (err) {
        order.decision = null;
        throw ApplicationFailure.nonRetryable(
          `the close of order ${order.orderId} could not be recorded: ${describeFailure(err)}`,
          'ResolutionNotRecordedError',
        );
      }
      const answer: OrderClosedByOperatorResult = {
        orderId: order.orderId,
        status: OrderStatus.Closed,
        step: waiting.step,
        reason: input.reason,
        by: input.by,
      };
      order.decision = { kind: 'close', answer };
      if (id !== undefined) remember(order, id, answer);
      return answer;
    },
    {
      validator: (arg) => {
        const id = currentUpdateInfo()?.id;
        if (id !== undefined && order.answered.has(id)) return;
        requireText(arg?.reason, 'reason', 1000);
        requireText(arg?.by, 'by', 200);
        const waiting = state.attention;
        if (!waiting || order.decision) throw notAwaitingResolution(order.orderId, state.status, null);
        if (!waiting.closable) {
          throw notAwaitingResolution(
            order.orderId,
            state.status,
            waiting,
            'only an order whose step after the point of no return waits may be closed',
          );
        }
      },
      description: 'Operator: close an order whose step after the point of no return waits (nothing compensated).',
    },
  );
}

/**
 * What a resolution of `waiting` settles: the claim of the waiting step (its key from the plan) and, for a step
 * after the pivot resolved performed, the status it leads to (the step counts as done). A compensation's claim (a
 * provider compensation) is found by the activity from its name.
 */
function resolutionTarget(
  order: OrderHandlerHost,
  waiting: OrderAttention,
  outcome: Resolution,
): { key?: string; status?: { status: string; rank: number } } {
  if (waiting.kind === 'compensation') return {};
  const step = order.plan.steps.find((s) => s.name === waiting.step);
  if (!step) return {};
  const done = outcome === Resolution.Performed && step.phase === StepPhase.AfterPivot;
  return {
    ...(step.key ? { key: step.key } : {}),
    ...(done ? { status: { status: step.status, rank: step.rank } } : {}),
  };
}

/** Keeps the answer of an operator Update (the newest {@link REMEMBERED_UPDATES}). */
function remember(order: OrderHandlerHost, id: string, answer: OperatorAnswer): void {
  order.answered.set(id, answer);
  while (order.answered.size > REMEMBERED_UPDATES) order.answered.delete(order.answered.keys().next().value!);
}
