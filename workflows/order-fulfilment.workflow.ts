/**
 * The order fulfilment workflow: reserve inventory → create invoice → send the order confirmation (the
 * pivot) → ship the order → sync the invoice to accounting. Each forward step writes the order's status in
 * its own transaction, so the workflow makes no separate status writes on the happy path.
 *
 * The order's one story:
 * - Before the pivot, a step that fails for good, or a cancel (the `cancelOrder` Update, or a workflow
 *   cancel request from the Temporal UI/CLI), halts the order and compensates: `haltOrder` first fences the
 *   confirmation (under the order-row lock it tombstones the email claim, so no attempt ever sends it), then
 *   the invoice is voided and the stock released (both no-ops when their step never acted), and the order
 *   ends `failed` or `cancelled`.
 * - If the fence finds the confirmation sent, the pivot was passed after all: the order goes on to completion
 *   and a cancel is refused. If it finds a call whose outcome is unknown (the provider may have acted), the
 *   order goes to a person: `attention_required` until the operator's `retry` Update.
 * - After the pivot nothing compensates: a step that fails for good puts the order in `attention_required`
 *   and the workflow waits for the `retry` Update; a workflow cancel request is refused (logged).
 * - A run on an order that is already final (a reset, or a second run after retention) changes nothing: the
 *   first step refuses it with `OrderClosedError`.
 *
 * Versioning: executions started before this shape have no `lifecycle-v2` patch marker and run the frozen
 * first version (legacy/order-fulfilment-v1.workflow.ts); those without the `sparse-status-attribute` marker upsert
 * the `OrderStatus` search attribute at every status; those without the `local-database-steps` marker run
 * reserveInventory and createInvoice as activity tasks, the others as local activities. See README, "Workflow
 * versioning".
 * Workflow id: `order-<orderId>` (orderWorkflowId). See https://docs.temporal.io/workflows
 */
import {
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  TemporalFailure,
  TimeoutFailure,
  condition,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { HaltOrderResult, OrderActivities } from '../activities/index.js';
import { attentionWrite, compensation, databaseStep, localDatabaseStep, providerCall } from './activity-options.js';
import { ErrorType } from './errors.js';
import { orderFulfilmentV1 } from './legacy/order-fulfilment-v1.workflow.js';
import {
  OrderStatus,
  OrderStep,
  SEARCH_ATTRIBUTES,
  cancelOrderUpdate,
  isTerminalStatus,
  orderStatusQuery,
  retryStepUpdate,
  type OrderCompletedResult,
  type OrderFulfilmentInput,
  type OrderFulfilmentResult,
  type OrderFulfilmentState,
  type OrderStatus as OrderStatusValue,
} from './order-fulfilment.contract.js';

/** Patch id of the lifecycle change (cancel Update, halt fence, shipping, attention after the pivot). */
export const LIFECYCLE_V2_PATCH = 'lifecycle-v2';

/**
 * Patch id of the sparse `OrderStatus` search attribute (issue 9, fewer visibility writes): the attribute is
 * upserted only where a visibility query needs it — `attention_required`, the final status, and the first status
 * after an operator's retry — instead of at every step; `OrderId` only when the starter did not set it.
 * Executions recorded before it (no marker) keep upserting at every step.
 */
export const SPARSE_STATUS_ATTRIBUTE_PATCH = 'sparse-status-attribute';

/**
 * Patch id of the local database steps (issue 9): reserveInventory and createInvoice run as local activities
 * (https://docs.temporal.io/local-activity) in the workflow task that starts the order, instead of as activity
 * tasks (12 fewer history events, 2 fewer workflow tasks). It implies the two patches before it, whose markers a
 * run with this one no longer records (one marker per new run instead of three).
 */
export const LOCAL_DATABASE_STEPS_PATCH = 'local-database-steps';

const db = proxyActivities<OrderActivities>(databaseStep);
/** The database steps as local activities (runs with the {@link LOCAL_DATABASE_STEPS_PATCH} marker). */
const localDb = proxyLocalActivities<OrderActivities>(localDatabaseStep);
const provider = proxyActivities<OrderActivities>(providerCall);
/** The confirmation: a cancel waits for an attempt under way to finish (it reports whether it sent). */
const confirmation = proxyActivities<OrderActivities>({
  ...providerCall,
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
});
const compensating = proxyActivities<OrderActivities>(compensation);
const attention = proxyActivities<OrderActivities>(attentionWrite);

/**
 * Describes why a step failed, from the failure chain's types (never `instanceof` on error classes of
 * activities: they do not cross the sandbox). E.g. `InsufficientStockError: insufficient stock for ...`.
 */
export function describeFailure(err: unknown): string {
  const cause = innermost(err);
  if (cause instanceof ApplicationFailure) return `${cause.type ?? 'Error'}: ${cause.message}`;
  if (cause instanceof TimeoutFailure) return `TimeoutFailure: activity ${cause.timeoutType} timeout`;
  if (cause instanceof Error) return `${cause.name}: ${cause.message}`;
  return String(cause);
}

/** The innermost failure: ActivityFailure → ApplicationFailure / TimeoutFailure / CancelledFailure. */
function innermost(err: unknown): unknown {
  let cause: unknown = err;
  while (cause instanceof TemporalFailure && cause.cause) cause = cause.cause;
  return cause;
}

/** The application failure type at the end of the chain, if any (e.g. `OrderClosedError`). */
function failureType(err: unknown): string | undefined {
  const cause = innermost(err);
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

/**
 * Whether the provider may have performed the effect of a failed provider step: the activity says so in its
 * failure details (`mayHaveActed`); a timeout (the worker died or hung mid-call) may have acted too.
 */
function mayHaveActed(err: unknown): boolean {
  const cause = innermost(err);
  if (cause instanceof TimeoutFailure) return true;
  if (cause instanceof ApplicationFailure) {
    const details = cause.details?.[0] as { mayHaveActed?: unknown } | undefined;
    return details?.mayHaveActed === true || cause.type === ErrorType.ClaimInProgress;
  }
  return false;
}

/** Runs one order to completion, to a compensated `failed`/`cancelled`, or to an operator. */
export async function orderFulfilment(input: OrderFulfilmentInput): Promise<OrderFulfilmentResult> {
  // Newest patch first: a run that has it records no marker for the older ones it implies.
  const localSteps = patched(LOCAL_DATABASE_STEPS_PATCH);
  if (!localSteps && !patched(LIFECYCLE_V2_PATCH)) return (await orderFulfilmentV1(input)) as OrderCompletedResult;
  return new OrderLifecycle(input.orderId, localSteps).run();
}

/** The state and steps of one order's run (the v2 lifecycle). */
class OrderLifecycle {
  private readonly state: OrderFulfilmentState;
  /** The cancellable scope of the pre-pivot steps now running, if any. */
  private prePivot: CancellationScope | null = null;
  /**
   * The cancel request being honoured (from the Update or a workflow cancel request), until it has its answer:
   * then `outcome` is set, and a refused request is dropped (`state.cancellation` cleared) so the order goes on;
   * a request that cancelled the order stays as `cancelled`, and later cancel Updates get its answer.
   */
  private cancelRequest: CancelRequest | null = null;
  private cancelled: CancelRequest | null = null;
  private compensating = false;
  private retryAccepted = false;
  private readonly retries = new Map<OrderStep, number>();
  /** Parent of the pre-pivot scopes: shields them from the root scope's cancellation. */
  private readonly shield = new CancellationScope({ cancellable: false });
  private invoiceNumber: string | null = null;
  /** Upsert `OrderStatus` at every status (runs recorded before the sparse-status-attribute patch). */
  private everyStatusVisible = true;
  /** The `OrderStatus` search attribute's value as this run last set it (the starter sets `received`). */
  private visibleStatus: OrderStatusValue = OrderStatus.Received;
  private messageId: string | null = null;

  /**
   * @param localSteps run reserveInventory and createInvoice as local activities ({@link LOCAL_DATABASE_STEPS_PATCH});
   *   such a run also has the sparse `OrderStatus` attribute.
   */
  constructor(
    private readonly orderId: string,
    private readonly localSteps: boolean,
  ) {
    this.state = {
      orderId,
      status: OrderStatus.Received,
      currentStep: null,
      completedSteps: [],
      invoiceNumber: null,
      pivotPassed: false,
      attention: null,
      cancellation: null,
      failureReason: null,
    };
  }

  async run(): Promise<OrderFulfilmentResult> {
    this.registerHandlers();
    this.everyStatusVisible = !this.localSteps && !patched(SPARSE_STATUS_ATTRIBUTE_PATCH);
    // Runs before the patch always upserted these; after it, only a run started without the starter's attributes
    // (e.g. by hand from the CLI) does, so that it is still findable by OrderId.
    const startedWithoutAttributes = workflowInfo().typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderId) === undefined;
    if (this.everyStatusVisible || startedWithoutAttributes) {
      upsertSearchAttributes([
        { key: SEARCH_ATTRIBUTES.OrderId, value: this.orderId },
        { key: SEARCH_ATTRIBUTES.OrderStatus, value: OrderStatus.Received },
      ]);
    }
    // A workflow cancel request (Temporal UI/CLI) is handled like the cancelOrder Update: the pre-pivot scopes
    // hang off a non-cancellable shield, so it reaches them only through onWorkflowCancel.
    CancellationScope.current().cancelRequested.catch(() => this.onWorkflowCancel());

    const ended = await this.untilPivot();
    if (ended) return ended;
    return CancellationScope.nonCancellable(() => this.afterPivot());
  }

  /** A workflow cancel request: honoured before the pivot like a cancel Update, refused (logged) after it. */
  private onWorkflowCancel(): void {
    const { state } = this;
    if (state.pivotPassed || state.attention || this.compensating || this.cancelRequest || this.cancelled) {
      log.warn('workflow cancel request refused', {
        orderId: this.orderId,
        why: state.pivotPassed
          ? 'the confirmation was sent'
          : state.attention
            ? 'waiting for an operator'
            : 'already stopping',
      });
      return;
    }
    this.requestCancel('workflow cancel requested through Temporal', 'workflow-cancel');
  }

  /** Starts honouring a cancel request: the running pre-pivot scope is cancelled. */
  private requestCancel(reason: string, source: CancelRequest['source']): CancelRequest {
    const request: CancelRequest = { reason, source, outcome: null };
    this.cancelRequest = request;
    this.state.cancellation = { reason, source };
    this.prePivot?.cancel();
    return request;
  }

  /** Answers the cancel request being honoured, if any, with a refusal; the order goes on without it. */
  private refuseCancel(why: string): void {
    if (!this.cancelRequest) return;
    this.cancelRequest.outcome = { cancelled: false, why };
    this.cancelRequest = null;
    this.state.cancellation = null;
  }

  private registerHandlers(): void {
    const { state } = this;
    setHandler(orderStatusQuery, () => state);
    setHandler(
      cancelOrderUpdate,
      async ({ reason }) => {
        const request = this.cancelled ?? this.cancelRequest ?? this.requestCancel(reason, 'update');
        // Non-cancellable: a workflow cancel request arriving meanwhile must not fail this Update; it gets the
        // same answer as the order.
        await CancellationScope.nonCancellable(() => condition(() => request.outcome !== null));
        const outcome = request.outcome!;
        if (!outcome.cancelled) throw notCancellable(this.orderId, outcome.why);
        return { orderId: this.orderId, status: OrderStatus.Cancelled, reason: request.reason };
      },
      {
        validator: (arg) => {
          const reason: unknown = arg?.reason;
          if (typeof reason !== 'string' || reason.trim() === '' || reason.length > 500) {
            throw ApplicationFailure.nonRetryable('reason must be a string of 1..500 characters', ErrorType.Validation);
          }
          if (this.cancelled || this.cancelRequest) return; // joins the request under way, or its answer
          if (state.pivotPassed) throw notCancellable(this.orderId, 'the order confirmation was already sent');
          if (isTerminalStatus(state.status))
            throw notCancellable(this.orderId, `the order is already ${state.status}`);
          if (state.attention) {
            throw notCancellable(this.orderId, `the order waits for an operator at ${state.attention.step}`);
          }
          if (this.compensating) throw notCancellable(this.orderId, 'the order is failing');
        },
      },
    );
    setHandler(
      retryStepUpdate,
      () => {
        const waiting = state.attention!;
        this.retryAccepted = true;
        waiting.retries += 1;
        this.retries.set(waiting.step, waiting.retries);
        return { orderId: this.orderId, step: waiting.step, retry: waiting.retries };
      },
      {
        validator: (arg) => {
          const step = arg?.step;
          if (!state.attention || this.retryAccepted) {
            throw ApplicationFailure.nonRetryable(
              `order ${this.orderId} is ${state.status} and does not wait for a retry`,
              ErrorType.OrderNotAwaitingRetry,
              { status: state.status, waitingStep: null },
            );
          }
          if (step !== undefined && step !== state.attention.step) {
            throw ApplicationFailure.nonRetryable(
              `order ${this.orderId} waits for a retry of ${state.attention.step}, not ${String(step)}`,
              ErrorType.OrderNotAwaitingRetry,
              { status: state.status, waitingStep: state.attention.step },
            );
          }
        },
      },
    );
  }

  /**
   * Records the order's status in the workflow state (the `orderStatus` query) and, where a visibility query
   * needs it, in the `OrderStatus` search attribute: `attention_required`, a final status, and the status that
   * replaces `attention_required` after a retry (see {@link SPARSE_STATUS_ATTRIBUTE_PATCH}).
   */
  private setStatus(status: OrderStatusValue): void {
    this.state.status = status;
    if (!this.everyStatusVisible) {
      const needed =
        status === OrderStatus.AttentionRequired ||
        isTerminalStatus(status) ||
        this.visibleStatus === OrderStatus.AttentionRequired;
      if (!needed || this.visibleStatus === status) return;
    }
    this.visibleStatus = status;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.OrderStatus, value: status }]);
  }

  private async step<T>(name: OrderStep, run: () => Promise<T>, status: OrderStatusValue): Promise<T> {
    this.state.currentStep = name;
    const result = await run();
    this.state.completedSteps.push(name);
    this.state.currentStep = null;
    this.setStatus(status);
    return result;
  }

  private done(name: OrderStep): boolean {
    return this.state.completedSteps.includes(name);
  }

  /**
   * Runs the steps up to and including the confirmation. Returns nothing once the pivot is passed, or the
   * workflow's end (cancelled result, or throws) when the order was halted and compensated.
   */
  private async untilPivot(): Promise<OrderFulfilmentResult | undefined> {
    const { orderId } = this;
    for (;;) {
      let failure: unknown;
      const scope = new CancellationScope({ cancellable: true, parent: this.shield });
      this.prePivot = scope;
      try {
        await scope.run(async () => {
          if (this.cancelRequest) throw new ApplicationFailure('cancel requested', 'CancelRequested');
          if (!this.done(OrderStep.ReserveInventory)) {
            await this.step(
              OrderStep.ReserveInventory,
              () => (this.localSteps ? localDb.reserveInventory({ orderId }) : db.reserveInventory({ orderId })),
              OrderStatus.InventoryReserved,
            );
          }
          if (!this.done(OrderStep.CreateInvoice)) {
            const invoice = await this.step(
              OrderStep.CreateInvoice,
              () => (this.localSteps ? localDb.createInvoice({ orderId }) : db.createInvoice({ orderId })),
              OrderStatus.Invoiced,
            );
            this.invoiceNumber = invoice.invoiceNumber;
            this.state.invoiceNumber = invoice.invoiceNumber;
          }
          const sent = await this.step(
            OrderStep.SendOrderConfirmation,
            () => confirmation.sendOrderConfirmation({ orderId }),
            OrderStatus.ConfirmationSent,
          );
          this.messageId = sent.messageId;
        });
      } catch (err) {
        failure = err;
      } finally {
        this.prePivot = null;
      }
      if (this.messageId) {
        this.passPivot('the order confirmation was sent before the cancel took effect');
        return undefined;
      }
      this.state.currentStep = null;

      if (failureType(failure) === ErrorType.OrderClosed) return this.closedAlready(failure);
      const reason = this.cancelRequest ? `cancelled: ${this.cancelRequest.reason}` : describeFailure(failure);
      this.compensating = true;
      const fence: HaltOrderResult = await CancellationScope.nonCancellable(() =>
        compensating.haltOrder({ orderId, reason }),
      );
      if (fence.outcome === 'sent') {
        this.messageId = fence.messageId;
        this.state.completedSteps.push(OrderStep.SendOrderConfirmation);
        this.setStatus(OrderStatus.ConfirmationSent);
        this.compensating = false;
        this.passPivot('the order confirmation was sent before the cancel took effect');
        return undefined;
      }
      if (fence.outcome === 'halted') return this.compensate(reason, failure);

      // The provider may have sent the confirmation: a person decides; a retry re-sends with the same key.
      this.compensating = false;
      const why = `the confirmation email may have been sent (${describeFailure(failure)})`;
      this.refuseCancel(`${why}; the order waits for an operator`);
      await CancellationScope.nonCancellable(() => this.awaitOperator(OrderStep.SendOrderConfirmation, why, true));
    }
  }

  private passPivot(refusal: string): void {
    this.state.pivotPassed = true;
    this.refuseCancel(refusal);
  }

  /** The order was already final when this run started (reset, or a second run): change nothing. */
  private closedAlready(failure: unknown): never {
    const cause = innermost(failure) as ApplicationFailure;
    const status = (cause.details?.[0] as { status?: OrderStatusValue } | undefined)?.status;
    if (status) this.setStatus(status);
    this.refuseCancel(`the order is already ${status ?? 'final'}`);
    throw ApplicationFailure.nonRetryable(
      `order ${this.orderId} is already ${status ?? 'final'}; this run changed nothing`,
      ErrorType.OrderClosed,
      { status },
    );
  }

  /**
   * Compensates a halted order: void the invoice, release the stock (both registered before their steps ran,
   * and no-ops when the step never acted), in a non-cancellable scope; a compensation that fails after its
   * retries does not stop the others and is named in the reason. Then the final status, and the end.
   */
  private async compensate(reason: string, failure: unknown): Promise<OrderFulfilmentResult> {
    const { orderId, state } = this;
    log.warn('order halted; compensating', { orderId, reason });
    const request = this.cancelRequest;
    const cancelled = request !== null;
    const failures: string[] = [];
    await CancellationScope.nonCancellable(async () => {
      for (const [name, run] of [
        ['voidInvoice', () => compensating.voidInvoice({ orderId })],
        ['releaseInventory', () => compensating.releaseInventory({ orderId })],
      ] as const) {
        state.currentStep = name;
        try {
          await run();
          state.completedSteps.push(name);
        } catch (err) {
          failures.push(`${name} failed: ${describeFailure(err)}`);
          log.error('compensation failed', { orderId, compensation: name, error: describeFailure(err) });
        }
      }
      state.currentStep = null;
      state.failureReason = failures.length ? `${reason} (${failures.join('; ')})` : reason;
      const status = cancelled ? OrderStatus.Cancelled : OrderStatus.Failed;
      await compensating.setOrderStatus({ orderId, status, failureReason: state.failureReason });
      this.setStatus(status);
    });
    if (request) {
      request.outcome = { cancelled: true };
      this.cancelled = request;
      this.cancelRequest = null;
      if (request.source === 'workflow-cancel' && isCancellation(failure)) throw failure;
      return { orderId, status: OrderStatus.Cancelled, reason: request.reason };
    }
    throw ApplicationFailure.nonRetryable(`order ${orderId} failed: ${reason}`, ErrorType.OrderFailed, {
      orderId,
      reason,
      compensationFailures: failures,
    });
  }

  /** After the pivot: ship, sync to accounting; a step that fails for good waits for an operator. */
  private async afterPivot(): Promise<OrderCompletedResult> {
    const { orderId } = this;
    const shipment = await this.untilDone(OrderStep.ShipOrder, OrderStatus.Shipped, () =>
      provider.shipOrder({ orderId }),
    );
    const sync = await this.untilDone(OrderStep.SyncInvoiceToAccounting, OrderStatus.Completed, () =>
      provider.syncInvoiceToAccounting({ orderId }),
    );
    return {
      orderId,
      status: OrderStatus.Completed,
      invoiceNumber: this.invoiceNumber ?? sync.externalId,
      confirmationMessageId: this.messageId!,
      trackingNumber: shipment.trackingNumber,
      accountingId: sync.accountingId,
    };
  }

  /** Runs a post-pivot step until it succeeds; each failure for good waits for the operator's retry. */
  private async untilDone<T>(name: OrderStep, status: OrderStatusValue, run: () => Promise<T>): Promise<T> {
    for (;;) {
      try {
        return await this.step(name, run, status);
      } catch (err) {
        this.state.currentStep = null;
        const unknown = mayHaveActed(err);
        const reason = unknown
          ? `${describeFailure(err)} (the provider may have acted; a retry re-sends with the same Idempotency-Key)`
          : describeFailure(err);
        await this.awaitOperator(name, reason, unknown);
      }
    }
  }

  /**
   * Puts the order in `attention_required` for `step` and waits for the operator's `retry` Update. The
   * workflow's own state changes first (in the same workflow task that schedules the status write), so an
   * operator who sees the status in the database always finds the workflow waiting.
   */
  private async awaitOperator(step: OrderStep, reason: string, outcomeUnknown: boolean): Promise<void> {
    const { orderId, state } = this;
    state.attention = { step, reason, outcomeUnknown, retries: this.retries.get(step) ?? 0 };
    state.failureReason = reason;
    this.retryAccepted = false;
    this.setStatus(OrderStatus.AttentionRequired);
    log.warn('order needs an operator', { orderId, step, reason });
    try {
      await attention.setOrderStatus({ orderId, status: OrderStatus.AttentionRequired, failureReason: reason, step });
    } catch (err) {
      // The database stays behind; the workflow still waits, and its search attribute says attention_required.
      log.error('could not record attention_required', { orderId, error: describeFailure(err) });
    }
    await condition(() => this.retryAccepted);
    state.attention = null;
    state.failureReason = null;
    this.retryAccepted = false;
  }
}

/** A cancel request and, once known, its answer. */
interface CancelRequest {
  reason: string;
  source: 'update' | 'workflow-cancel';
  outcome: { cancelled: true } | { cancelled: false; why: string } | null;
}

function notCancellable(orderId: string, why: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    `order ${orderId} cannot be cancelled: ${why}`,
    ErrorType.OrderNotCancellable,
    {
      why,
    },
  );
}
