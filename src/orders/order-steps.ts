/**
 * What the API says about steps and statuses, derived from the step catalogue (activities/catalogue/steps.ts) and each
 * order's own plan (`orders.plan`): the statuses an order can have, their labels, each order's step track and
 * whether it may still be cancelled. Nothing here lists a step by name.
 */
import { orderStatuses, registryPlan, STEP_CATALOGUE } from '../../activities/catalogue/index.js';
import { COMPENSATION_FAILED, OrderStatus, isTerminalStatus } from '../../workflows/order-fulfilment.contract.js';
import {
  attentionRank,
  COMPENSATION_ATTENTION_RANK,
  StepPhase,
  type OrderPlan,
  type PlannedStep,
} from '../../workflows/order-plan.js';

/** Every status an order can have: `received`, each registered step's, and the lifecycle's. */
export const ORDER_STATUSES: readonly string[] = orderStatuses(STEP_CATALOGUE);

/** Every registered step's activity name, in registry order. */
export const STEP_NAMES: readonly string[] = STEP_CATALOGUE.map((s) => s.name);

/** Human names of the statuses: each step's label for its status, and the lifecycle's. */
export const STATUS_LABELS: Readonly<Record<string, string>> = {
  [OrderStatus.Received]: 'Received',
  ...Object.fromEntries(STEP_CATALOGUE.map((s) => [s.status, s.label])),
  [OrderStatus.Completed]: 'Completed',
  [OrderStatus.AttentionRequired]: 'Attention required',
  [OrderStatus.Failed]: 'Failed',
  [OrderStatus.Cancelled]: 'Cancelled',
  [OrderStatus.Closed]: 'Closed',
};

/** Every compensation's activity name, in registry order (an order may wait on one that failed for good). */
export const COMPENSATION_NAMES: readonly string[] = STEP_CATALOGUE.flatMap((s) =>
  s.compensation ? [s.compensation.name] : [],
);

/** Human names of the steps, by activity name. */
const STEP_LABELS: Readonly<Record<string, string>> = Object.fromEntries(STEP_CATALOGUE.map((s) => [s.name, s.label]));

/** The plan of the registry as it is now (for orders stored without one): summaries are the labels. */
const REGISTRY_PLAN: OrderPlan = registryPlan(STEP_CATALOGUE);

/**
 * Where a step of an order stands:
 * - `done`: it acted; `current`: it runs (or is next) now; `pending`: not yet;
 * - `waiting`: it failed for good or its outcome is unknown, and waits for an operator's retry;
 * - `undone`: it acted and was compensated (the order failed or was cancelled); `skipped`: it never ran.
 */
export type StepState = 'done' | 'current' | 'pending' | 'waiting' | 'undone' | 'skipped';

/** One step of an order's track. */
export interface StepTrackEntry {
  /** The step's activity name, e.g. `shipOrder`. */
  name: string;
  /** Its human name, e.g. `Shipped`. */
  label: string;
  /** The status it leads to. */
  status: string;
  phase: PlannedStep['phase'];
  state: StepState;
}

/** What the track reads of an order row. */
export interface TrackedOrder {
  status: string;
  statusStep: number;
  haltedRank: number | null;
  plan: unknown;
  /**
   * The internal failure reason: names the compensation an order waits on (`compensation_failed: <name> failed: …`)
   * and the step a closed order was closed at (`closed at <step> by …`).
   */
  failureReason?: string | null;
}

/** The order's plan, or the registry's for an order stored without one. */
export function planOf(order: Pick<TrackedOrder, 'plan'>): OrderPlan {
  const plan = order.plan as OrderPlan | null;
  return plan && Array.isArray(plan.steps) ? plan : REGISTRY_PLAN;
}

/**
 * The order's step track, from its status, the rank of its last status write and its plan: every step before the
 * current rank is done; in `attention_required` the step whose attention rank is stored waits (or, while a
 * compensation that failed for good waits, the step it undoes, the other reached ones undone); a failed or cancelled
 * order shows the steps it reached before it was halted as undone (when they have a compensation) and the rest as
 * skipped; a closed order shows the steps before the one it was closed at as done and the rest as skipped.
 */
export function stepTrack(order: TrackedOrder): StepTrackEntry[] {
  const plan = planOf(order);
  const entry = (step: PlannedStep, state: StepState): StepTrackEntry => ({
    name: step.name,
    label: STEP_LABELS[step.name] ?? step.name,
    status: step.status,
    phase: step.phase,
    state,
  });
  const rank = order.statusStep;
  if (order.status === OrderStatus.Failed || order.status === OrderStatus.Cancelled) {
    const reached = order.haltedRank ?? 0;
    return plan.steps.map((s) => entry(s, s.rank > reached ? 'skipped' : s.compensation ? 'undone' : 'done'));
  }
  if (order.status === OrderStatus.AttentionRequired && rank === COMPENSATION_ATTENTION_RANK) {
    const reached = order.haltedRank ?? 0;
    const undoing = new RegExp(`^${COMPENSATION_FAILED}: (\\w+) failed`).exec(order.failureReason ?? '')?.[1];
    return plan.steps.map((s) => {
      if (s.rank > reached) return entry(s, 'skipped');
      if (!s.compensation) return entry(s, 'done');
      return entry(s, s.compensation.name === undoing ? 'waiting' : 'undone');
    });
  }
  if (order.status === OrderStatus.Closed) {
    const at = /^closed at (\w+) by /.exec(order.failureReason ?? '')?.[1];
    const index = plan.steps.findIndex((s) => s.name === at);
    return plan.steps.map((s, i) => entry(s, index >= 0 && i < index ? 'done' : 'skipped'));
  }
  if (order.status === OrderStatus.AttentionRequired) {
    return plan.steps.map((s) => entry(s, attentionRank(s) === rank ? 'waiting' : s.rank < rank ? 'done' : 'pending'));
  }
  let current = false;
  return plan.steps.map((s) => {
    if (s.rank <= rank) return entry(s, 'done');
    if (current || isTerminalStatus(order.status)) return entry(s, 'pending');
    current = true;
    return entry(s, 'current');
  });
}

/**
 * Whether a cancel can still be honoured: the order is open, does not wait for an operator, was not halted, and
 * has not reached its pivot's status.
 */
export function isCancellable(order: TrackedOrder & { haltedAt?: Date | null }): boolean {
  if (isTerminalStatus(order.status) || order.status === OrderStatus.AttentionRequired || order.haltedAt) return false;
  const pivot = planOf(order).steps.find((s) => s.phase === StepPhase.Pivot);
  return pivot === undefined || order.statusStep < pivot.rank;
}
