/**
 * Order actions: cancel, retry, resolve and close an order through the Updates of its workflow
 * ({@link OrderWorkflowActions}), each outcome answered as the API's response or problem.
 */
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { ErrorType } from '../../workflows/errors.js';
import { StepPhase } from '../../workflows/order-plan.js';
import {
  isTerminalStatus,
  type OperatorAnswer,
  type OrderAttention,
  type OrderFulfilmentState,
  OrderStatus,
  type OrderStep,
} from '../../workflows/order-fulfilment.contract.js';
import { ProblemException, ServiceUnavailableProblem } from '../common/problem-details.js';
import { IdempotencyKeyReusedException } from '../idempotency/idempotency.service.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import {
  OrderWorkflowActions,
  type OperatorActionOutcome,
  type RetryStepOutcome,
  type WorkflowUnreachableOutcome,
} from './workflow/order-workflow-actions.service.js';
import { OrderWorkflowStarter } from './workflow/order-workflow-starter.service.js';
import { OrderWorkflowReconciler, resetCommand } from './workflow/order-workflow-reconciler.service.js';
import { isTemporalUnavailable, type UpdateFailure } from '../temporal/temporal-errors.js';
import { RETRY_UPDATE_TIMEOUT_MS } from '../temporal/temporal.constants.js';
import type {
  CancelOrderRequest,
  CloseOrderRequest,
  ResolvedView,
  ResolveOrderRequest,
  RetryStartedView,
} from './order-actions.dto.js';
import { ALL_ORDERS, type OrderAccess } from './order-access.js';
import { OrderProblemType } from './order-problems.js';
import type { OrderView } from './order-response.dto.js';
import { OrdersService } from './orders.service.js';

/** Status code and body of an order action that succeeded or is still under way. */
export interface OrderActionResponse {
  /** 200: done; 202: under way (repeat the request with the same Idempotency-Key for the outcome). */
  status: 200 | 202;
  order: OrderView;
}

/** Who acts on an order and under which key ({@link OrderActionsService.cancel}, {@link OrderActionsService.retry}). */
export interface OrderActionOptions {
  /** Whose orders the caller may act on; others' answer 404. */
  access: OrderAccess;
  /** `<client>:<Idempotency-Key>`, naming the Temporal Update; without it every request is a new Update. */
  actionKey?: string;
  /** The `Idempotency-Key` as sent (for the 422 of a reused key); defaults to `actionKey`. */
  idempotencyKey?: string;
}

/** What a resolve or close records under its Update id: compared with a later request under the same key. */
interface ExpectedRecord {
  decision: string;
  reason: string;
  /** The step resolved; undefined for a close (it applies to whatever the order waits on). */
  step?: string;
  providerId: string | null;
}

/** `Retry-After` of 503 answers from order actions, seconds. */
export const RETRY_AFTER_SECONDS = 5;

/** The order actions of the API (`POST /orders/:id/cancel`, `/retry`, `/resolve`, `/close`). */
@Injectable()
export class OrderActionsService {
  private readonly logger = new Logger(OrderActionsService.name);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    private readonly orders: OrdersService,
    private readonly starter: OrderWorkflowStarter,
    private readonly actions: OrderWorkflowActions,
    private readonly reconciler: OrderWorkflowReconciler,
  ) {}

  /**
   * Cancels an order through the `cancelOrder` Update of its workflow (see {@link OrderWorkflowActions.cancel}),
   * waiting up to `CANCEL_WAIT_MS` for the outcome.
   *
   * - 200 with the order (`cancelled`) when the cancel is done; also for an order that is already `cancelled`, so a
   *   repeated request gets the same answer after the workflow has closed.
   * - 202 with the order as it is now when the bound passed before the outcome: the same `Idempotency-Key` names
   *   the same Update (id `cancel:<client>:<key>`), so repeating the request returns its outcome.
   * An order whose workflow was never started (Temporal was down at POST time) gets it started first (idempotent,
   * as the reconciler would), so there is a workflow to decide the cancel.
   * @param options.access whose orders the caller may cancel (others' answer 404).
   * @param options.actionKey the request's `Idempotency-Key` scoped to its client (`<client>:<key>`); without it
   *   every request is a new Update.
   * @throws ProblemException 404 (no such order); 409 `order-not-cancellable` (shipped: the detail says so; final,
   *   waits for an operator, the workflow closed or has no cancel handler; extension `orderStatus`);
   *   {@link ServiceUnavailableProblem} 503 when Temporal is unavailable.
   */
  async cancel(id: string, request: CancelOrderRequest, options: OrderActionOptions): Promise<OrderActionResponse> {
    // The bound holds from the request's arrival: every wait below (the order, the start, the Update) fits in it.
    const deadline = Date.now() + this.config.CANCEL_WAIT_MS;
    const order = await this.orders.get(id, options.access);
    if (order.status === OrderStatus.Cancelled) return { status: 200, order };
    if (isTerminalStatus(order.status)) {
      throw notCancellable(order, `Order ${id} is already ${order.status}; a final order cannot be cancelled`);
    }
    if (order.workflowStartedAt === null) await this.startForAction(id, deadline);

    const outcome = await this.actions.cancel(
      id,
      { reason: request.reason },
      { updateId: `cancel:${options.actionKey ?? randomUUID()}`, deadline },
    );
    switch (outcome.kind) {
      case 'cancelled':
        // With a reused key the result is the first cancel's, whatever this request's reason: same key, same
        // answer. (The result's reason is the one the order was cancelled with, which may be an earlier request's.)
        return { status: 200, order: await this.orders.get(id, ALL_ORDERS) };
      case 'pending':
        return { status: 202, order: await this.orders.get(id, ALL_ORDERS) };
      case 'refused': {
        const current = await this.orders.get(id, ALL_ORDERS);
        throw notCancellable(
          current,
          pastPivotDetail(current) ?? `Order ${id} cannot be cancelled: ${refusalWhy(outcome.failure)}`,
        );
      }
      case 'failed': {
        const current = await this.orders.get(id, ALL_ORDERS);
        if (outcome.handlerMissing) {
          throw notCancellable(
            current,
            `Order ${id}'s workflow was started before cancellation existed and cannot be cancelled through the API`,
          );
        }
        this.logger.warn({ orderId: id, failure: outcome.failure }, 'cancelOrder Update failed');
        // The failure's message is the workflow's internal text: logged above, not answered.
        throw notCancellable(current, `The cancel of order ${id} failed (${outcome.failure.type})`);
      }
      default: {
        const current = await this.afterUnreachable(id, outcome, 'cancel');
        if (current.status === OrderStatus.Cancelled) return { status: 200, order: current };
        throw notCancellable(current, closedDetail(current, outcome));
      }
    }
  }

  /**
   * Asks the order's workflow to retry the step it waits on in `attention_required` (see
   * {@link OrderWorkflowActions.retry}); answers once the retry has started.
   * @param step when given, the retry happens only if the order waits on this step.
   * @param options.access whose orders the caller may retry (others' answer 404).
   * @param options.actionKey the request's `Idempotency-Key` scoped to its client (`<client>:<key>`): the Update
   *   id is `retry:<client>:<key>`, so a repeated request with the same key is one retry.
   * @throws ProblemException 404 (no such order); 409 `order-not-awaiting-retry` (the workflow waits for no retry,
   *   or for another step; extensions `orderStatus`, `waitingFor`); {@link ServiceUnavailableProblem} 503 when
   *   Temporal is unavailable or no worker answered.
   */
  async retry(id: string, step: OrderStep | undefined, options: OrderActionOptions): Promise<RetryStartedView> {
    const order = await this.orders.get(id, options.access);
    const updateId = `retry:${options.actionKey ?? randomUUID()}`;
    // A request repeated with the same key gets the outcome of the retry it started, whatever happened since (its
    // step may have completed the order, its workflow may have closed or continued as new).
    const previous = async (): Promise<RetryStartedView | null> => {
      if (options.actionKey === undefined) return null;
      const answer = await this.actions.previousRetry(id, updateId);
      return answer ? { ...answer, order: await this.orders.get(id, ALL_ORDERS) } : null;
    };
    if (isTerminalStatus(order.status)) {
      const repeated = await previous();
      if (repeated) return repeated;
      throw notAwaitingRetry(order, null, `Order ${id} is ${order.status}; a final order has nothing to retry`);
    }
    const outcome = await this.actions.retry(id, step === undefined ? {} : { step }, updateId);
    if (outcome.kind === 'closed' || outcome.kind === 'not-found') {
      const repeated = await previous();
      if (repeated) return repeated;
    }
    switch (outcome.kind) {
      case 'started':
        return { ...outcome.result, order: await this.orders.get(id, ALL_ORDERS) };
      case 'refused': {
        const current = await this.orders.get(id, ALL_ORDERS);
        // The refusal's own details say what waited when the workflow refused (null: nothing, e.g. another operator
        // action was accepted first); the state queried after it may still show the wait being left.
        const waitingFor = refusalNamesWait(outcome.failure)
          ? detailOf(outcome.failure, 'waitingStep')
          : (outcome.state?.attention?.step ?? null);
        throw notAwaitingRetry(current, waitingFor, refusedRetryDetail(id, step, outcome, waitingFor, current));
      }
      case 'timeout':
        throw new ServiceUnavailableProblem(
          `The workflow of order ${id} did not take the retry within ${RETRY_UPDATE_TIMEOUT_MS / 1000} s (is a worker ` +
            'running?); repeat the request with the same Idempotency-Key: it is the same retry',
          RETRY_AFTER_SECONDS,
        );
      default: {
        const current = await this.afterUnreachable(id, outcome, 'retry');
        throw notAwaitingRetry(current, null, closedDetail(current, outcome));
      }
    }
  }

  /**
   * An operator's audited decision on what an order in `attention_required` waits on (see
   * {@link OrderWorkflowActions.resolve}): `performed` or `not_performed`, with why; who is `options.by`. Answers once
   * the decision is recorded (who, why, when, in `order_resolutions`) and the order goes on from it.
   * @param options.actionKey names the Update (`resolve:<client>:<key>`): the same key again gets the same answer.
   * @throws ProblemException 404 (no such order); 409 `order-not-awaiting-resolution` (it waits for no operator,
   *   waits on another step, or its wait does not offer that resolution; extensions `orderStatus`, `waitingFor`,
   *   `resolutions`, `closable`); {@link ServiceUnavailableProblem} 503 when Temporal is unavailable, no worker
   *   answered, or the decision could not be recorded (nothing changed: repeat with the same key).
   */
  async resolve(
    id: string,
    body: ResolveOrderRequest,
    options: OrderActionOptions & { by: string },
  ): Promise<ResolvedView> {
    const input = {
      step: body.step,
      outcome: body.outcome,
      reason: body.reason,
      by: options.by,
      ...(body.providerId === undefined ? {} : { providerId: body.providerId }),
    };
    return this.operatorAction(
      id,
      'resolve',
      options,
      { decision: body.outcome, reason: body.reason, step: body.step, providerId: body.providerId ?? null },
      (updateId) => this.actions.resolve(id, input, updateId),
      (a) => ('outcome' in a ? a : null),
    ).then(async (answer) => ({ ...answer, order: await this.orders.get(id, ALL_ORDERS) }));
  }

  /**
   * Closes an order whose step after the pivot waits for an operator (see {@link OrderWorkflowActions.close}): it
   * ends `closed` with the reason, the remaining steps do not run, nothing is compensated. Answers with the order.
   * @param options.actionKey names the Update (`close:<client>:<key>`): the same key again gets the same answer.
   * @throws as {@link OrdersService.resolve}.
   */
  async close(id: string, body: CloseOrderRequest, options: OrderActionOptions & { by: string }): Promise<OrderView> {
    const input = { reason: body.reason, by: options.by };
    await this.operatorAction(
      id,
      'close',
      options,
      { decision: 'closed', reason: body.reason, providerId: null },
      (updateId) => this.actions.close(id, input, updateId),
      (a) => ('status' in a ? a : null),
    );
    return this.orders.get(id, ALL_ORDERS);
  }

  /**
   * The shared path of resolve and close: the Update, its repeated answer, and every outcome as a response. A key
   * already used for another decision (another order, step, outcome, reason or provider id: what the Update recorded
   * in `order_resolutions` under its id) is refused with 422 `idempotency-key-reused` before anything is sent, and
   * again after the Update for the loser of two requests sent at once (Temporal ran the first's only).
   */
  private async operatorAction<T>(
    id: string,
    action: 'resolve' | 'close',
    options: OrderActionOptions,
    expected: ExpectedRecord,
    send: (updateId: string) => Promise<OperatorActionOutcome<T>>,
    accept: (answer: OperatorAnswer) => T | null,
  ): Promise<T> {
    const order = await this.orders.get(id, options.access);
    const updateId = `${action}:${options.actionKey ?? randomUUID()}`;
    await this.refuseReusedKey(id, updateId, options, expected);
    // A request repeated with the same key gets the answer of the Update it sent, whatever happened since.
    const previous = async (): Promise<T | null> => {
      if (options.actionKey === undefined) return null;
      const answer = await this.actions.previousAnswer(id, updateId);
      return answer ? accept(answer) : null;
    };
    if (isTerminalStatus(order.status)) {
      const repeated = await previous();
      if (repeated) return repeated;
      throw notAwaitingResolution(order, null, `Order ${id} is ${order.status}; a final order waits for nobody`);
    }
    const outcome = await send(updateId);
    if (outcome.kind !== 'unavailable') await this.refuseReusedKey(id, updateId, options, expected);
    if (outcome.kind === 'closed' || outcome.kind === 'not-found') {
      const repeated = await previous();
      if (repeated) return repeated;
    }
    switch (outcome.kind) {
      case 'done':
        return outcome.result;
      case 'refused': {
        const current = await this.orders.get(id, ALL_ORDERS);
        // What waited when the workflow refused, from the refusal's details (see the retry's refusal above).
        const attention = refusalNamesWait(outcome.failure)
          ? waitOfRefusal(outcome.failure)
          : (outcome.state?.attention ?? null);
        throw notAwaitingResolution(
          current,
          attention,
          outcome.failure.type === ErrorType.Validation
            ? `The ${action} of order ${id} was refused: ${outcome.failure.message}`
            : attention
              ? `Order ${id} cannot take this ${action}: it waits on ${attention.step} (resolutions: ` +
                `${(attention.resolutions ?? []).join(', ') || 'none'}; ${attention.closable ? 'it may be closed' : 'it may not be closed'})`
              : noLongerWaiting(id, outcome.state, current),
        );
      }
      case 'not-recorded':
        this.logger.warn({ orderId: id, failure: outcome.failure }, `${action} Update could not record the decision`);
        throw new ServiceUnavailableProblem(
          `The ${action} of order ${id} could not be recorded (the database failed); nothing changed: repeat the ` +
            'request with the same Idempotency-Key',
          RETRY_AFTER_SECONDS,
        );
      case 'timeout':
        throw new ServiceUnavailableProblem(
          `The workflow of order ${id} did not take the ${action} within ${RETRY_UPDATE_TIMEOUT_MS / 1000} s (is a ` +
            'worker running?); repeat the request with the same Idempotency-Key: it is the same action',
          RETRY_AFTER_SECONDS,
        );
      default: {
        const current = await this.afterUnreachable(id, outcome, action);
        throw notAwaitingResolution(current, null, closedDetail(current, outcome));
      }
    }
  }

  /**
   * Refuses a resolve or close whose `Idempotency-Key` recorded another decision (see {@link operatorAction}): the
   * same key with the same body goes on (and gets the first answer); without a key or a record, nothing to compare.
   * @throws IdempotencyKeyReusedException 422, the problem of `POST /orders` for a key reused with another body.
   */
  private async refuseReusedKey(
    id: string,
    updateId: string,
    options: OrderActionOptions,
    expected: ExpectedRecord,
  ): Promise<void> {
    if (options.actionKey === undefined) return;
    const recorded = await this.prisma.orderResolution.findUnique({ where: { id: updateId } });
    if (!recorded) return;
    const same =
      recorded.orderId === id &&
      recorded.decision === expected.decision &&
      recorded.reason === expected.reason &&
      (expected.step === undefined || recorded.step === expected.step) &&
      (recorded.providerId ?? null) === expected.providerId;
    if (!same) throw new IdempotencyKeyReusedException(options.idempotencyKey ?? options.actionKey);
  }

  /**
   * Starts the workflow of an order that has none yet, by `deadline` (epoch ms) at the latest.
   * @throws ServiceUnavailableProblem when Temporal is down or the start did not finish in time (nothing was asked of
   *   the workflow: the client repeats the request).
   */
  private async startForAction(id: string, deadline: number): Promise<void> {
    try {
      await this.starter.start(id, undefined, deadline);
    } catch (err) {
      if (isTemporalUnavailable(err) || Date.now() >= deadline) throw temporalUnavailable(err);
      throw err;
    }
  }

  /**
   * The order after an action found its workflow closed, missing or unreachable. An order that is not final is swept
   * at once ({@link OrderWorkflowReconciler.sweepNow}): flagged `attention_required` with the operator's exit in its
   * reason (or given its workflow's result), so the order as answered, and every later `GET`, says what the action
   * found instead of `cancellable: true` until the sweeper's next pass.
   * @throws ServiceUnavailableProblem for `unavailable`.
   */
  private async afterUnreachable(id: string, outcome: WorkflowUnreachableOutcome, action: string): Promise<OrderView> {
    if (outcome.kind === 'unavailable') throw temporalUnavailable(outcome.error);
    let current = await this.orders.get(id, ALL_ORDERS);
    if (!isTerminalStatus(current.status) && current.workflowStartedAt !== null) {
      const swept = await this.reconciler.sweepNow(id).catch((err: unknown) => {
        this.logger.warn({ err, orderId: id }, `${action}: could not sweep order ${id}; the sweeper's pass will`);
        return null;
      });
      if (swept !== null && swept !== 'running') current = await this.orders.get(id, ALL_ORDERS);
    }
    if (!isTerminalStatus(current.status)) {
      this.logger.warn(
        {
          orderId: id,
          outcome: outcome.kind,
          workflowStatus: 'workflowStatus' in outcome ? outcome.workflowStatus : null,
        },
        `${action}: the workflow of order ${id} is not running while the order is ${current.status}`,
      );
    }
    return current;
  }
}

/** 409 `order-not-cancellable` for `order`, with its status as the `orderStatus` extension. */
function notCancellable(order: OrderView, detail: string): ProblemException {
  return new ProblemException({
    type: OrderProblemType.OrderNotCancellable,
    detail,
    extensions: { orderStatus: order.status },
  });
}

/** What passing the point of no return means for the customer, by the pivot step's status. */
const PASSED_PIVOT: Record<string, string> = {
  shipped: 'it has shipped (the carrier accepted the parcel: the point of no return)',
  confirmation_sent: 'its confirmation was already sent (the point of no return of orders placed before 1.1)',
};

/**
 * The detail of a cancel refused because the order passed its pivot (the pivot step of its own plan is done, e.g.
 * the fence found the shipment `sent`): says so in the customer's words, e.g. "Order … cannot be cancelled: it has
 * shipped …"; null when the pivot is not done (the workflow's reason then stands).
 */
function pastPivotDetail(order: OrderView): string | null {
  const pivot = order.steps.find((s) => s.phase === StepPhase.Pivot);
  if (pivot?.state !== 'done') return null;
  const why = PASSED_PIVOT[pivot.status] ?? `its ${pivot.name} step, the point of no return, was done`;
  return `Order ${order.id} cannot be cancelled: ${why}`;
}

/** 409 `order-not-awaiting-retry` for `order`, with `orderStatus` and `waitingFor` (the step that waits, or null). */
function notAwaitingRetry(order: OrderView, waitingFor: string | null, detail: string): ProblemException {
  return new ProblemException({
    type: OrderProblemType.OrderNotAwaitingRetry,
    detail,
    extensions: { orderStatus: order.status, waitingFor },
  });
}

/**
 * 409 `order-not-awaiting-resolution` for `order`: its status, and what waits with the ways out it offers (`waitingFor`,
 * `resolutions`, `closable`; null, [] and false when nothing waits).
 */
function notAwaitingResolution(order: OrderView, attention: WaitShown | null, detail: string): ProblemException {
  return new ProblemException({
    type: OrderProblemType.OrderNotAwaitingResolution,
    detail,
    extensions: {
      orderStatus: order.status,
      waitingFor: attention?.step ?? null,
      resolutions: attention?.resolutions ?? [],
      closable: attention?.closable ?? false,
    },
  });
}

/** 503 for an unavailable Temporal. */
function temporalUnavailable(cause: unknown): ServiceUnavailableProblem {
  return new ServiceUnavailableProblem(
    'The workflow engine (Temporal) is unavailable; try again later',
    RETRY_AFTER_SECONDS,
    { cause },
  );
}

/** Why an action could not reach the workflow of `order` (closed, missing or unreachable). */
function closedDetail(order: OrderView, outcome: WorkflowUnreachableOutcome): string {
  if (isTerminalStatus(order.status)) return `Order ${order.id} is already ${order.status}`;
  if (order.workflowStartedAt === null) {
    return `The workflow of order ${order.id} has not been started yet (the reconciler starts it); try again later`;
  }
  const what = {
    closed: `has closed (${'workflowStatus' in outcome ? outcome.workflowStatus : ''})`,
    'not-found': 'does not exist',
    unavailable: 'is unreachable',
  }[outcome.kind];
  const exit =
    outcome.kind === 'closed'
      ? `nothing can act on the order until an operator resumes its workflow with \`${resetCommand(order.workflowId)}\` ` +
        '(docs/operations.md, "An order whose workflow closed under it"); then retry, resolve or cancel it as usual'
      : 'its history is gone: an operator settles its stock and invoice by hand';
  return `The workflow ${order.workflowId} ${what} while the order is ${order.status}; ${exit}`;
}

/**
 * A string member of the first detail of a workflow failure (our workflow attaches e.g. `{ why }` to
 * `OrderNotCancellableError` and `{ status, waitingStep }` to `OrderNotAwaitingRetryError`); null when absent.
 */
function detailOf(failure: UpdateFailure | null, member: string): string | null {
  const value = (failure?.details[0] as Record<string, unknown> | undefined)?.[member];
  return typeof value === 'string' ? value : null;
}

/** Why the workflow refused a cancel: its `why` detail, else its message. */
function refusalWhy(failure: UpdateFailure): string {
  // The workflow puts the internal failure text in parentheses (`… may have been sent (TimeoutFailure: …)`): cut it.
  return (detailOf(failure, 'why') ?? failure.message).replace(/ \([^]*\)/, '');
}

/** Whether a workflow refusal carries what waited (`waitingStep`, null when nothing did) in its first detail. */
function refusalNamesWait(failure: UpdateFailure): boolean {
  const first = failure.details[0];
  return typeof first === 'object' && first !== null && 'waitingStep' in first;
}

/** What a 409 of a resolve or close names of the wait: its step and the ways out it offers. */
type WaitShown = Pick<OrderAttention, 'step' | 'resolutions' | 'closable'>;

/** The wait a refusal of a resolve or close names (`waitingStep`, `resolutions`, `closable`); null when none. */
function waitOfRefusal(failure: UpdateFailure): WaitShown | null {
  const step = detailOf(failure, 'waitingStep');
  if (step === null) return null;
  const d = failure.details[0] as { resolutions?: unknown; closable?: unknown };
  return {
    step,
    resolutions: Array.isArray(d.resolutions) ? (d.resolutions as OrderAttention['resolutions']) : [],
    closable: d.closable === true,
  };
}

/**
 * Why an order refused an operator action while it waits for none: another action was accepted first (the wait the
 * workflow still shows is being left), or it never waited; with the order's status as stored now.
 */
function noLongerWaiting(id: string, state: OrderFulfilmentState | null, current: OrderView): string {
  if (state?.attention) {
    const now =
      current.status === OrderStatus.AttentionRequired
        ? `its status stays ${current.status} until the workflow moves on`
        : `the order is now ${current.status}`;
    return (
      `Order ${id} no longer waits for an operator: another operator action on ${state.attention.step} was accepted ` +
      `first; ${now}`
    );
  }
  const running = state?.currentStep ? ` (running ${state.currentStep})` : '';
  return `Order ${id} is not waiting for an operator: it is now ${current.status}${running}`;
}

/** What a refused retry's 409 says: what the workflow waited for when it refused, if anything. */
function refusedRetryDetail(
  id: string,
  step: OrderStep | undefined,
  outcome: Extract<RetryStepOutcome, { kind: 'refused' }>,
  waitingFor: string | null,
  current: OrderView,
): string {
  if (waitingFor !== null) return `Order ${id} waits for a retry of ${waitingFor}, not of ${step ?? 'another step'}`;
  if (refusalNamesWait(outcome.failure) || outcome.state) return noLongerWaiting(id, outcome.state, current);
  return `Order ${id} is not waiting for an operator retry: ${outcome.failure.message}`;
}
