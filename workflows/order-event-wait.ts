/**
 * Event steps (from 1.2): the order waits for an outside event, e.g. the warehouse reporting it packed. Sandbox-safe.
 * - The wait is a bounded `condition` in the pre-pivot cancellable scope (no polling): a cancel interrupts it like any
 *   pre-pivot step. Its bound is the plan's `event.timeoutMs` (configuration when the order was placed), or earlier:
 *   the step's deadline (a kit activity reads it before each wait) minus `event.marginMs`.
 * - The event reaches the workflow as an Update (`report<Event>`, e.g. `reportPacked`). An early report (before the wait
 *   started) is kept and ends the wait at once; a second report answers the same as the first.
 * - The bound passed: `attention_required` with the reason (what it waited for, since when); an operator's retry waits
 *   again, and the event arriving meanwhile ends the wait too.
 * - On arrival, the step's local activity records the event (status and `order_events` row) under the order-row lock
 *   and the halt fence.
 * - A cancel during the wait first runs the compensation of the step the plan names (`event.cancelFirst`, e.g. the
 *   warehouse's cancelPick): a definite refusal refuses the cancel (the order goes on waiting); otherwise the order
 *   halts and compensates newest first as usual.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  currentUpdateInfo,
  defineUpdate,
  log,
  setHandler,
} from '@temporalio/workflow';
import type { StepResult } from './order-activities.contract.js';
import { compensationActivity, planning, stepActivity } from './activity-proxies.js';
import { ErrorType } from './errors.js';
import { failureType, innermost, requireText } from './failure-wording.js';
import {
  isTerminalStatus,
  reportEventUpdateName,
  type ReceivedEvent,
  type ReportEventInput,
  type ReportEventResult,
} from './order-fulfilment.contract.js';
import type { CancelRequest, OperatorDecision, OperatorWait, OrderHandlerHost } from './order-handlers.js';
import { attentionRank, type PlannedStep } from './order-plan.js';

/** Largest report body kept, in characters of its JSON. */
const MAX_REPORT_CHARS = 4_000;

/** What the event wait reads and changes of one order's run (the workflow's OrderLifecycle). */
export interface EventWaitHost extends OrderHandlerHost {
  /** The events the order received, by event name (carried across continue-as-new). */
  readonly events: Map<string, ReceivedEvent>;
  /** The cancel request being honoured (settable: a refusal drops it). */
  cancelRequest: CancelRequest | null;
  /** Puts the order in `attention_required` and waits for the operator's decision. */
  awaitOperator(wait: OperatorWait): Promise<OperatorDecision>;
  /** Shows what the order does now as the workflow's current details. */
  showDetails(now?: string): void;
  /** Answers the cancel request being honoured with a refusal; the order goes on without it. */
  refuseCancelRequest(why: string): void;
  /** Goes on with the cancel request being honoured: fences the order and cancels the pre-pivot scope. */
  proceedWithCancel(): void;
}

/** `1 h 5 min`, `90 s`: a duration in words. */
function duration(ms: number): string {
  if (ms < 120_000) return `${Math.round(ms / 1000)} s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)} min`;
  return `${Math.round(ms / 360_000) / 10} h`;
}

/** The answer of a report Update: the first report of the event. */
function answerOf(orderId: string, event: string, received: ReceivedEvent): ReportEventResult {
  return { orderId, event, reportId: received.id, receivedAt: received.receivedAt, by: received.by };
}

/**
 * Registers the report Update of every event step of the plan (`report<Event>`), with its validator: refused
 * (`OrderNotAwaitingEventError`) when the order is final, stopping (cancelled, halted, compensating) or its event step
 * is done without a report (no such step: the Update does not exist); accepted otherwise, early or late.
 */
export function registerEventHandlers(order: EventWaitHost): void {
  for (const step of order.plan.steps) {
    const event = step.event;
    if (step.kind !== 'event' || !event) continue;
    const update = defineUpdate<ReportEventResult, [ReportEventInput]>(reportEventUpdateName(event.name));
    setHandler(
      update,
      (input) => {
        const known = order.events.get(event.name);
        if (known) return answerOf(order.orderId, event.name, known);
        const received: ReceivedEvent = {
          id: currentUpdateInfo()?.id ?? `report:${event.name}`,
          receivedAt: new Date(Date.now()).toISOString(),
          by: input.by,
          report: input.report ?? {},
        };
        order.events.set(event.name, received);
        log.info('event received', { orderId: order.orderId, event: event.name, reportId: received.id });
        // Waiting for an operator because the bound passed: the event ends that wait too.
        if (order.state.attention?.step === step.name && order.decision === null) order.decision = { kind: 'retry' };
        return answerOf(order.orderId, event.name, received);
      },
      {
        validator: (input) => {
          if (order.events.has(event.name)) return; // the same answer as the first report
          requireText(input?.by, 'by', 200);
          const report: unknown = input?.report;
          if (report !== undefined && (report === null || typeof report !== 'object' || Array.isArray(report))) {
            throw ApplicationFailure.nonRetryable('report must be a JSON object', ErrorType.Validation);
          }
          if (report !== undefined && JSON.stringify(report).length > MAX_REPORT_CHARS) {
            throw ApplicationFailure.nonRetryable(
              `report must be at most ${MAX_REPORT_CHARS} characters of JSON`,
              ErrorType.Validation,
            );
          }
          const { state } = order;
          const why = isTerminalStatus(state.status)
            ? `the order is already ${state.status}`
            : order.cancelled || order.cancelRequest
              ? 'the order is being cancelled'
              : order.compensating
                ? 'the order is stopping'
                : state.completedSteps.includes(step.name)
                  ? `${step.name} is done`
                  : null;
          if (why !== null) {
            throw ApplicationFailure.nonRetryable(
              `order ${order.orderId} does not wait for the "${event.name}" event: ${why}`,
              ErrorType.OrderNotAwaitingEvent,
              { status: state.status, why },
            );
          }
        },
        description: `Report the "${event.name}" event (${step.name}): ends the wait; early reports are kept, a second report answers the same.`,
      },
    );
  }
}

/**
 * Runs an event step: waits for its event with its bound (no polling), then records it with the step's local
 * activity. The bound passed: `attention_required` until the operator's retry (another wait) or the event.
 */
export async function awaitEvent(order: EventWaitHost, step: PlannedStep): Promise<StepResult> {
  const event = step.event!;
  const { orderId, state } = order;
  while (!order.events.has(event.name)) {
    const { deadline, what } = await planning.eventDeadline({ orderId, step: step.name });
    const now = Date.now();
    const margin = event.marginMs ?? 0;
    const byDeadline = deadline !== null && Date.parse(deadline) - margin - now < event.timeoutMs;
    const bound = byDeadline ? Math.max(0, Date.parse(deadline) - margin - now) : event.timeoutMs;
    const since = new Date(now).toISOString();
    state.waitingFor = { step: step.name, event: event.name, since, until: new Date(now + bound).toISOString() };
    order.showDetails(
      `**Waiting** for the \`${event.name}\` event (\`${step.name}\`) since ${since}, at most until ${state.waitingFor.until}`,
    );
    let arrived = order.events.has(event.name);
    try {
      if (!arrived && bound > 0) arrived = await condition(() => order.events.has(event.name), bound);
    } finally {
      state.waitingFor = null;
    }
    if (arrived) break;
    const setting = event.timeoutSetting ? ` (${event.timeoutSetting})` : '';
    const reason = byDeadline
      ? `${what ?? 'the deadline'} at ${deadline}; ${step.name} stopped waiting for the "${event.name}" event ` +
        `${duration(margin)} before it (waiting since ${since})`
      : `${step.name} waited ${duration(bound)}${setting} for the "${event.name}" event since ${since}; it did not come`;
    const ways = `a retry waits again; the event ending the wait is still accepted`;
    await order.awaitOperator({
      step,
      rank: attentionRank(step),
      reason,
      outcomeUnknown: false,
      why: `the "${event.name}" event did not come in time (${ways})`,
      kind: 'step',
      resolutions: [],
      closable: false,
    });
  }
  const received = order.events.get(event.name)!;
  return stepActivity(step)({ orderId, status: step.status, rank: step.rank, event: received });
}

/**
 * A cancel during an event wait whose plan names `cancelFirst`: runs that step's compensation first (shielded from the
 * cancel). A definite refusal (`ProviderRejectedError`, e.g. the warehouse's `picking-started`) refuses the cancel with
 * the provider's reason and the order goes on waiting; any other outcome goes on with the cancel (fence, compensation
 * newest first, where the compensation replays under its key).
 */
export async function cancelDuringEventWait(order: EventWaitHost, step: PlannedStep): Promise<void> {
  const first = order.plan.steps.find((s) => s.name === step.event?.cancelFirst);
  if (first?.compensation && order.state.completedSteps.includes(first.name)) {
    try {
      await CancellationScope.nonCancellable(() => compensationActivity(first)({ orderId: order.orderId }));
    } catch (err) {
      if (failureType(err) === ErrorType.ProviderRejected) {
        const cause = innermost(err) as { message?: string };
        log.warn('cancel refused by the provider', { orderId: order.orderId, compensation: first.compensation.name });
        order.refuseCancelRequest(
          `${first.compensation.name} was refused, the order goes on: ${cause.message ?? 'refused by the provider'}`,
        );
        return;
      }
      log.error('the cancel-first compensation failed; halting anyway', { orderId: order.orderId });
    }
  }
  order.proceedWithCancel();
}
