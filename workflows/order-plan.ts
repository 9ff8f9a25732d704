/**
 * The plan an order runs: its steps in order, as the step catalogue (activities/catalogue/steps.ts) described them when
 * the order was placed. The API builds it (activities/catalogue/plan.ts), stores it on the order and passes it in the
 * workflow's input, so each execution runs the plan it started with: adding a step to the registry changes the plan
 * of new orders only, and a running order (or the replay of its history) keeps its own. See docs/versioning.md.
 *
 * Sandbox-safe: plain types and constants, no imports.
 */

/** Where a step sits around the point of no return. */
export const StepPhase = {
  /** Before the pivot: a failure or a cancel halts the order and compensates the step. */
  BeforePivot: 'before-pivot',
  /** The point of no return (exactly one step): once it acted, nothing compensates. */
  Pivot: 'pivot',
  /** After the pivot: a step that fails for good waits for an operator; nothing compensates. */
  AfterPivot: 'after-pivot',
} as const;
export type StepPhase = (typeof StepPhase)[keyof typeof StepPhase];

/** The retry profiles a plan may name (the keys of `RETRY_PROFILES` in ./activity-options.ts). */
export type PlannedRetryProfile = 'localDatabaseStep' | 'databaseStep' | 'providerCall';

/** One step of a plan. */
export interface PlannedStep {
  /** Activity name, e.g. `shipOrder`. */
  name: string;
  /**
   * `database`: a local activity on the order task queue; `provider`: an activity on the provider's task queue;
   * `event` (from 1.2): a bounded wait for an outside event, then a local activity that records it.
   */
  kind: 'database' | 'provider' | 'event';
  phase: StepPhase;
  /** The status the step writes when it succeeds (the plan's last step writes `completed`). */
  status: string;
  /** The rank written with that status: 10 × (1-based position). */
  rank: number;
  /** Retry profile of the activity call. */
  retry: PlannedRetryProfile;
  /** The provider's name (the task queue suffix), for provider steps. */
  provider?: string;
  /**
   * The step's idempotency key for this order (provider steps): its claim's key and the `Idempotency-Key` of its
   * calls. The halt fence reads the claim by it, so a step removed from the registry is still fenced. Absent from
   * plans stored before 1.1 and from the registry's plan (no order).
   */
  key?: string;
  /** The compensation's activity name and, for a provider compensation, its provider. */
  compensation?: { name: string; provider?: string };
  /** What the Temporal UI shows on the activity (user metadata), e.g. `shipment of 3 items`. */
  summary: string;
  /**
   * An event step's wait: the event (`packed`), the bound of one wait (ms, from configuration when the order was
   * placed, e.g. `WAREHOUSE_PACK_TIMEOUT`), how long before a deadline the wait stops (ms), and the bound's variable.
   */
  event?: PlannedEvent;
}

/** An event step's wait, as planned (see {@link PlannedStep.event}). */
export interface PlannedEvent {
  name: string;
  timeoutMs: number;
  marginMs?: number;
  timeoutSetting?: string;
  /** The earlier step whose compensation a cancel during the wait runs first; its definite refusal refuses it. */
  cancelFirst?: string;
}

/** The plan of one order. */
export interface OrderPlan {
  steps: PlannedStep[];
  /**
   * How the order reads in the Temporal UI, built by the API when it was placed (src/orders/order-display.ts): the
   * workflow's static summary (one line) and static details (Markdown). The starter passes them as the workflow's
   * user metadata; the workflow does not read them.
   */
  display?: {
    /** The static summary: one line, Markdown (escaped). */
    summary: string;
    /** The same line as plain text, for the `OrderSummary` search attribute (a list column). */
    plainSummary: string;
    /** The static details: Markdown. */
    details: string;
  };
}

/** What a step's summary may read of an order (the API has it when the order is placed). */
export interface OrderFacts {
  orderId: string;
  customerEmail: string;
  customerName: string | null;
  currency: string;
  /** Minor units. */
  totalMinor: number;
  lines: Array<{ sku: string; quantity: number }>;
  /**
   * How the order is paid: by card with the customer's payment-method token, or null (or absent: orders placed before
   * 1.2) on account. Read by steps' `when` (only a card order authorizes a payment); never shown: mask it.
   */
  payment?: { method: string } | null;
}

/** Rank distance between two consecutive steps' statuses. */
export const RANK_STEP = 10;

/**
 * Rank of `failed` and `cancelled`: above every step's (a plan has far fewer than 100 000 steps), so nothing
 * overwrites them.
 */
export const FINAL_FAILURE_RANK = 1_000_000;

/**
 * Rank of `attention_required` while a compensation that failed for good waits for an operator: above every step's
 * (a halted order's status), below `failed` and `cancelled`, which replace it once the order is undone.
 */
export const COMPENSATION_ATTENTION_RANK = FINAL_FAILURE_RANK - 1;

/** Rank of `received`. */
export const RECEIVED_RANK = 0;

/** The rank of `attention_required` while `step` waits: just below the status the step leads to. */
export function attentionRank(step: Pick<PlannedStep, 'rank'>): number {
  return step.rank - RANK_STEP / 2;
}

/** The index of the plan's pivot step. @throws Error when the plan has none. */
export function pivotIndex(plan: OrderPlan): number {
  const at = plan.steps.findIndex((s) => s.phase === StepPhase.Pivot);
  if (at < 0) throw new Error('the plan has no pivot step');
  return at;
}
