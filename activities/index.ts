/**
 * The activities of the order workflow, derived from the step registry (activities/steps/index.ts): one activity
 * per step and per compensation (each runs its definition through the kit, ./kit/run.ts), plus the kit's own:
 * `haltOrder` (the fence), `setOrderStatus` (the statuses the workflow writes itself), `planOrder` (the plan of a
 * run started without one), `recordResolution` (an operator's audited decision), `eventDeadline` (an event step's
 * deadline, read before its wait), and the retention Schedule's
 * `purgeExpiredIdempotencyRecords`.
 *
 * Activities are plain functions closed over their dependencies (no `this`), so they run alone under
 * `MockActivityEnvironment` and register as they are with a Temporal Worker. Provider steps (and provider
 * compensations) run on their provider's task queue, the rest on the order task queue: see
 * {@link activitiesByTaskQueue}.
 */
import type { OrderPlan } from '../workflows/order-plan.js';
import type { StepDefinition } from './kit/define.js';
import { notFound } from './kit/failures.js';
import { writeOrderStatus } from './kit/order-guards.js';
import { readOrder } from './kit/order.js';
import { buildPlan } from './catalogue/plan.js';
import { orderStatuses } from './catalogue/define.js';
import {
  haltOrder,
  runDatabaseCompensation,
  runDatabaseStep,
  runProviderCompensation,
  runProviderStep,
} from './kit/run.js';
import type {
  CompensationActivity,
  CompensationInput,
  KitActivities,
  StepActivity,
  StepInput,
} from '../workflows/order-activities.contract.js';
import type { ActivityDeps } from './ports.js';
import { recordResolution } from './kit/resolutions.js';
import { eventDeadline, runEventStep } from './kit/events.js';
import { createRetentionActivities } from './retention.activities.js';
import { createReturnActivities } from './returns/return.activities.js';
import { RETURN_PROVIDER_OF, type ReturnActivities } from '../workflows/order-return.contract.js';
import { STEPS } from './steps/index.js';

/**
 * Every activity: the kit's, the return workflow's (./returns/return.activities.ts), the retention one, and one per
 * step and compensation (by activity name).
 */
export type OrderActivities = KitActivities &
  ReturnActivities &
  ReturnType<typeof createRetentionActivities> &
  Record<string, StepActivity | CompensationActivity | ((input: never) => Promise<unknown>)>;

/**
 * Builds every activity over `deps`, for the steps of `steps` (default: the registry).
 * @returns a record of activity functions by activity name (register them with {@link activitiesByTaskQueue}).
 */
export function createActivities(deps: ActivityDeps, steps: readonly StepDefinition[] = STEPS): OrderActivities {
  const activities: Record<string, (input: never) => Promise<unknown>> = {};
  for (const step of steps) {
    activities[step.name] = (input: StepInput) =>
      step.kind === 'database'
        ? runDatabaseStep(step, deps, input)
        : step.kind === 'event'
          ? runEventStep(step, deps, input)
          : runProviderStep(step, deps, input);
    const compensation = step.compensation;
    if (compensation?.kind === 'database') {
      activities[compensation.name] = (input: CompensationInput) => runDatabaseCompensation(compensation, deps, input);
    } else if (compensation?.kind === 'provider' && step.kind === 'provider') {
      activities[compensation.name] = (input: CompensationInput) =>
        runProviderCompensation(step, compensation, deps, input);
    }
  }
  const kit: KitActivities = {
    haltOrder: (input) => haltOrder(steps, deps, input),
    recordResolution: (input) => recordResolution(steps, deps, input),
    eventDeadline: (input) => eventDeadline(steps, deps, input),
    async setOrderStatus(input) {
      const applied = await writeOrderStatus(
        deps.db,
        input.orderId,
        input.status,
        input.rank,
        input.failureReason ?? null,
      );
      if (applied) return { applied: true };
      const [order] = await deps.db.$queryRaw<Array<{ exists: boolean }>>`
        SELECT EXISTS (SELECT 1 FROM orders WHERE id = ${input.orderId}::uuid) AS exists`;
      if (!order!.exists) throw notFound('order', input.orderId);
      return { applied: false };
    },
    async planOrder({ orderId }) {
      const [row] = await deps.db.$queryRaw<Array<{ plan: OrderPlan | null }>>`
        SELECT plan FROM orders WHERE id = ${orderId}::uuid`;
      if (!row) throw notFound('order', orderId);
      if (row.plan) return row.plan;
      // The summaries read the order as a step's request does: one read (activities/kit/order.ts).
      const built = buildPlan(steps, await readOrder(deps.db, orderId));
      await deps.db.$executeRaw`
        UPDATE orders SET plan = ${JSON.stringify(built)}::jsonb WHERE id = ${orderId}::uuid AND plan IS NULL`;
      const [stored] = await deps.db.$queryRaw<Array<{ plan: OrderPlan }>>`
        SELECT plan FROM orders WHERE id = ${orderId}::uuid`;
      return stored!.plan;
    },
  };
  return {
    ...activities,
    ...kit,
    ...createReturnActivities(deps),
    ...createRetentionActivities(deps.idempotencyRecords),
  } as OrderActivities;
}

/** Activities grouped by where they run: the order task queue, and each provider's own task queue. */
export interface ActivitiesByTaskQueue {
  /** Database steps and compensations, and the kit's and retention activities: the order task queue. */
  main: Record<string, unknown>;
  /** Each provider's steps and provider compensations, by provider name: `<task queue>.<provider>`. */
  providers: Record<string, Record<string, unknown>>;
}

/**
 * Splits `activities` (e.g. {@link createActivities}'s, or test doubles by the same names) by task queue, following
 * `steps`: a provider step and a provider compensation go to their provider's queue, everything else to the main one.
 */
export function activitiesByTaskQueue(
  activities: Record<string, unknown>,
  steps: readonly StepDefinition[] = STEPS,
): ActivitiesByTaskQueue {
  const providerOf = new Map<string, string>(Object.entries(RETURN_PROVIDER_OF));
  for (const step of steps) {
    if (step.kind === 'provider') providerOf.set(step.name, step.provider.name);
    if (step.compensation?.kind === 'provider') providerOf.set(step.compensation.name, step.compensation.provider.name);
  }
  const grouped: ActivitiesByTaskQueue = { main: {}, providers: {} };
  for (const provider of new Set(providerOf.values())) grouped.providers[provider] = {};
  for (const [name, fn] of Object.entries(activities)) {
    const provider = providerOf.get(name);
    if (provider) grouped.providers[provider]![name] = fn;
    else grouped.main[name] = fn;
  }
  return grouped;
}

export { STEPS, orderStatuses };
export * from './ports.js';
export type * from '../workflows/order-activities.contract.js';
export type {
  PurgeExpiredIdempotencyRecordsInput,
  PurgeExpiredIdempotencyRecordsResult,
} from '../workflows/idempotency-retention.contract.js';
