/**
 * The activities the order workflow calls, as the workflow sees them: their inputs, results and signatures (the
 * kit's own and each step's and compensation's). The activities (activities/index.ts, activities/kit/) implement
 * them; the workflows import nothing from activities/. Types only: sandbox-safe.
 */
import type { OrderPlan } from './order-plan.js';

/** The status of an idempotency claim (`side_effect_claims.status`). */
export type ClaimStatus = 'claimed' | 'sending' | 'sent' | 'failed' | 'cancelled';

/** Input of every step's activity: the order, and the status and rank its plan gives the step. */
export interface StepInput {
  orderId: string;
  /** The status to write when the step succeeds (from the order's plan: the last step writes `completed`). */
  status: string;
  /** Its rank (10 × the step's position in the plan). */
  rank: number;
  /** An event step's input: the report that ended its wait (recorded by the step). */
  event?: EventReportInput;
}

/** An outside event as the order received it (the report Update), e.g. the warehouse's `packed`. */
export interface EventReportInput {
  /** The report's id (the Update id, from the reporter's `Idempotency-Key`). */
  id: string;
  /** When the workflow received it (ISO 8601). */
  receivedAt: string;
  /** Who reported it (the API client). */
  by: string;
  /** What the reporter sent (e.g. `{ parcels, note }`). */
  report: Record<string, unknown>;
}

/** Input of eventDeadline: the order and the event step about to wait. */
export interface EventDeadlineInput {
  orderId: string;
  step: string;
}

/** Result of eventDeadline: the step's deadline (ISO 8601) and what it is in words, or null: none. */
export interface EventDeadlineResult {
  deadline: string | null;
  what: string | null;
}

/** Result of every step's activity. */
export interface StepResult {
  step: string;
  /**
   * False when this run found the work done by an earlier or concurrent run and did nothing (a provider step's `sent`
   * claim, a recorded database step's result); true otherwise. A database step idempotent by nature always reports
   * true (the kit cannot tell: its own writes decide, and its `data` may say, e.g. `created: false`).
   */
  performed: boolean;
  /** Provider steps: the provider's id of the effect (e.g. `msg_…`), the same on every run. */
  providerId?: string;
  /** Provider steps: the idempotency key (claim key and `Idempotency-Key`). */
  key?: string;
  /** Database steps: what the step's transaction returned (or the recorded result of the run that acted). */
  data?: unknown;
}

/** Input of a compensation's activity. */
export interface CompensationInput {
  orderId: string;
}

/** Result of a compensation's activity. */
export interface CompensationResult {
  compensation: string;
  /** False when there was nothing to undo (the step never acted) or it was undone before. */
  performed: boolean;
  providerId?: string;
  data?: unknown;
}

/** Input of haltOrder. */
export interface HaltOrderInput {
  orderId: string;
  /** Why the order stops (the cancel reason or the failure), stored in `orders.halt_reason`. */
  reason: string;
  /** The provider steps the fence covers, from the order's plan: every step up to and including the pivot. */
  steps: string[];
  /**
   * The plan's pivot step (absent from 1.0.0 workflows: then the last of `steps`, their pivot). The fence reads a
   * passed pivot from its claim, so it must be the order's own pivot, not the registry's today.
   */
  pivot?: string;
  /** The plan's idempotency key of each fenced step, by name (absent from older plans: then the registry's). */
  keys?: Record<string, string>;
}

/**
 * Result of haltOrder:
 * - `halted`: no step's effect was performed or may have been, beyond those the compensations undo; every claim not
 *   yet sent is tombstoned (never performed, however late an attempt), and the order is marked halted. `rank`: the
 *   rank of the last status the order reached before the halt (`orders.halted_rank`): every step ranked at or
 *   below it committed its effect, including a step whose completion the workflow never recorded (a worker that
 *   died after the step's commit and before its workflow task completed), so the workflow compensates those too.
 *   Absent in results recorded by 1.0.0 workers (the workflow then compensates the steps it started).
 * - `sent`: the pivot's effect happened: the pivot is passed; nothing was changed, nothing may be compensated.
 * - `unknown`: a call of `step` is in flight or ended without a known outcome: nothing was changed; a person decides.
 */
export type HaltOrderResult =
  | { outcome: 'halted'; rank?: number | null }
  | { outcome: 'sent'; step: string; providerId: string }
  | { outcome: 'unknown'; step: string; claimOwner: string };

/** Input of recordResolution. */
export interface RecordResolutionInput {
  orderId: string;
  /** The resolution's id: the workflow Update id that carried it (a repeated request records once). */
  id: string;
  /** The step or compensation the order waits on (its activity name). */
  step: string;
  /** `performed`, `not_performed`, or `closed` (the order ends; no claim changes). */
  decision: 'performed' | 'not_performed' | 'closed';
  /** Why (1..1000 characters). */
  reason: string;
  /** Who decided (the operator's API client, 1..200 characters). */
  by: string;
  /** For `performed`: the reference of the effect (e.g. the provider's id); default `resolved:<id>`. */
  providerId?: string;
  /**
   * The claim to settle: the step's idempotency key from the order's plan. Without it, the registry's key of the step
   * or provider compensation named `step`; a database step or compensation has none.
   */
  key?: string;
  /** The status the decision writes with it: a step after the pivot resolved performed, or `closed`. */
  status?: { status: string; rank: number };
}

/** Result of recordResolution. */
export interface RecordResolutionResult {
  /** False when this id was recorded before: nothing was applied again. */
  recorded: boolean;
  /** The claim the decision settled, as it is now; null when the step has none. */
  claim: { key: string; status: ClaimStatus } | null;
}

/** The activity of a step. */
export type StepActivity = (input: StepInput) => Promise<StepResult>;
/** The activity of a compensation. */
export type CompensationActivity = (input: CompensationInput) => Promise<CompensationResult>;

/** Input of setOrderStatus. */
export interface SetOrderStatusInput {
  orderId: string;
  /** `attention_required`, `failed` or `cancelled` (the forward steps write theirs in their own transactions). */
  status: string;
  /** Its rank: for `attention_required` the waiting step's rank − 5 (attentionRank), for final failures 1 000 000. */
  rank: number;
  /** Why the order failed, was cancelled or needs attention (max 1000 chars are stored). */
  failureReason?: string;
}

/** Result of setOrderStatus: `applied` is false when a status of a higher rank was already stored. */
export interface SetOrderStatusResult {
  applied: boolean;
}

/** Input of planOrder. */
export interface PlanOrderInput {
  orderId: string;
}

/** The kit's own activities (every plan uses them). */
export interface KitActivities {
  /** The fence (`haltOrder`, activities/kit/run.ts). */
  haltOrder(input: HaltOrderInput): Promise<HaltOrderResult>;
  /**
   * Sets `orders.status` to `status` if its rank is above the stored one (or equal with the same status); sets
   * `completed_at` on `completed` (database clock).
   * @throws ApplicationFailure `RecordNotFoundError` (non-retryable) when the order does not exist.
   */
  setOrderStatus(input: SetOrderStatusInput): Promise<SetOrderStatusResult>;
  /**
   * The order's stored plan (`orders.plan`); for an order stored without one, the registry's plan for it, stored
   * now (so every later run reads the same).
   * @throws ApplicationFailure `RecordNotFoundError` (non-retryable) when the order does not exist.
   */
  planOrder(input: PlanOrderInput): Promise<OrderPlan>;
  /** An operator's audited decision on what an order waits on (`recordResolution`, activities/kit/resolutions.ts). */
  recordResolution(input: RecordResolutionInput): Promise<RecordResolutionResult>;
  /**
   * The deadline an event step's wait must not pass (its `deadline` hook, activities/kit/events.ts), read before each
   * wait; `{ deadline: null }` for a step without one.
   */
  eventDeadline(input: EventDeadlineInput): Promise<EventDeadlineResult>;
}
