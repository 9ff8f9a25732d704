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
  type ActivityOptions,
  ActivityCancellationType,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  TemporalFailure,
  TimeoutFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  currentUpdateInfo,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type {
  CompensationActivity,
  HaltOrderInput,
  HaltOrderResult,
  KitActivities,
  StepActivity,
  StepResult,
} from '../activities/index.js';
import { attentionWrite, compensation, localDatabaseStep, RETRY_PROFILES } from './activity-options.js';
import { ErrorType } from './errors.js';
import {
  HISTORY_EVENTS_LIMIT,
  COMPENSATION_FAILED,
  OrderStatus,
  REMEMBERED_UPDATES,
  Resolution,
  SEARCH_ATTRIBUTES,
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
  type OrderCompletedResult,
  type OrderFulfilmentInput,
  type OrderFulfilmentResult,
  type OrderFulfilmentState,
  type OrderResumeState,
  type ResolveStepResult,
  type RetryStepResult,
} from './order-fulfilment.contract.js';
import { plainLine } from './display-text.js';
import { describeWait, detailsOf, escapeMarkdown } from './order-details.js';
import {
  attentionRank,
  COMPENSATION_ATTENTION_RANK,
  FINAL_FAILURE_RANK,
  StepPhase,
  type OrderPlan,
  type PlannedStep,
} from './order-plan.js';

/**
 * The workflow's patches (docs/versioning.md): each id guards one change of the commands a history produces, so an
 * execution that started before the change replays its old path. Histories of each old path, recorded on the 1.0.0
 * workflow, are in test/replay/histories/v1.0.0-before-<id>/.
 */
export const PATCHES = {
  /** Compensate every step at or below the fence's rank, not only the steps this history started (948708a). */
  compensateByHaltedRank: 'compensate-by-halted-rank',
  /**
   * A cancel fences the order at once (haltOrder while the step still runs), so a provider call not made yet is
   * never made: the step finds its claim tombstoned when it re-checks the fence before calling.
   */
  fenceOnCancel: 'fence-on-cancel',
  /** A compensation that fails for good waits for an operator (`attention_required`) instead of ending the order. */
  compensationFailureWaits: 'compensation-failure-waits',
  /** planOrder runs outside the cancellation: a Temporal cancel before planning still halts the order. */
  planUnderShield: 'plan-under-shield',
} as const;

/** The kit's own activities on the order task queue: the fence and the final statuses must succeed (long profile). */
const kit = proxyActivities<KitActivities>(compensation);
/** The `attention_required` status write: it outlasts a long database outage. */
const attention = proxyActivities<KitActivities>(attentionWrite);
/** The plan of a run started without one: a local activity (recorded as a marker, so replays read the same plan). */
const planning = proxyLocalActivities<KitActivities>(localDatabaseStep);

/** The separator of a provider's task queue: `<order task queue>.<provider>` (providers/kit/define.ts). */
function providerQueue(provider: string): string {
  return `${workflowInfo().taskQueue}.${provider}`;
}

/**
 * The activity of a planned step, with its retry profile, on its task queue (a provider step on its provider's),
 * and its summary for the Temporal UI. A cancelled step is waited for (`WAIT_CANCELLATION_COMPLETED`, also the SDK's
 * default, set here on purpose): it reports whether it acted, and a provider call under way is never cut short. A
 * database step is a local activity in the workflow task: a cancel reaches the workflow only when that task ends, so
 * its transaction always finishes first. After the pivot the steps run in a non-cancellable scope.
 */
function stepActivity(step: PlannedStep): StepActivity {
  const profile = RETRY_PROFILES[step.retry];
  const cancellationType = ActivityCancellationType.WAIT_CANCELLATION_COMPLETED;
  if (step.kind === 'database') {
    return proxyLocalActivities<Record<string, StepActivity>>({
      ...profile,
      cancellationType,
      summary: plainLine(step.summary),
    })[step.name]!;
  }
  const options: ActivityOptions = {
    ...profile,
    taskQueue: providerQueue(step.provider!),
    // The UI shows an activity's summary as plain text (escapes would show): one line, no invisible characters.
    summary: plainLine(step.summary),
    ...(step.phase === StepPhase.AfterPivot ? {} : { cancellationType }),
  };
  return proxyActivities<Record<string, StepActivity>>(options)[step.name]!;
}

/** The activity of a step's compensation (the compensation profile; a provider's on its task queue). */
function compensationActivity(step: PlannedStep): CompensationActivity {
  const { name, provider } = step.compensation!;
  return proxyActivities<Record<string, CompensationActivity>>({
    ...compensation,
    ...(provider ? { taskQueue: providerQueue(provider) } : {}),
    summary: `undo: ${plainLine(step.summary)}`,
  })[name]!;
}

/**
 * Describes why a step failed, from the failure chain's types (never `instanceof` on error classes of
 * activities: they do not cross the sandbox). E.g. `InsufficientStockError: insufficient stock for ...`.
 */
export function describeFailure(err: unknown): string {
  const cause = innermost(err);
  if (cause instanceof ApplicationFailure) return `${cause.type ?? 'Error'}: ${cause.message}`;
  if (cause instanceof TimeoutFailure) return `TimeoutFailure: activity ${cause.timeoutType} timeout`;
  // A cancelled activity's failure has no message: say what happened (the cancel stopped the attempt's wait).
  if (cause instanceof CancelledFailure && !cause.message) return 'CancelledFailure: the attempt was cancelled';
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

/**
 * Why a step stopped, in words a person reads in the Temporal UI (the failure's type and HTTP status, never its
 * message: that is shown escaped as the cause), e.g. `the <provider> provider refused it (HTTP 422)`.
 */
function humanWhy(step: PlannedStep, err: unknown): string {
  const cause = innermost(err);
  const who = step.provider ? `the ${step.provider} provider` : 'the database step';
  if (cause instanceof TimeoutFailure) return 'its attempt timed out (the worker may have died mid-call)';
  if (!(cause instanceof ApplicationFailure)) return `it failed (${cause instanceof Error ? cause.name : 'error'})`;
  const status = (cause.details?.[0] as { status?: unknown } | undefined)?.status;
  const http = typeof status === 'number' ? ` (HTTP ${status})` : '';
  switch (cause.type) {
    case ErrorType.ProviderRejected:
      return `${who} refused it${http}`;
    case ErrorType.Unauthorized:
      return `${who} refused our credentials${http}`;
    case ErrorType.ProviderUnavailable:
      return `${who} did not answer${http}`;
    case ErrorType.ClaimInProgress:
      return 'another attempt still holds its claim';
    case ErrorType.Validation:
      return 'it failed a check';
    default:
      return `it failed (${cause.type ?? 'error'})`;
  }
}

/**
 * Runs one order to completion, to a compensated `failed`/`cancelled`, or to an operator. A run whose history grew
 * long with operator retries continues as new with the order's state (`input.resume`).
 */
export async function orderFulfilment(input: OrderFulfilmentInput): Promise<OrderFulfilmentResult> {
  const lifecycle = new OrderLifecycle(input.orderId, input.resume);
  return lifecycle.run(input.plan);
}

/** The state and steps of one order's run. */
class OrderLifecycle {
  private readonly state: OrderFulfilmentState;
  private plan: OrderPlan = { steps: [] };
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
  /**
   * The operator's decision on what the order waits on (`attention`), once an Update brought one: `pending` while a
   * resolve or close records itself. Null while nothing was decided (or nothing waits).
   */
  private decision: OperatorDecision | { kind: 'pending' } | null = null;
  /** Why the order halts, kept across an operator's resolution (which fences again instead of re-running steps). */
  private halt: { reason: string; cancel: CancelRequest | null; failure: unknown } | null = null;
  /** The fence started the moment a cancel was accepted while a pre-pivot step ran (patch `fence-on-cancel`). */
  private earlyFence: Promise<HaltOrderResult> | null = null;
  /** Resolves the wait of the running pre-pivot scope once the early fence halted the order (nothing can act then). */
  private onFencedAtOnce: (() => void) | null = null;
  private readonly retries = new Map<string, number>();
  /** Parent of the pre-pivot scopes: shields them from the root scope's cancellation. */
  private readonly shield = new CancellationScope({ cancellable: false });
  /** The `OrderStatus` search attribute's value as this run last set it (the starter sets `received`). */
  private visibleStatus: string = OrderStatus.Received;
  /** Each step's provider id (null: a database step), by name. */
  private readonly results = new Map<string, string | null>();
  /** How far the pre-pivot steps got: the index of the last one started (its compensation runs too). */
  private lastStarted = -1;
  /** Answers of the operator Updates this order accepted (this run's and the carried ones), by id, oldest first. */
  private readonly answered = new Map<string, OperatorAnswer>();
  /** Which run of the order this is (1, then 2 after the first continue-as-new, ...). */
  private readonly runNumber: number;

  constructor(
    private readonly orderId: string,
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
      this.lastStarted = resume.lastStarted;
      this.visibleStatus = resume.visibleStatus;
    }
  }

  async run(plan: OrderPlan | undefined): Promise<OrderFulfilmentResult> {
    this.registerHandlers();
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
    this.showDetails();

    const ended = this.state.pivotPassed ? undefined : await this.untilPivot();
    if (ended) return ended;
    return CancellationScope.nonCancellable(() => this.afterPivot());
  }

  /** The steps up to and including the pivot, and the pivot's index. */
  private get beforeAndPivot(): PlannedStep[] {
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
  private requestCancel(reason: string, source: CancelRequest['source']): CancelRequest {
    const request: CancelRequest = { reason, source, outcome: null };
    this.cancelRequest = request;
    this.state.cancellation = { reason, source };
    if (this.prePivot && patched(PATCHES.fenceOnCancel)) {
      const input = this.fenceInput(`cancelled: ${reason}`);
      this.earlyFence = CancellationScope.nonCancellable(() => kit.haltOrder(input));
      this.earlyFence.then(
        (fence) => {
          if (fence.outcome === 'halted') this.onFencedAtOnce?.();
        },
        () => undefined, // read again (and thrown) where the fence's result is awaited
      );
    }
    this.prePivot?.cancel();
    return request;
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

  private registerHandlers(): void {
    const { state } = this;
    // Descriptions: what `temporal workflow metadata` and the UI list for each handler.
    setHandler(orderStatusQuery, () => state, {
      description: 'The order as the workflow knows it: status, current step, completed steps, what it waits for.',
    });
    setHandler(retryAnswerQuery, (updateId) => this.answered.get(updateId) ?? null, {
      description: 'The answer of an earlier retry Update by its id (kept across continue-as-new), or null.',
    });
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
          if (state.pivotPassed) throw notCancellable(this.orderId, `the ${this.pivotName()} was already done`);
          if (isTerminalStatus(state.status))
            throw notCancellable(this.orderId, `the order is already ${state.status}`);
          if (state.attention) {
            throw notCancellable(this.orderId, `the order waits for an operator at ${state.attention.step}`);
          }
          if (this.compensating) throw notCancellable(this.orderId, 'the order is failing');
        },
        description: 'Cancel the order before its point of no return (compensates); refused once it passed it.',
      },
    );
    setHandler(
      retryStepUpdate,
      () => {
        // The same Update id again after a continue-as-new (Temporal de-duplicates within a run only): its answer.
        const id = currentUpdateInfo()?.id;
        const known = id === undefined ? undefined : this.answered.get(id);
        if (known) return known as RetryStepResult;
        const waiting = state.attention!;
        this.decision = { kind: 'retry' };
        waiting.retries += 1;
        this.retries.set(waiting.step, waiting.retries);
        const answer = { orderId: this.orderId, step: waiting.step, retry: waiting.retries };
        if (id !== undefined) this.remember(id, answer);
        return answer;
      },
      {
        validator: (arg) => {
          const step = arg?.step;
          const id = currentUpdateInfo()?.id;
          if (id !== undefined && this.answered.has(id)) return;
          if (!state.attention || this.decision) {
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
        description:
          'Operator: retry the step the order waits on, after its cause was fixed (same Update id, same answer).',
      },
    );
    setHandler(
      resolveStepUpdate,
      async (input) => {
        const id = currentUpdateInfo()?.id;
        const known = id === undefined ? undefined : this.answered.get(id);
        if (known) return known as ResolveStepResult;
        const waiting = state.attention!;
        this.decision = { kind: 'pending' };
        try {
          // The audited write first (who, why, when; the claim settled): the order moves on only once it is stored.
          await kit.recordResolution({
            orderId: this.orderId,
            id: id ?? `resolve:${workflowInfo().runId}:${waiting.step}`,
            step: waiting.step,
            decision: input.outcome,
            reason: input.reason,
            by: input.by,
            ...(input.providerId ? { providerId: input.providerId } : {}),
            ...this.resolutionTarget(waiting, input.outcome),
          });
        } catch (err) {
          this.decision = null;
          throw ApplicationFailure.nonRetryable(
            `the resolution of ${waiting.step} could not be recorded: ${describeFailure(err)}`,
            'ResolutionNotRecordedError',
          );
        }
        const answer = { orderId: this.orderId, step: waiting.step, outcome: input.outcome, by: input.by };
        this.decision = { kind: 'resolve', outcome: input.outcome, providerId: input.providerId ?? null };
        if (id !== undefined) this.remember(id, answer);
        return answer;
      },
      {
        validator: (arg) => {
          const id = currentUpdateInfo()?.id;
          if (id !== undefined && this.answered.has(id)) return;
          requireText(arg?.reason, 'reason', 1000);
          requireText(arg?.by, 'by', 200);
          if (arg?.providerId !== undefined) requireText(arg.providerId, 'providerId', 200);
          const waiting = state.attention;
          if (!waiting || this.decision) throw notAwaitingResolution(this.orderId, state.status, null);
          if (arg?.step !== waiting.step) {
            throw notAwaitingResolution(this.orderId, state.status, waiting, `it waits on ${waiting.step}`);
          }
          if (!(waiting.resolutions ?? []).includes(arg.outcome)) {
            throw notAwaitingResolution(
              this.orderId,
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
        const known = id === undefined ? undefined : this.answered.get(id);
        if (known) return known as OrderClosedByOperatorResult;
        const waiting = state.attention!;
        this.decision = { kind: 'pending' };
        try {
          await kit.recordResolution({
            orderId: this.orderId,
            id: id ?? `close:${workflowInfo().runId}`,
            step: waiting.step,
            decision: 'closed',
            reason: input.reason,
            by: input.by,
            status: { status: OrderStatus.Closed, rank: FINAL_FAILURE_RANK },
          });
        } catch (err) {
          this.decision = null;
          throw ApplicationFailure.nonRetryable(
            `the close of order ${this.orderId} could not be recorded: ${describeFailure(err)}`,
            'ResolutionNotRecordedError',
          );
        }
        const answer: OrderClosedByOperatorResult = {
          orderId: this.orderId,
          status: OrderStatus.Closed,
          step: waiting.step,
          reason: input.reason,
          by: input.by,
        };
        this.decision = { kind: 'close', answer };
        if (id !== undefined) this.remember(id, answer);
        return answer;
      },
      {
        validator: (arg) => {
          const id = currentUpdateInfo()?.id;
          if (id !== undefined && this.answered.has(id)) return;
          requireText(arg?.reason, 'reason', 1000);
          requireText(arg?.by, 'by', 200);
          const waiting = state.attention;
          if (!waiting || this.decision) throw notAwaitingResolution(this.orderId, state.status, null);
          if (!waiting.closable) {
            throw notAwaitingResolution(
              this.orderId,
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
  private resolutionTarget(
    waiting: OrderAttention,
    outcome: Resolution,
  ): { key?: string; status?: { status: string; rank: number } } {
    if (waiting.kind === 'compensation') return {};
    const step = this.plan.steps.find((s) => s.name === waiting.step);
    if (!step) return {};
    const done = outcome === Resolution.Performed && step.phase === StepPhase.AfterPivot;
    return {
      ...(step.key ? { key: step.key } : {}),
      ...(done ? { status: { status: step.status, rank: step.rank } } : {}),
    };
  }

  /** Keeps the answer of an operator Update (the newest {@link REMEMBERED_UPDATES}). */
  private remember(id: string, answer: OperatorAnswer): void {
    this.answered.set(id, answer);
    while (this.answered.size > REMEMBERED_UPDATES) this.answered.delete(this.answered.keys().next().value!);
  }

  /**
   * Shows what the order does now as the workflow's current details (Temporal UI, `temporal workflow describe`):
   * Markdown, with every text from outside the workflow escaped.
   */
  private showDetails(now?: string): void {
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
  private pivotName(): string {
    return this.plan.steps.find((s) => s.phase === StepPhase.Pivot)?.name ?? 'pivot';
  }

  /**
   * Records the order's status in the workflow state (the `orderStatus` query) and, where a visibility query
   * needs it, in the `OrderStatus` search attribute: `attention_required`, a final status, and the status that
   * replaces `attention_required` after a retry (fewer visibility writes: each upsert is a round trip).
   */
  private setStatus(status: string): void {
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
    const result = await stepActivity(step)({ orderId: this.orderId, status: step.status, rank: step.rank });
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
      if (fence.outcome === 'halted') return this.compensate(reason, failure, fence.rank ?? null);

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
   * Compensates a halted order: the compensation of every step that started in this workflow or that the fence
   * found committed (`committedRank`: a step ranked at or below it wrote its effect, though the history may not
   * say so when a worker died after the step's commit and before its workflow task completed), newest first
   * (no-ops when the step never acted), in a non-cancellable scope. A compensation that fails after its retries does
   * not stop the others; then the order waits for an operator in `attention_required` (`compensation_failed`) until
   * each failed one is retried successfully or resolved as done by hand: never a final order with its stock
   * reserved or its invoice issued. Then the final status, and the end.
   * @param committedRank `HaltOrderResult.rank`; null when the fence's result did not carry it (1.0.0 workers).
   */
  private async compensate(
    reason: string,
    failure: unknown,
    committedRank: number | null,
  ): Promise<OrderFulfilmentResult> {
    const { orderId, state } = this;
    log.warn('order halted; compensating', { orderId, reason });
    // A cancel refused at an unknown outcome that an operator then resolved as not performed still cancels.
    const request = this.cancelRequest ?? this.halt?.cancel ?? null;
    const cancelled = request !== null;
    const failures: string[] = [];
    // Executions that started before the rank was read (1.0.0) compensate the steps they started, as they did.
    const byRank = patched(PATCHES.compensateByHaltedRank);
    const undo = this.beforeAndPivot
      .filter((s, i) => s.compensation && (i <= this.lastStarted || (byRank && (committedRank ?? -1) >= s.rank)))
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
          this.showDetails(`**Compensating**: \`${name}\` (undo of \`${step.name}\`)`);
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
        const decision = await this.awaitOperator({
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
      this.setStatus(status);
      this.showDetails();
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
  private async awaitOperator(wait: OperatorWait): Promise<OperatorDecision> {
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
    };
    log.info('continuing as new', { orderId: this.orderId, historyLength: info.historyLength, run: resume.run });
    await continueAsNew<typeof orderFulfilment>({ orderId: this.orderId, plan: this.plan, resume });
  }
}

/** What an order waits on for an operator, and the ways out its wait offers. */
interface OperatorWait {
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
type OperatorDecision =
  | { kind: 'retry' }
  | { kind: 'resolve'; outcome: Resolution; providerId: string | null }
  | { kind: 'close'; answer: OrderClosedByOperatorResult };

/** The `OrderNotAwaitingResolutionError` of a resolve or close the order cannot take now. */
function notAwaitingResolution(
  orderId: string,
  status: string,
  waiting: OrderAttention | null,
  why?: string,
): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    why
      ? `order ${orderId} cannot take this: ${why}`
      : `order ${orderId} is ${status} and does not wait for an operator`,
    ErrorType.OrderNotAwaitingResolution,
    {
      status,
      waitingStep: waiting?.step ?? null,
      resolutions: waiting?.resolutions ?? [],
      closable: waiting?.closable ?? false,
    },
  );
}

/** A validator's check of a text argument: a string of 1..`max` characters after trimming. */
function requireText(value: unknown, name: string, max: number): void {
  if (typeof value !== 'string' || value.trim() === '' || value.length > max) {
    throw ApplicationFailure.nonRetryable(`${name} must be a string of 1..${max} characters`, ErrorType.Validation);
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
