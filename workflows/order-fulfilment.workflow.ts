/**
 * The order fulfilment workflow. It runs the order's plan (workflows/order-plan.ts: the step registry's steps as
 * they were when the order was placed, e.g. reserve inventory → create invoice → send the order confirmation (the
 * pivot) → ship → sync to accounting). Each step writes the order's status in its own transaction, so the workflow
 * makes no separate status writes on the happy path.
 *
 * The order's one story:
 * - Before the pivot, a step that fails for good, or a cancel (the `cancelOrder` Update, or a workflow cancel
 *   request from the Temporal UI/CLI), halts the order and compensates: `haltOrder` first fences every provider step
 *   up to the pivot (under the order-row lock it tombstones their claims, so no attempt ever performs them), then
 *   each compensation runs, newest first (each a no-op when its step never acted), and the order ends `failed` or
 *   `cancelled`. A cancel accepted while a step runs starts the fence at once (a step between its claim and its call
 *   then never calls). A compensation that fails for good makes the order wait for a person
 *   (`attention_required`, `compensation_failed`): a retry or a resolution, never a final order left half undone.
 * - If the fence finds the pivot performed, the pivot was passed after all: the order goes on to completion and a
 *   cancel is refused. If it finds a call whose outcome is unknown (the provider may have acted), the order goes to
 *   a person: `attention_required` until the operator's `retry` Update, or a `resolve` (audited: performed passes
 *   the pivot, not performed fences again and compensates).
 * - After the pivot nothing compensates: a step that fails for good puts the order in `attention_required` and the
 *   workflow waits for the `retry` Update, a `resolve` (the step done by hand, or to run again) or a `close` (the
 *   order ends `closed`); a workflow cancel request is refused (logged).
 * - A run on an order that is already final (a reset, or a second run after retention) changes nothing: its first
 *   step refuses it with `OrderClosedError`.
 *
 * Database steps run as local activities (https://docs.temporal.io/local-activity) in the order's workflow task;
 * provider steps run as activities on their provider's task queue (`<task queue>.<provider>`, where Temporal enforces
 * the provider's limits). The `OrderStatus` search attribute is upserted only where a visibility query needs it:
 * `attention_required`, the final status, and the first status after an operator's retry.
 * Versioning: docs/versioning.md. Workflow id: `order-<orderId>` (orderWorkflowId). See https://docs.temporal.io/workflows
 */
import {
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  log,
  patched,
  setCurrentDetails,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { HaltOrderInput, HaltOrderResult, StepResult } from './order-activities.contract.js';
import { attention, kit, planning, stepActivity } from './activity-proxies.js';
import { ErrorType } from './errors.js';
import { describeFailure, failureType, humanWhy, innermost, mayHaveActed } from './failure-wording.js';
import { compensate, type CompensationHost } from './order-compensation.js';
import {
  HISTORY_EVENTS_LIMIT,
  OrderStatus,
  Resolution,
  SEARCH_ATTRIBUTES,
  isTerminalStatus,
  type OperatorAnswer,
  type OrderClosedByOperatorResult,
  type OrderCompletedResult,
  type OrderFulfilmentInput,
  type OrderFulfilmentResult,
  type OrderFulfilmentState,
  type OrderResumeState,
  type ReceivedEvent,
} from './order-fulfilment.contract.js';
import { describeWait, detailsOf, escapeMarkdown } from './order-details.js';
import { awaitEvent, cancelDuringEventWait, registerEventHandlers, type EventWaitHost } from './order-event-wait.js';
import {
  registerOrderHandlers,
  type CancelRequest,
  type OperatorDecision,
  type OperatorWait,
  type OrderHandlerHost,
} from './order-handlers.js';
import { attentionRank, StepPhase, type OrderPlan, type PlannedStep } from './order-plan.js';
import { PATCHES } from './patches.js';

/**
 * Runs one order to completion, to a compensated `failed`/`cancelled`, or to an operator. A run whose history grew
 * long with operator retries continues as new with the order's state (`input.resume`).
 */
export async function orderFulfilment(input: OrderFulfilmentInput): Promise<OrderFulfilmentResult> {
  const lifecycle = new OrderLifecycle(input.orderId, input.resume);
  return lifecycle.run(input.plan);
}

/**
 * The state and steps of one order's run. The Query and Update handlers (order-handlers.ts) and the compensation
 * (order-compensation.ts) read and change it through the members their host interfaces name.
 */
class OrderLifecycle implements OrderHandlerHost, CompensationHost, EventWaitHost {
  readonly state: OrderFulfilmentState;
  plan: OrderPlan = { steps: [] };
  /** The cancellable scope of the pre-pivot steps now running, if any. */
  private prePivot: CancellationScope | null = null;
  /**
   * The cancel request being honoured (from the Update or a workflow cancel request), until it has its answer:
   * then `outcome` is set, and a refused request is dropped (`state.cancellation` cleared) so the order goes on;
   * a request that cancelled the order stays as `cancelled`, and later cancel Updates get its answer.
   */
  cancelRequest: CancelRequest | null = null;
  cancelled: CancelRequest | null = null;
  compensating = false;
  /**
   * The operator's decision on what the order waits on (`attention`), once an Update brought one: `pending` while a
   * resolve or close records itself. Null while nothing was decided (or nothing waits).
   */
  decision: OperatorDecision | { kind: 'pending' } | null = null;
  /** Why the order halts, kept across an operator's resolution (which fences again instead of re-running steps). */
  halt: { reason: string; cancel: CancelRequest | null; failure: unknown } | null = null;
  /** The fence started the moment a cancel was accepted while a pre-pivot step ran (patch `fence-on-cancel`). */
  private earlyFence: Promise<HaltOrderResult> | null = null;
  /** Resolves the wait of the running pre-pivot scope once the early fence halted the order (nothing can act then). */
  private onFencedAtOnce: (() => void) | null = null;
  readonly retries = new Map<string, number>();
  /** Parent of the pre-pivot scopes: shields them from the root scope's cancellation. */
  private readonly shield = new CancellationScope({ cancellable: false });
  /** The `OrderStatus` search attribute's value as this run last set it (the starter sets `received`). */
  private visibleStatus: string = OrderStatus.Received;
  /** Each step's provider id (null: a database step), by name. */
  private readonly results = new Map<string, string | null>();
  /** How far the pre-pivot steps got: the index of the last one started (its compensation runs too). */
  lastStarted = -1;
  /** Answers of the operator Updates this order accepted (this run's and the carried ones), by id, oldest first. */
  readonly answered = new Map<string, OperatorAnswer>();
  /** The outside events the order received (event steps' reports), by event name. */
  readonly events = new Map<string, ReceivedEvent>();
  /** Which run of the order this is (1, then 2 after the first continue-as-new, ...). */
  private readonly runNumber: number;

  constructor(
    readonly orderId: string,
    resume?: OrderResumeState,
  ) {
    this.state = {
      orderId,
      status: resume?.status ?? OrderStatus.Received,
      currentStep: null,
      completedSteps: [...(resume?.completedSteps ?? [])],
      pivotPassed: resume?.pivotPassed ?? false,
      attention: null,
      cancellation: null,
      failureReason: null,
    };
    this.runNumber = resume?.run ?? 1;
    if (resume) {
      for (const [step, id] of Object.entries(resume.results)) this.results.set(step, id);
      for (const [step, n] of Object.entries(resume.retries)) this.retries.set(step, n);
      for (const [id, answer] of Object.entries(resume.answered)) this.answered.set(id, answer);
      for (const [name, event] of Object.entries(resume.events ?? {})) this.events.set(name, event);
      this.lastStarted = resume.lastStarted;
      this.visibleStatus = resume.visibleStatus;
    }
  }

  async run(plan: OrderPlan | undefined): Promise<OrderFulfilmentResult> {
    registerOrderHandlers(this);
    // The starter sets these; a run started without them (e.g. by hand from the CLI) sets them itself, so that it is
    // still findable by OrderId.
    if (workflowInfo().typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderId) === undefined) {
      upsertSearchAttributes([
        { key: SEARCH_ATTRIBUTES.OrderId, value: this.orderId },
        { key: SEARCH_ATTRIBUTES.OrderStatus, value: OrderStatus.Received },
      ]);
    }
    // A workflow cancel request (Temporal UI/CLI) is handled like the cancelOrder Update: the pre-pivot scopes
    // hang off a non-cancellable shield, so it reaches them only through onWorkflowCancel.
    CancellationScope.current().cancelRequested.catch(() => this.onWorkflowCancel());
    if (plan) this.plan = plan;
    else if (patched(PATCHES.planUnderShield)) {
      // A cancel meanwhile is honoured by onWorkflowCancel once the plan is known: the order halts and compensates.
      this.plan = await CancellationScope.nonCancellable(() => planning.planOrder({ orderId: this.orderId }));
    } else this.plan = await planning.planOrder({ orderId: this.orderId });
    registerEventHandlers(this);
    this.showDetails();

    const ended = this.state.pivotPassed ? undefined : await this.untilPivot();
    if (ended) return ended;
    return CancellationScope.nonCancellable(() => this.afterPivot());
  }

  /** The steps up to and including the pivot, and the pivot's index. */
  get beforeAndPivot(): PlannedStep[] {
    return this.plan.steps.filter((s) => s.phase !== StepPhase.AfterPivot);
  }

  /** A workflow cancel request: honoured before the pivot like a cancel Update, refused (logged) after it. */
  private onWorkflowCancel(): void {
    const { state } = this;
    if (state.pivotPassed || state.attention || this.compensating || this.cancelRequest || this.cancelled) {
      log.warn('workflow cancel request refused', {
        orderId: this.orderId,
        why: state.pivotPassed
          ? 'the pivot was passed'
          : state.attention
            ? 'waiting for an operator'
            : 'already stopping',
      });
      return;
    }
    this.requestCancel('workflow cancel requested through Temporal', 'workflow-cancel');
  }

  /**
   * Starts honouring a cancel request: the running pre-pivot scope is cancelled and, when a step runs, the order is
   * fenced at once (haltOrder runs beside the step): a provider step between its claim and its call then never calls
   * (it re-checks the fence before calling), whether or not a heartbeat told it of the cancel yet.
   */
  requestCancel(reason: string, source: CancelRequest['source']): CancelRequest {
    const request: CancelRequest = { reason, source, outcome: null };
    this.cancelRequest = request;
    this.state.cancellation = { reason, source };
    // During an event wait (plans from 1.2 only) the cancel may first have to ask the provider (e.g. cancel the pick).
    const waiting = this.state.waitingFor && this.plan.steps.find((s) => s.name === this.state.waitingFor?.step);
    if (this.prePivot && waiting && waiting.event?.cancelFirst) {
      void cancelDuringEventWait(this, waiting);
      return request;
    }
    this.proceedWithCancel();
    return request;
  }

  /** Goes on with the cancel request being honoured: fences the order at once and cancels the pre-pivot scope. */
  proceedWithCancel(): void {
    const request = this.cancelRequest;
    if (!request) return;
    if (this.prePivot && patched(PATCHES.fenceOnCancel)) {
      const input = this.fenceInput(`cancelled: ${request.reason}`);
      this.earlyFence = CancellationScope.nonCancellable(() => kit.haltOrder(input));
      this.earlyFence.then(
        (fence) => {
          if (fence.outcome === 'halted') this.onFencedAtOnce?.();
        },
        () => undefined, // read again (and thrown) where the fence's result is awaited
      );
    }
    this.prePivot?.cancel();
  }

  /** Answers the cancel request being honoured with a refusal (e.g. the warehouse started picking). */
  refuseCancelRequest(why: string): void {
    this.refuseCancel(why);
  }

  /** haltOrder's input: the plan's provider steps up to and including the pivot, its pivot, and their keys. */
  private fenceInput(reason: string): HaltOrderInput {
    const fenced = this.beforeAndPivot.filter((s) => s.kind === 'provider');
    const keys = Object.fromEntries(fenced.flatMap((s) => (s.key ? [[s.name, s.key]] : [])));
    return { orderId: this.orderId, reason, steps: fenced.map((s) => s.name), pivot: this.pivotName(), keys };
  }

  /** Answers the cancel request being honoured, if any, with a refusal; the order goes on without it. */
  private refuseCancel(why: string): void {
    if (!this.cancelRequest) return;
    this.cancelRequest.outcome = { cancelled: false, why };
    this.cancelRequest = null;
    this.state.cancellation = null;
  }

  /**
   * Shows what the order does now as the workflow's current details (Temporal UI, `temporal workflow describe`):
   * Markdown, with every text from outside the workflow escaped.
   */
  showDetails(now?: string): void {
    setCurrentDetails(
      detailsOf({
        orderId: this.orderId,
        plan: this.plan,
        state: this.state,
        run: this.runNumber,
        now: now ?? null,
      }),
    );
  }

  /** The pivot step's name in words for messages, e.g. `sendOrderConfirmation`. */
  pivotName(): string {
    return this.plan.steps.find((s) => s.phase === StepPhase.Pivot)?.name ?? 'pivot';
  }

  /**
   * Records the order's status in the workflow state (the `orderStatus` query) and, where a visibility query
   * needs it, in the `OrderStatus` search attribute: `attention_required`, a final status, and the status that
   * replaces `attention_required` after a retry (fewer visibility writes: each upsert is a round trip).
   */
  setStatus(status: string): void {
    this.state.status = status;
    const needed =
      status === OrderStatus.AttentionRequired ||
      isTerminalStatus(status) ||
      this.visibleStatus === OrderStatus.AttentionRequired;
    if (!needed || this.visibleStatus === status) return;
    this.visibleStatus = status;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.OrderStatus, value: status }]);
  }

  /** Runs one planned step; on success records it and its status. */
  private async step(step: PlannedStep): Promise<StepResult> {
    this.state.currentStep = step.name;
    this.showDetails();
    const result =
      step.kind === 'event'
        ? await awaitEvent(this, step)
        : await stepActivity(step)({ orderId: this.orderId, status: step.status, rank: step.rank });
    this.results.set(step.name, result.providerId ?? null);
    this.state.completedSteps.push(step.name);
    this.state.currentStep = null;
    this.setStatus(step.status);
    this.showDetails();
    return result;
  }

  private done(name: string): boolean {
    return this.state.completedSteps.includes(name);
  }

  /**
   * Runs the steps up to and including the pivot. Returns nothing once the pivot is passed, or the workflow's end
   * (cancelled result, or throws) when the order was halted and compensated. A fence that finds an unknown outcome
   * waits for an operator: a retry runs the steps again, a resolution (recorded on the claim) fences again.
   */
  private async untilPivot(): Promise<OrderFulfilmentResult | undefined> {
    const steps = this.beforeAndPivot;
    const pivot = steps[steps.length - 1]!;
    let resolved = false;
    for (;;) {
      if (!resolved) {
        let failure: unknown;
        const scope = new CancellationScope({ cancellable: true, parent: this.shield });
        this.prePivot = scope;
        // Once a cancel's fence halted the order, the running step can no longer act (its claim is tombstoned, it
        // re-checks before calling): the order goes on to its compensations without waiting for the step to hear of
        // the cancel (a step held before its call would otherwise be waited for until its heartbeat timeout).
        const fencedAtOnce = new Promise<'fenced'>((resolve) => (this.onFencedAtOnce = () => resolve('fenced')));
        try {
          const running = scope.run(async () => {
            if (this.cancelRequest) throw new ApplicationFailure('cancel requested', 'CancelRequested');
            for (const [i, step] of steps.entries()) {
              if (this.done(step.name)) continue;
              this.lastStarted = Math.max(this.lastStarted, i);
              await this.step(step);
              if (step === pivot) this.passPivot(`the ${step.name} was done before the cancel took effect`);
            }
          });
          running.catch(() => undefined); // read below, or left behind once the fence halted the order
          const ended = await Promise.race([running, fencedAtOnce]);
          if (ended === 'fenced') failure = new CancelledFailure('the order was fenced before its step could act');
        } catch (err) {
          failure = err;
        } finally {
          this.prePivot = null;
          this.onFencedAtOnce = null;
        }
        if (this.state.pivotPassed) return undefined;
        this.state.currentStep = null;

        if (failureType(failure) === ErrorType.OrderClosed) return this.closedAlready(failure);
        const cancel = this.cancelRequest;
        this.halt = { reason: cancel ? `cancelled: ${cancel.reason}` : describeFailure(failure), cancel, failure };
      }
      const { reason, failure } = this.halt!;
      this.compensating = true;
      const fenceInput = this.fenceInput(reason);
      this.showDetails(
        `**Halting** (${escapeMarkdown(reason)}): fencing ${fenceInput.steps.map((n) => `\`${n}\``).join(', ') || 'nothing'} ` +
          'before compensating',
      );
      // The fence a cancel started while a step ran holds when it halted the order: nothing acted after it. Any other
      // answer (a call was in flight) is read again now that the step has ended.
      const early = this.earlyFence ? await this.earlyFence : null;
      this.earlyFence = null;
      const fence: HaltOrderResult =
        early?.outcome === 'halted' ? early : await CancellationScope.nonCancellable(() => kit.haltOrder(fenceInput));
      if (fence.outcome === 'sent') {
        this.results.set(pivot.name, fence.providerId);
        this.state.completedSteps.push(pivot.name);
        this.setStatus(pivot.status);
        this.compensating = false;
        this.passPivot(`the ${pivot.name} was done before the cancel took effect`);
        return undefined;
      }
      if (fence.outcome === 'halted') return compensate(this, reason, failure, fence.rank ?? null);

      // The provider may have acted: a person decides; a retry re-sends with the same key.
      this.compensating = false;
      const waiting = steps.find((s) => s.name === fence.step) ?? pivot;
      const why = `${waiting.name} may have been performed (${describeFailure(failure)})`;
      this.refuseCancel(`${why}; the order waits for an operator`);
      const human = `${waiting.provider ? `the ${waiting.provider} provider` : 'it'} may have acted (its answer is unknown)`;
      const decision = await CancellationScope.nonCancellable(() =>
        this.awaitOperator({
          step: waiting,
          rank: attentionRank(waiting),
          reason: why,
          outcomeUnknown: true,
          why: human,
          kind: 'step',
          resolutions: [Resolution.Performed, Resolution.NotPerformed],
          closable: false,
        }),
      );
      resolved = decision.kind === 'resolve';
    }
  }

  private passPivot(refusal: string): void {
    this.state.pivotPassed = true;
    this.refuseCancel(refusal);
  }

  /** The order was already final when this run started (reset, or a second run): change nothing. */
  private closedAlready(failure: unknown): never {
    const cause = innermost(failure) as ApplicationFailure;
    const status = (cause.details?.[0] as { status?: string } | undefined)?.status;
    if (status) this.setStatus(status);
    this.refuseCancel(`the order is already ${status ?? 'final'}`);
    throw ApplicationFailure.nonRetryable(
      `order ${this.orderId} is already ${status ?? 'final'}; this run changed nothing`,
      ErrorType.OrderClosed,
      { status },
    );
  }

  /**
   * After the pivot: the remaining steps in order; a step that fails for good waits for an operator, who may retry
   * it, resolve it, or close the order (its result then).
   */
  private async afterPivot(): Promise<OrderCompletedResult | OrderClosedByOperatorResult> {
    for (const step of this.plan.steps) {
      if (step.phase !== StepPhase.AfterPivot || this.done(step.name)) continue;
      const closed = await this.untilDone(step);
      if (closed) {
        this.setStatus(OrderStatus.Closed);
        this.showDetails();
        return closed;
      }
    }
    const steps: Record<string, string | null> = {};
    for (const step of this.plan.steps) steps[step.name] = this.results.get(step.name) ?? null;
    this.showDetails();
    return { orderId: this.orderId, status: OrderStatus.Completed, steps };
  }

  /**
   * Runs a post-pivot step until it succeeds; each failure for good waits for the operator: a retry (or a resolution
   * as not performed) runs it again, a resolution as performed counts it as done, a close ends the order.
   * @returns the close's answer when the operator closed the order, else null once the step is done.
   */
  private async untilDone(step: PlannedStep): Promise<OrderClosedByOperatorResult | null> {
    for (;;) {
      try {
        await this.step(step);
        return null;
      } catch (err) {
        this.state.currentStep = null;
        const unknown = mayHaveActed(err);
        const reason = unknown
          ? `${describeFailure(err)} (the provider may have acted; a retry re-sends with the same Idempotency-Key)`
          : describeFailure(err);
        const decision = await this.awaitOperator({
          step,
          rank: attentionRank(step),
          reason,
          outcomeUnknown: unknown,
          why: humanWhy(step, err),
          kind: 'step',
          resolutions: unknown ? [Resolution.Performed, Resolution.NotPerformed] : [Resolution.Performed],
          closable: true,
        });
        if (decision.kind === 'close') return decision.answer;
        if (decision.kind === 'resolve' && decision.outcome === Resolution.Performed) {
          // Recorded by the resolution (the claim sent, the step's status written): the step counts as done.
          this.results.set(step.name, decision.providerId);
          this.state.completedSteps.push(step.name);
          this.setStatus(step.status);
          this.showDetails();
          return null;
        }
      }
    }
  }

  /**
   * Puts the order in `attention_required` for what `wait` names and waits for the operator's decision: a `retry`,
   * a `resolve` (recorded before it is answered) or a `close`. The workflow's own state changes first (in the same
   * workflow task that schedules the status write), so an operator who sees the status in the database always finds
   * the workflow waiting. After a retry a long history continues as new (unless `wait.continueAsNew` is false).
   */
  async awaitOperator(wait: OperatorWait): Promise<OperatorDecision> {
    const { orderId, state } = this;
    const name = wait.step.name;
    state.attention = {
      step: name,
      reason: wait.reason,
      outcomeUnknown: wait.outcomeUnknown,
      retries: this.retries.get(name) ?? 0,
      kind: wait.kind,
      resolutions: wait.resolutions,
      closable: wait.closable,
    };
    state.failureReason = wait.reason;
    this.decision = null;
    this.setStatus(OrderStatus.AttentionRequired);
    this.showDetails(
      describeWait(orderId, wait.step, wait.why, wait.reason, wait.outcomeUnknown, {
        resolutions: wait.resolutions,
        closable: wait.closable,
      }),
    );
    log.warn('order needs an operator', { orderId, step: name, reason: wait.reason });
    try {
      await attention.setOrderStatus({
        orderId,
        status: OrderStatus.AttentionRequired,
        rank: wait.rank,
        failureReason: wait.reason,
      });
    } catch (err) {
      // The database stays behind; the workflow still waits, and its search attribute says attention_required.
      log.error('could not record attention_required', { orderId, error: describeFailure(err) });
    }
    await condition(() => this.decision !== null && this.decision.kind !== 'pending');
    const decision = this.decision as unknown as OperatorDecision;
    state.attention = null;
    state.failureReason = null;
    this.decision = null;
    if (decision.kind === 'retry' && wait.continueAsNew !== false) await this.continueAsNewIfLong();
    return decision;
  }

  /**
   * After an operator's retry was accepted: when this run's history has grown long (retries that fail again add up)
   * or the server suggests it, continues as new with the order's state, once every Update handler has finished; the
   * next run retries the step. Bounds each run's history at about {@link HISTORY_EVENTS_LIMIT} events.
   */
  private async continueAsNewIfLong(): Promise<void> {
    const info = workflowInfo();
    if (!info.continueAsNewSuggested && info.historyLength < HISTORY_EVENTS_LIMIT) return;
    await condition(allHandlersFinished);
    const resume: OrderResumeState = {
      run: this.runNumber + 1,
      status: this.state.status,
      completedSteps: [...this.state.completedSteps],
      results: Object.fromEntries(this.results),
      pivotPassed: this.state.pivotPassed,
      retries: Object.fromEntries(this.retries),
      lastStarted: this.lastStarted,
      visibleStatus: this.visibleStatus,
      answered: Object.fromEntries(this.answered),
      ...(this.events.size > 0 ? { events: Object.fromEntries(this.events) } : {}),
    };
    log.info('continuing as new', { orderId: this.orderId, historyLength: info.historyLength, run: resume.run });
    await continueAsNew<typeof orderFulfilment>({ orderId: this.orderId, plan: this.plan, resume });
  }
}
