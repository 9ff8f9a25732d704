/**
 * A step is a definition: what it is (its activity name, its phase around the pivot, the status it leads to, its
 * retry profile) and what it does (a database transaction, or a provider call with its idempotency key and how its
 * answer is recorded), with its compensation beside it. The kit (./run.ts) runs the protocols every step needs:
 * - the order-row lock and the halt fence (a halted or final order is refused before anything happens);
 * - for a provider step: the order read once per attempt and handed to its `request` with earlier steps' answers
 *   (a request is a mapping: see {@link RequestContext}); claim first, act second under the step's idempotency key
 *   (a `side_effect_claims` row
 *   written before the call, the key sent as `Idempotency-Key` on every attempt), heartbeats during the call,
 *   definite versus unknown outcomes (a definite refusal frees the claim, an unknown one keeps it for a retry with
 *   the same key), retries with jitter, and the answer recorded with the status in one transaction;
 * - for a database step: its transaction under the order-row lock, the status written in it at the step's rank,
 *   and (unless the step says it is idempotent by nature) its result recorded once in `order_step_results`, so a
 *   re-run returns the recorded result instead of acting twice;
 * - compensations: a database compensation runs under the lock after the order is marked halted; a provider
 *   compensation is a provider call made claim-first like any other effect, only when the forward effect happened.
 *
 * What a step is (its name, phase, status, label, provider's name, key, compensation's name...) is its catalogue
 * entry (activities/catalogue/steps.ts), which its definition spreads: the catalogue's ordered list is the one registry
 * everything else derives from, and the worker's registry (activities/steps/index.ts) loads one definition per entry. Inspired
 * by Medusa's `createStep(name, invoke, compensate)`; ours adds the phase, the idempotency key, claim-first and the
 * status rank. See docs/extending.md.
 */
import {
  catalogueProblems,
  StepPhase,
  type DatabaseCompensationEntry,
  type DatabaseStepEntry,
  type EventStepEntry,
  type OrderFacts,
  type ProviderCompensationEntry,
  type PreconditionEntry,
  type ProviderStepEntry,
  type RefusalEntry,
  type StepEntryCommon,
} from '../catalogue/define.js';
import type { ProviderAnswer, ProviderDefinition, RequestOf, ResponseOf } from '../../providers/kit/define.js';
import type { Db, SqlQueries } from '../ports.js';
import type { StepOrder } from './order.js';

export { StepPhase };
export type { OrderFacts, StepOrder };

/**
 * Earlier steps' recorded answers, read when asked (a typed part of every step's context): what a step needs of an
 * effect made before it, e.g. a capture needs the authorization id its provider returned. Reads go through the
 * context's connection (a database step's: its transaction, under the order-row lock). See docs/extending.md.
 */
export interface EarlierAnswers {
  /**
   * The provider's id of an earlier provider step's effect for this order (recorded on its claim when it was
   * `sent`), e.g. `auth_…` for an authorization.
   * @throws ApplicationFailure `RecordNotFoundError` (non-retryable) when that step has not acted for this order.
   */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  providerId(step: ProviderStepDefinition<any, any>): Promise<string>;
  /**
   * What an earlier `recorded` database step returned for this order (its result in `order_step_results`).
   * @throws ApplicationFailure `RecordNotFoundError` (non-retryable) when that step has no recorded result for this
   *   order; Error for a step idempotent by nature (it records nothing: read its own tables).
   */
  data<R>(step: DatabaseStepDefinition<R>): Promise<R>;
}

/** What every step's code gets. */
export interface StepContext {
  orderId: string;
  /** The database (outside any transaction), for reads. */
  db: Db;
  /** Earlier steps' recorded answers. */
  answers: EarlierAnswers;
}

/** What a provider step's `request` gets: {@link StepContext} and the order, read once for the attempt. */
export interface RequestContext extends StepContext {
  /** The stored order, its lines and its invoice (activities/kit/order.ts). */
  order: StepOrder;
}

/** What a provider compensation's `request` gets: {@link RequestContext} and the answer of the effect it undoes. */
export interface CompensationRequestContext extends RequestContext {
  /** The forward step's effect: its idempotency key and the provider's id of it (e.g. the authorization to void). */
  forward: { key: string; providerId: string };
}

/** What a database step's (or a database compensation's) transaction gets: {@link StepContext} and the transaction. */
export interface TransactionContext extends StepContext {
  /** The transaction the kit opened; the order row is locked in it. */
  tx: SqlQueries;
}

/** What a provider step's `record` gets: the transaction, the request sent and the provider's answer. */
export interface RecordContext<Req, Res> extends TransactionContext {
  /** The idempotency key of the call. */
  key: string;
  request: Req;
  answer: ProviderAnswer<Res>;
}

/**
 * What a step's operator hooks get ({@link StepCommon.performedByHand}, {@link StepCommon.closed}): the resolution's
 * transaction (the order row locked, the audit row just inserted) and the order as stored.
 */
export interface ResolutionContext {
  orderId: string;
  /** The resolution's transaction: the hook's writes commit with the audit row, or not at all. */
  tx: SqlQueries;
  /** The stored order, its lines and its invoice. */
  order: StepOrder;
  /** The operator's decision: its id (the Update id), the reference given (`providerId`, or null) and who. */
  resolution: { id: string; providerId: string | null; by: string };
}

/** What every step declares about itself: its catalogue entry's members, and the operator hooks. */
interface StepCommon extends StepEntryCommon {
  /**
   * What the step records itself when an operator resolves it `performed` (done by hand, e.g. shipped with another
   * carrier): the rows its own success writes (a shipment, its stock movements), in the resolution's transaction,
   * with absolute writes under ids of their own, so a second run changes nothing. Optional: without it a resolution
   * settles the claim and the status only.
   */
  performedByHand?(ctx: ResolutionContext): Promise<void>;
  /**
   * What becomes of the step's effect when an operator closes the order after the point of no return (e.g. the
   * reservation of goods that never left is released), in the close's transaction. Called for every step that has
   * it: a no-op when the step never acted; harmless when run twice.
   */
  closed?(ctx: ResolutionContext): Promise<void>;
}

/** A compensation that undoes a database step in a transaction. */
export interface DatabaseCompensation extends DatabaseCompensationEntry {
  /**
   * Undoes the step's writes. Runs under the order-row lock after the order was marked halted, so no late attempt
   * of the step acts after it; must be a no-op when the step never acted, and harmless when run twice.
   */
  run(ctx: TransactionContext): Promise<unknown>;
}

/**
 * A compensation that is itself a provider call (e.g. a void of a payment authorization), made claim-first under its
 * own idempotency key. The kit calls it only when the forward effect happened (its claim is `sent`), and hands its
 * `request` that effect's provider id (`ctx.forward.providerId`).
 */
export interface ProviderCompensation<
  P extends ProviderDefinition = ProviderDefinition,
  K extends keyof P['operations'] & string = keyof P['operations'] & string,
> extends ProviderCompensationEntry<P> {
  operation: K;
  /** Idempotency key of the compensation, from the identity of the work (e.g. `payment-void:<orderId>`). */
  key(orderId: string): string;
  /**
   * Builds the request from the order, the forward effect's answer and earlier answers only (a mapping: every attempt
   * sends the identical body).
   */
  request(ctx: CompensationRequestContext): RequestOf<P['operations'][K]> | Promise<RequestOf<P['operations'][K]>>;
  /**
   * Records the answer in the step's own tables (e.g. the payment `voided`), in the transaction that marks the
   * compensation's claim `sent` (optional). Absolute writes: must tolerate a second run.
   */
  record?(ctx: RecordContext<RequestOf<P['operations'][K]>, ResponseOf<P['operations'][K]>>): Promise<void>;
}

/** Either kind of compensation (`any`: the variance escape hatch, as for {@link StepDefinition}). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Compensation = DatabaseCompensation | ProviderCompensation<any, any>;

/** A step that writes only to the database, in one transaction. */
export interface DatabaseStepDefinition<R = unknown> extends StepCommon, DatabaseStepEntry {
  /**
   * `recorded` (the default protocol): the kit stores the step's result in `order_step_results` in the same
   * transaction and a re-run returns it without running the transaction again: the step acts exactly once.
   * `{ byNature }`: the step's own writes make a re-run harmless (deterministic ids, natural keys, absolute
   * values); say why.
   */
  idempotency: 'recorded' | { byNature: string };
  /**
   * The step's work, inside the transaction the kit opened after locking the order row (the order is open: not
   * final, not halted) and writing its status. Throwing rolls everything back.
   * @returns a JSON-serialisable result (the activity's result).
   */
  run(ctx: TransactionContext): Promise<R>;
  compensation?: DatabaseCompensation;
}

/** A step whose effect happens at a provider, over HTTP. */
export interface ProviderStepDefinition<
  P extends ProviderDefinition = ProviderDefinition,
  K extends keyof P['operations'] & string = keyof P['operations'] & string,
>
  extends StepCommon, ProviderStepEntry<P> {
  /** The provider operation the step calls (a key of the provider's `operations`). */
  operation: K;
  /**
   * Builds the request: a mapping of the order the kit read for this attempt (`ctx.order`) and of earlier steps'
   * answers (`ctx.answers`), stored data only, so every attempt sends the identical body for the key.
   * @throws ApplicationFailure `RecordNotFoundError` (via `notFound`) when something it needs is missing,
   *   `OrderHaltedError` (via `halted`) when what it would send was undone (e.g. a void invoice).
   */
  request(ctx: RequestContext): RequestOf<P['operations'][K]> | Promise<RequestOf<P['operations'][K]>>;
  /**
   * Records the answer in the step's own tables, in the transaction that also marks the claim `sent` and writes
   * the status (optional: the claim already keeps the provider's id). Must tolerate a second run (the claim
   * completes once, but write with ON CONFLICT anyway).
   */
  record?(ctx: RecordContext<RequestOf<P['operations'][K]>, ResponseOf<P['operations'][K]>>): Promise<void>;
  /**
   * A definite refusal of the provider that is the customer's business, not a fault (e.g. a card declined): the order
   * ends `failed` with the public failure {@link BusinessRefusal.failure} and the reason the provider gave (safe for
   * the customer), instead of `provider_failed`. Compensated like any failure before the pivot.
   */
  refused?: BusinessRefusal;
  /**
   * What must still hold for the step to act, checked before every call that no earlier call under the key may have
   * made (e.g. shipOrder: the card's authorization still held long enough to capture). When it does not hold, nothing
   * is called: the step fails with `RefusedError` and the order with the public failure `failure`, compensated like
   * any failure before the pivot.
   */
  precondition?: StepPrecondition;
  compensation?: Compensation;
}

/** A provider step's {@link ProviderStepDefinition.precondition}: its entry, and the check. */
export interface StepPrecondition extends PreconditionEntry {
  /**
   * Reads what the step needs (read-only, outside any transaction).
   * @returns null when the step may act; else why not, a code safe for the customer (`[a-z0-9_]{1,64}`, e.g.
   *   `authorization_expiring`).
   */
  check(ctx: RequestContext): Promise<string | null>;
}

/** A provider step's business refusal ({@link ProviderStepDefinition.refused}): its entry, and its record. */
export interface BusinessRefusal extends RefusalEntry {
  /**
   * Records the refusal in the step's own tables (e.g. the payment `declined` with its code), in a transaction of its
   * own under the order-row lock, before the step fails. Absolute writes: harmless when run twice.
   */
  record?(ctx: TransactionContext & { reason: string | null }): Promise<void>;
}

/** An outside event as it reached the order (the workflow's report Update), e.g. the warehouse's `packed`. */
export interface EventReport {
  /** The report's id: the Update id (from the reporter's `Idempotency-Key`). */
  id: string;
  /** When the order received it (ISO 8601, the workflow's clock). */
  receivedAt: string;
  /** Who reported it (the API client). */
  by: string;
  /** What the reporter sent (e.g. `{ parcels, note }`). */
  report: Record<string, unknown>;
}

/** What an event step's `record` gets: the transaction and the report. */
export interface EventRecordContext extends TransactionContext {
  event: EventReport;
}

/**
 * A step that waits for an outside event (a warehouse reporting an order packed, a person approving): no work of its
 * own but recording the event. The workflow waits for it without polling, with a bound (`event.timeoutMs`, from
 * configuration when the plan is built; or earlier: the `deadline` hook minus `event.marginMs`); the bound passed puts
 * the order in `attention_required` with the reason, and an operator's retry waits again. On arrival the step's local
 * activity records the event (the `order_events` row and the status) under the order-row lock and the halt fence,
 * like a database step. Never the pivot.
 */
export interface EventStepDefinition extends StepCommon, EventStepEntry {
  /**
   * A deadline the wait must not pass (ISO 8601), read by a kit activity before each wait, e.g. the capture deadline
   * of the payment authorization; null: none. The bound becomes min(timeout, deadline − margin).
   */
  deadline?(ctx: StepContext): Promise<string | null>;
  /** Records the event in the step's own tables too (optional), in the kit's transaction. */
  record?(ctx: EventRecordContext): Promise<void>;
  /** None: an event step only records (the step that asked for the event undoes the request). */
  compensation?: undefined;
}

/** Any step (`any`: the variance escape hatch, as for providers' AnyOperation). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type StepDefinition = DatabaseStepDefinition | ProviderStepDefinition<any, any> | EventStepDefinition;

/** Declares a database step (an identity function that keeps the types; the registry validates the rest). */
export function defineDatabaseStep<R>(step: Omit<DatabaseStepDefinition<R>, 'kind'>): DatabaseStepDefinition<R> {
  return { kind: 'database', ...step };
}

/** Declares a provider step (an identity function that keeps the request and answer types of the operation). */
export function defineProviderStep<P extends ProviderDefinition, K extends keyof P['operations'] & string>(
  step: Omit<ProviderStepDefinition<P, K>, 'kind'>,
): ProviderStepDefinition<P, K> {
  return { kind: 'provider', ...step };
}

/** Declares an event step (an identity function that keeps the types; the registry validates the rest). */
export function defineEventStep(step: Omit<EventStepDefinition, 'kind'>): EventStepDefinition {
  return { kind: 'event', ...step };
}

/** Declares a provider compensation (an identity function that keeps the request type of the operation). */
export function defineProviderCompensation<P extends ProviderDefinition, K extends keyof P['operations'] & string>(
  compensation: Omit<ProviderCompensation<P, K>, 'kind'>,
): ProviderCompensation<P, K> {
  return { kind: 'provider', ...compensation };
}

/**
 * Checks a registry of step definitions: the catalogue's rules (activities/catalogue/define.ts `catalogueProblems`:
 * unique activity names and statuses, exactly one pivot, phases in order, compensations, events, `when`, refusals),
 * and a provider step's operation is one its provider has.
 * @returns the steps, unchanged.
 * @throws Error naming every problem, one per line.
 */
export function validateSteps<const S extends readonly StepDefinition[]>(steps: S): S {
  const problems = catalogueProblems(steps, (step) =>
    step.kind === 'provider' && step.provider.operations[step.operation] === undefined
      ? [`step ${step.name}: provider ${step.provider.name} has no operation ${step.operation}`]
      : [],
  );
  if (problems.length > 0) throw new Error(`Invalid step registry:\n  ${problems.join('\n  ')}`);
  return steps;
}
