/**
 * The step catalogue's kit: what a step IS, without what it DOES. A catalogue entry holds a step's metadata (its
 * activity name, phase, kind, status and label, its provider's name, its idempotency key, its compensation's name,
 * its `when` and `summary`, an event step's wait, a provider step's business refusal and precondition): what the
 * API, the plan and the docs read. The step's code (SQL, provider calls, records) is its definition (activities/steps/<name>.step.ts), which
 * spreads its entry, so nothing is written twice; the registry (activities/steps/index.ts) loads the definitions in
 * the worker only, and checks each against its entry ({@link sameEntry}).
 *
 * Runtime imports here: the sandbox-safe workflow files only (no step code, no SQL, no Prisma, no provider). An
 * import rule in eslint.config.js keeps the API (src/ outside the worker) on this folder. See docs/extending.md.
 */
import { OrderStatus } from '../../workflows/order-fulfilment.contract.js';
import { StepPhase, type OrderFacts, type PlannedEvent, type PlannedRetryProfile } from '../../workflows/order-plan.js';

export { StepPhase };
export type { OrderFacts };

/**
 * A provider as the catalogue names it: its name (an entry), or its definition (a step definition: providers/kit/
 * define.ts), of which the catalogue reads the name only.
 */
export type ProviderRef = string | { readonly name: string };

/** The provider's name of a {@link ProviderRef}. */
export function providerName(provider: ProviderRef): string {
  return typeof provider === 'string' ? provider : provider.name;
}

/** What every step's entry says about it. */
export interface StepEntryCommon {
  /** The activity name: verb + object, camelCase (e.g. `shipOrder`). Unique. Its code: `<kebab-name>.step.ts`. */
  name: string;
  /**
   * Where the step sits around the point of no return: `before-pivot` (a failure or a cancel compensates it),
   * `pivot` (exactly one step: once it acted, nothing compensates), `after-pivot` (a failure waits for an operator).
   */
  phase: StepPhase;
  /** The order status once the step succeeded, snake_case (e.g. `shipped`). The last step writes `completed`. */
  status: string;
  /** Human name of the status, for the page and the docs (e.g. `Shipped`). */
  label: string;
  /** One line for the docs: what the step does. */
  description: string;
  /**
   * Retry profile (workflows/activity-options.ts). Default: `localDatabaseStep` for database steps (they run as
   * local activities), `providerCall` for provider steps.
   */
  retry?: PlannedRetryProfile;
  /**
   * Whether an order has this step, from what is known when it is placed (e.g. only orders paid by card authorize a
   * payment). Evaluated once, when the order's plan is built (./plan.ts): the plan is stored and passed in the
   * workflow's input, so a running order (and its replay) keeps the steps it started with. Default: every order. A
   * conditional step is never the pivot, and no event step's `cancelFirst` names one.
   */
  when?(order: OrderFacts): boolean;
  /**
   * What the Temporal UI shows on the step's activity, from the order (e.g. `shipment of 3 items`). Customer
   * data here is visible to every operator: mask it (see docs/operations.md). Default: the label.
   */
  summary?(order: OrderFacts): string;
}

/** A database compensation's entry: its activity name (the inverse verb, e.g. `releaseInventory`). */
export interface DatabaseCompensationEntry {
  kind: 'database';
  name: string;
  description: string;
}

/** A provider compensation's entry (e.g. a void of a payment authorization): its activity name and provider. */
export interface ProviderCompensationEntry<P extends ProviderRef = string> {
  kind: 'provider';
  name: string;
  description: string;
  /** The provider the compensation calls: its name (its definition, in a step definition). */
  provider: P;
}

/**
 * A provider step's business refusal: a definite refusal of the provider that is the customer's business, not a
 * fault (e.g. a card declined). The order ends `failed` with the public failure {@link RefusalEntry.failure}.
 */
export interface RefusalEntry {
  /**
   * The provider's problem types that are this refusal: the last segment of the problem document's `type` URI
   * (e.g. `card-declined`), answered with a 4xx that says the provider did not act.
   */
  problems: readonly string[];
  /** The public failure code the order ends with (src/orders/public-failure.ts), snake_case, e.g. `payment_declined`. */
  failure: string;
  /** What the customer reads, one sentence without the final stop, e.g. `The payment was declined`. */
  message: string;
  /**
   * The member of the problem document that says why, a code safe for the customer (e.g. `declineCode`: the
   * provider's `insufficient_funds`); a value that is not `[a-z0-9_]{1,64}` is not kept.
   */
  reasonMember?: string;
}

/**
 * What must still hold for a provider step to act (its definition adds the check): when it does not, nothing is
 * called and the order ends `failed` with the public failure {@link PreconditionEntry.failure}, compensated like any
 * failure before the pivot (e.g. shipOrder's `payment_expired`: the card's hold no longer long enough to capture).
 */
export interface PreconditionEntry {
  /** The public failure code the order ends with (src/orders/public-failure.ts), snake_case, e.g. `payment_expired`. */
  failure: string;
  /** What the customer reads, one sentence without the final stop, e.g. `The payment authorization expired`. */
  message: string;
}

/** An event step's wait, as its entry defines it (the plan may set the bound from configuration). */
export interface EventEntry extends PlannedEvent {
  /** The event's name, lower-case (`packed`): the Update that reports it is `report<Name>` (e.g. `reportPacked`). */
  name: string;
  /** The bound of one wait, ms, unless the plan's configuration sets it (e.g. `WAREHOUSE_PACK_TIMEOUT`). */
  timeoutMs: number;
  /** How long before the `deadline` the wait stops, ms (default 0). */
  marginMs?: number;
  /** The configuration variable of the bound, for the messages and the docs (e.g. `WAREHOUSE_PACK_TIMEOUT`). */
  timeoutSetting?: string;
  /**
   * The earlier step whose provider compensation a cancel during the wait runs first (the request the event answers,
   * e.g. `requestPick`): its definite refusal (the warehouse started picking) refuses the cancel and the order goes
   * on waiting; otherwise the order halts and compensates as usual (that compensation then replays, same key).
   */
  cancelFirst?: string;
}

/** A database step's entry: one transaction, on the order task queue. */
export interface DatabaseStepEntry extends StepEntryCommon {
  kind: 'database';
  compensation?: DatabaseCompensationEntry;
}

/** A provider step's entry: an effect at a provider, over HTTP, on the provider's task queue. */
export interface ProviderStepEntry<P extends ProviderRef = string> extends StepEntryCommon {
  kind: 'provider';
  /** The provider the step calls: its name (its definition, in a step definition). */
  provider: P;
  /**
   * The idempotency key, from the identity of the work, never a fresh random id (e.g. `shipment:<orderId>`): the
   * claim's key and the `Idempotency-Key` of every attempt. At most 255 characters.
   */
  key(orderId: string): string;
  /** The provider's answer that ends the order as the customer's business ({@link RefusalEntry}). */
  refused?: RefusalEntry;
  /** What must still hold before each call ({@link PreconditionEntry}). */
  precondition?: PreconditionEntry;
  compensation?: DatabaseCompensationEntry | ProviderCompensationEntry<P>;
}

/** An event step's entry: a bounded wait for an outside event (e.g. the warehouse's `packed`). Never the pivot. */
export interface EventStepEntry extends StepEntryCommon {
  kind: 'event';
  event: EventEntry;
  /** What the step's deadline is, in words, for the reason (e.g. `the payment authorization expires`). */
  deadlineWhat?: string;
  /** None: an event step only records (the step that asked for the event undoes the request). */
  compensation?: undefined;
}

/**
 * A step's catalogue entry. `P`: how providers are named (`string` in the catalogue; a step definition, which is its
 * entry and its code, names them by their definitions).
 */
export type StepEntry<P extends ProviderRef = string> = DatabaseStepEntry | ProviderStepEntry<P> | EventStepEntry;

/** Any entry or step definition: what the plan and the catalogue's rules read. */
export type AnyStepEntry = StepEntry<ProviderRef>;

const ACTIVITY_NAME = /^[a-z][A-Za-z0-9]*$/;
const STATUS = /^[a-z][a-z0-9_]*$/;
/** Statuses of the lifecycle that no step may take. */
const RESERVED_STATUSES = ['received', 'completed', 'attention_required', 'failed', 'cancelled', 'closed'];
/** Activity names of the kit's own activities. */
const RESERVED_NAMES = [
  'haltOrder',
  'setOrderStatus',
  'planOrder',
  'recordResolution',
  'eventDeadline',
  'purgeExpiredIdempotencyRecords',
];
const EVENT_NAME = /^[a-z][a-z0-9]*$/;

/**
 * The problems of a list of steps (entries or definitions) by the catalogue's rules: unique activity names (steps and
 * compensations), unique statuses, exactly one pivot (a provider step), phases in order (every `before-pivot` step
 * before the pivot, every `after-pivot` step after it), no compensation on the pivot or after it, a provider
 * compensation only on a provider step, event steps' names and bounds, `cancelFirst` and `when` rules, refusals.
 * @param extra more problems of one step (e.g. the step kit's: a provider operation that does not exist), in order.
 * @returns one line per problem (none: the list holds).
 */
export function catalogueProblems<S extends AnyStepEntry>(
  steps: readonly S[],
  extra: (step: S) => string[] = () => [],
): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  const statuses = new Set<string>();
  const taken = (name: string, what: string) => {
    if (!ACTIVITY_NAME.test(name)) problems.push(`${what} ${name}: not a camelCase activity name`);
    if (names.has(name) || RESERVED_NAMES.includes(name)) problems.push(`${what} ${name}: the name is taken`);
    names.add(name);
  };
  const pivots = steps.filter((s) => s.phase === StepPhase.Pivot);
  if (pivots.length !== 1) problems.push(`exactly one step must be the pivot (found ${pivots.length})`);
  const pivotAt = steps.findIndex((s) => s.phase === StepPhase.Pivot);
  // The halt fence tells a passed pivot by its claim: the pivot is an effect at a provider.
  if (pivotAt >= 0 && steps[pivotAt]!.kind !== 'provider') problems.push('the pivot must be a provider step');
  const events = new Set<string>();
  steps.forEach((step, i) => {
    taken(step.name, 'step');
    if (!STATUS.test(step.status)) problems.push(`step ${step.name}: status ${step.status} is not snake_case`);
    if (statuses.has(step.status) || RESERVED_STATUSES.includes(step.status)) {
      problems.push(`step ${step.name}: status ${step.status} is taken`);
    }
    statuses.add(step.status);
    if (step.phase === StepPhase.BeforePivot && pivotAt >= 0 && i > pivotAt) {
      problems.push(`step ${step.name} is before-pivot but comes after the pivot`);
    }
    if (step.phase === StepPhase.AfterPivot && pivotAt >= 0 && i < pivotAt) {
      problems.push(`step ${step.name} is after-pivot but comes before the pivot`);
    }
    if (step.compensation) {
      taken(step.compensation.name, 'compensation');
      if (step.compensation.kind === 'provider' && step.kind !== 'provider') {
        problems.push(`step ${step.name}: a provider compensation belongs to a provider step (it undoes its effect)`);
      }
      if (step.phase !== StepPhase.BeforePivot) {
        problems.push(`step ${step.name}: only a before-pivot step has a compensation (nothing compensates past it)`);
      }
    }
    if (step.kind === 'event') {
      const { name, timeoutMs, marginMs } = step.event;
      if (step.phase === StepPhase.Pivot) problems.push(`step ${step.name}: an event step is never the pivot`);
      if (!EVENT_NAME.test(name)) problems.push(`step ${step.name}: event ${name} is not a lower-case name`);
      if (events.has(name)) problems.push(`step ${step.name}: event ${name} is awaited by another step`);
      events.add(name);
      if (!(timeoutMs > 0) || !((marginMs ?? 0) >= 0)) {
        problems.push(`step ${step.name}: the event's timeout must be positive and its margin not negative`);
      }
      const first = step.event.cancelFirst;
      const earlier = first === undefined ? undefined : steps.slice(0, i).find((s) => s.name === first);
      if (first !== undefined && earlier?.compensation?.kind !== 'provider') {
        problems.push(`step ${step.name}: cancelFirst ${first} is not an earlier step with a provider compensation`);
      }
    }
    problems.push(...extra(step));
    if (step.when && step.phase === StepPhase.Pivot) problems.push(`step ${step.name}: the pivot is never conditional`);
    if (step.kind === 'event' && step.event.cancelFirst !== undefined) {
      if (steps.find((s) => s.name === step.event.cancelFirst)?.when && !step.when) {
        problems.push(`step ${step.name}: cancelFirst ${step.event.cancelFirst} is conditional (its plan may lack it)`);
      }
    }
    if (step.kind === 'provider' && step.refused) {
      if (!STATUS.test(step.refused.failure)) problems.push(`step ${step.name}: refused.failure is not snake_case`);
      if (step.refused.problems.length === 0) problems.push(`step ${step.name}: refused names no problem type`);
    }
    if (step.kind === 'provider' && step.precondition && !STATUS.test(step.precondition.failure)) {
      problems.push(`step ${step.name}: precondition.failure is not snake_case`);
    }
  });
  // The plan of an order for which no conditional step applies must hold by the same rules (buildPlan checks each
  // order's own plan with them too).
  if (problems.length === 0 && steps.some((s) => s.when)) {
    problems.push(
      ...catalogueProblems(
        steps.filter((s) => !s.when),
        extra,
      ),
    );
  }
  return problems;
}

/**
 * Checks a list of steps (the catalogue, or step definitions) by the catalogue's rules ({@link catalogueProblems}).
 * @returns the steps, unchanged.
 * @throws Error naming every problem, one per line.
 */
export function validateCatalogue<const S extends readonly AnyStepEntry[]>(steps: S): S {
  const problems = catalogueProblems(steps);
  if (problems.length > 0) throw new Error(`Invalid step registry:\n  ${problems.join('\n  ')}`);
  return steps;
}

/**
 * A step's catalogue entry, from its entry or its definition: the members an entry has (code left out), providers by
 * name, members that are undefined left out.
 */
export function entryOf(step: AnyStepEntry): StepEntry {
  const common = {
    kind: step.kind,
    name: step.name,
    phase: step.phase,
    status: step.status,
    label: step.label,
    description: step.description,
    retry: step.retry,
    when: step.when,
    summary: step.summary,
  };
  const compensation = step.compensation;
  const entry =
    step.kind === 'provider'
      ? {
          ...common,
          provider: providerName(step.provider),
          key: step.key,
          refused: step.refused && {
            problems: step.refused.problems,
            failure: step.refused.failure,
            message: step.refused.message,
            reasonMember: step.refused.reasonMember,
          },
          precondition: step.precondition && {
            failure: step.precondition.failure,
            message: step.precondition.message,
          },
        }
      : step.kind === 'event'
        ? { ...common, event: { ...step.event }, deadlineWhat: step.deadlineWhat }
        : common;
  return withoutUndefined({
    ...entry,
    compensation: compensation && {
      kind: compensation.kind,
      name: compensation.name,
      description: compensation.description,
      ...(compensation.kind === 'provider' ? { provider: providerName(compensation.provider) } : {}),
    },
  }) as unknown as StepEntry;
}

/**
 * Where a step definition differs from its catalogue entry: the members (paths, e.g. `compensation.name`) whose
 * values differ, functions compared by identity (a definition spreads its entry, so its `when`, `summary` and `key`
 * are the entry's own).
 * @returns the differing members, none when they agree.
 */
export function sameEntry(definition: AnyStepEntry, entry: AnyStepEntry): string[] {
  const differ: string[] = [];
  const compare = (a: unknown, b: unknown, at: string) => {
    if (a === b) return;
    if (a && b && typeof a === 'object' && typeof b === 'object') {
      const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
      for (const key of keys) {
        compare((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key], at ? `${at}.${key}` : key);
      }
      return;
    }
    differ.push(at);
  };
  compare(entryOf(definition), entryOf(entry), '');
  return differ;
}

/** `value` (a plain object, nested) without its undefined members. */
function withoutUndefined(value: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [
        k,
        v && typeof v === 'object' && !Array.isArray(v) ? withoutUndefined(v as Record<string, unknown>) : v,
      ]),
  );
}

/** The file of a step's code under activities/steps/, from its activity name: `shipOrder` → `ship-order.step.ts`. */
export function stepFileName(name: string): string {
  return `${name.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}.step.ts`;
}

/** The statuses an order can have, from a list of steps: `received`, each step's, and the lifecycle's. */
export function orderStatuses(steps: ReadonlyArray<Pick<StepEntryCommon, 'status'>>): string[] {
  return [
    OrderStatus.Received,
    ...steps.map((s) => s.status),
    OrderStatus.Completed,
    OrderStatus.AttentionRequired,
    OrderStatus.Failed,
    OrderStatus.Cancelled,
    OrderStatus.Closed,
  ];
}
