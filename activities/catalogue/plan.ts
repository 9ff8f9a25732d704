/**
 * Plans: the catalogue's steps as one order runs them (workflows/order-plan.ts). Built by the API when an order is
 * placed (stored in `orders.plan` and passed in the workflow's input), or by the `planOrder` activity for a run
 * started without one. Reads the steps' catalogue entries only (a step definition is its entry and its code), so the
 * API builds plans without loading any step's code.
 */
import {
  RANK_STEP,
  type OrderFacts,
  type OrderPlan,
  type PlannedEvent,
  type PlannedStep,
} from '../../workflows/order-plan.js';
import { plainLine } from '../../workflows/display-text.js';
import { OrderStatus } from '../../workflows/order-fulfilment.contract.js';
import { providerName, validateCatalogue, type AnyStepEntry } from './define.js';

/** Options of {@link buildPlan}. */
export interface PlanOptions {
  /**
   * The configured bound and deadline margin of each event (by event name, ms), e.g. `packed` from
   * `WAREHOUSE_PACK_TIMEOUT`; an event not named keeps its step's defaults.
   */
  events?: Readonly<Record<string, { timeoutMs?: number; marginMs?: number }>>;
}

/**
 * The plan of an order over the registry's steps (catalogue entries, or step definitions) that apply to it (a step with `when` only when it says so): each step with its rank (10 × its 1-based position), the status it writes (the
 * last step writes `completed`), its retry profile, its provider, its idempotency key for the order (provider steps),
 * its compensation, its summary for `order`, and an event step's wait (its bound from `options.events`).
 */
export function buildPlan(registry: readonly AnyStepEntry[], order: OrderFacts, options: PlanOptions = {}): OrderPlan {
  // The order's own steps: a conditional step only when it applies (the registry's rules hold for the subset too).
  const steps = registry.some((s) => s.when)
    ? validateCatalogue(registry.filter((s) => !s.when || s.when(order)))
    : registry;
  return {
    steps: steps.map((step, i): PlannedStep => {
      const last = i === steps.length - 1;
      const compensation = step.compensation;
      return {
        name: step.name,
        kind: step.kind,
        phase: step.phase,
        status: last ? OrderStatus.Completed : step.status,
        rank: (i + 1) * RANK_STEP,
        retry: step.retry ?? (step.kind === 'provider' ? 'providerCall' : 'localDatabaseStep'),
        ...(step.kind === 'provider' ? { provider: providerName(step.provider) } : {}),
        ...(step.kind === 'provider' && order.orderId !== '' ? { key: step.key(order.orderId) } : {}),
        ...(compensation
          ? {
              compensation: {
                name: compensation.name,
                ...(compensation.kind === 'provider' ? { provider: providerName(compensation.provider) } : {}),
              },
            }
          : {}),
        summary: truncate(step.summary?.(order) ?? step.label),
        ...(step.kind === 'event' ? { event: plannedEvent(step.event, options) } : {}),
      };
    }),
  };
}

/**
 * The plan of `steps` for no order in particular (the registry's shape: ranks, statuses, profiles, compensations),
 * each summary its step's label. For what lists steps (the docs tables, an order stored without a plan).
 */
export function registryPlan(steps: readonly AnyStepEntry[]): OrderPlan {
  return buildPlan(
    steps.map((s) => ({ ...s, summary: undefined, when: undefined })),
    { orderId: '', customerEmail: '', customerName: null, currency: '', totalMinor: 0, lines: [] },
  );
}

/** An event step's wait with the configured bound and margin, when configured. */
function plannedEvent(event: PlannedEvent, options: PlanOptions): PlannedEvent {
  const configured = options.events?.[event.name];
  const marginMs = configured?.marginMs ?? event.marginMs;
  return {
    name: event.name,
    timeoutMs: configured?.timeoutMs ?? event.timeoutMs,
    ...(marginMs === undefined ? {} : { marginMs }),
    ...(event.timeoutSetting ? { timeoutSetting: event.timeoutSetting } : {}),
    ...(event.cancelFirst ? { cancelFirst: event.cancelFirst } : {}),
  };
}

/**
 * Summaries are one line in the Temporal UI, at most 200 characters, as plain text without invisible characters
 * (workflows/display-text.ts; an isolate cut off by the limit is dropped).
 */
function truncate(text: string): string {
  const line = plainLine(text);
  return line.length > 200 ? plainLine(`${line.slice(0, 199)}…`) : line;
}
