/**
 * The kit's runners of event steps (./define.ts `defineEventStep`): the local activity that records the event that
 * ended the wait, and the deadline a wait must not pass. The wait itself is the workflow's
 * (workflows/order-event-wait.ts): a bounded `condition`, no polling.
 */
import type {
  EventDeadlineInput,
  EventDeadlineResult,
  StepInput,
  StepResult,
} from '../../workflows/order-activities.contract.js';
import type { ActivityDeps } from '../ports.js';
import { earlierAnswers } from './answers.js';
import type { EventStepDefinition, StepDefinition } from './define.js';
import { notFound } from './failures.js';
import { observerSlot } from './observer.js';
import { lockOrder, refuseUnlessOpen, writeOrderStatus } from './order-guards.js';

/**
 * Records the event that ended an event step's wait: under the order-row lock, the first report of the event is kept
 * in `order_events` (a re-run, or a second report, finds it and changes nothing) and the step's status written at its
 * rank, in one transaction. The halt fence holds as for any forward step: a final or halted order is refused.
 * @returns `data`: the recorded report (the first one, whatever `input.event` a re-run carries).
 * @throws ApplicationFailure `OrderClosedError`, `OrderHaltedError`, `RecordNotFoundError` (non-retryable); Error when
 *   the input carries no event.
 */
export async function runEventStep(
  step: EventStepDefinition,
  deps: ActivityDeps,
  input: StepInput,
): Promise<StepResult> {
  const { orderId, status, rank, event } = input;
  if (!event) throw new Error(`${step.name}: no ${step.event.name} event in the input`);
  const { db } = deps;
  let waited: EventWaitObservation | undefined;
  const result = await db.$transaction(async (tx) => {
    const order = await lockOrder(tx, orderId);
    const [recorded] = await tx.$queryRaw<Array<{ report_id: string }>>`
      SELECT report_id FROM order_events WHERE order_id = ${orderId}::uuid AND event = ${step.event.name}`;
    if (recorded) {
      // Its own work done (a re-run after the commit): the status is written again, a no-op at the same rank.
      await writeOrderStatus(tx, orderId, status, rank);
      return { step: step.name, performed: false, data: { reportId: recorded.report_id } };
    }
    refuseUnlessOpen(order, orderId, step.name);
    const [since] = await tx.$queryRaw<Array<{ updated_at: Date }>>`
      SELECT updated_at FROM orders WHERE id = ${orderId}::uuid`;
    if (since) {
      const seconds = (Date.parse(event.receivedAt) - since.updated_at.getTime()) / 1000;
      waited = { event: step.event.name, step: step.name, seconds: Math.max(0, seconds) };
    }
    await tx.$executeRaw`
      INSERT INTO order_events (order_id, event, report_id, reported_by, report, received_at)
      VALUES (${orderId}::uuid, ${step.event.name}, ${event.id}, ${event.by}, ${JSON.stringify(event.report)}::jsonb,
              ${event.receivedAt}::timestamptz)`;
    await writeOrderStatus(tx, orderId, status, rank);
    await step.record?.({ orderId, db, tx, answers: earlierAnswers(tx, orderId), event });
    return { step: step.name, performed: true, data: { reportId: event.id } };
  });
  if (waited) eventWaitObserver.report(waited);
  return result;
}

/** An event that ended a wait, as {@link observeEventWaits} reports it. */
export interface EventWaitObservation {
  /** The event's name (e.g. `packed`). */
  event: string;
  /** The event step that waited. */
  step: string;
  /**
   * Seconds from the order's last status write before the report (the step before the wait wrote it, or the wait's
   * attention write when an operator retried it) to the report's `receivedAt`; never negative.
   */
  seconds: number;
}

const eventWaitObserver = observerSlot<EventWaitObservation>();

/**
 * Installs the process-wide observer of ended waits (one at a time; `undefined` removes it): the worker records the
 * `order_fulfilment_event_wait_seconds` histogram here, so this module never imports metrics code. It runs once per
 * order and event, after the transaction that recorded the first report committed; an observer that throws is
 * ignored.
 */
export function observeEventWaits(observer: ((observation: EventWaitObservation) => void) | undefined): void {
  eventWaitObserver.set(observer);
}

/**
 * The deadline of the event step `input.step` for the order, from its `deadline` hook (null without one).
 * @throws ApplicationFailure `RecordNotFoundError` when the step is not an event step of `steps`.
 */
export async function eventDeadline(
  steps: readonly StepDefinition[],
  deps: ActivityDeps,
  input: EventDeadlineInput,
): Promise<EventDeadlineResult> {
  const step = steps.find((s): s is EventStepDefinition => s.name === input.step && s.kind === 'event');
  if (!step) throw notFound('event step', input.step);
  if (!step.deadline) return { deadline: null, what: null };
  const { orderId } = input;
  const deadline = await step.deadline({ orderId, db: deps.db, answers: earlierAnswers(deps.db, orderId) });
  return { deadline, what: deadline === null ? null : (step.deadlineWhat ?? 'the deadline') };
}
