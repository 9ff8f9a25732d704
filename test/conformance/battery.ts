/**
 * The at-least-once battery: the scenarios every step of a registry must pass, generated from the step's definition
 * (its kind, its position around the pivot, its compensation) and run against a lane (./harness.ts: a real database,
 * the real simulator server over HTTP, real provider clients, the real activities under MockActivityEnvironment).
 *
 * Each scenario places a fresh order, brings it to the state just before the step under test by running every
 * earlier step of its plan, then provokes one at-least-once situation and checks what the kit guarantees. Checks
 * are `node:assert` assertions: a scenario throws an AssertionError (or any error) when the step breaks a property,
 * so {@link runBattery} can report failures as values (the self-check spec relies on that).
 *
 * Scenarios per step (in this order; later ones compare with the footprints of earlier ones):
 * - every step: `once`, `twice`, `concurrent`, `answer-lost`, `closed`, `killed`;
 * - provider steps only: `unavailable` (a definite 503), `rejected` (a permanent 4xx) and `never-answers` (a
 *   provider that never answers in time: each attempt an unknown outcome, at most one effect, and the figure of how
 *   long the step's retry profile takes to reach `attention_required`, with a warning above
 *   {@link ATTENTION_BOUND_MS}). A database step has no
 *   provider answer to fail: its transaction commits or rolls back as a whole, which `killed` and `answer-lost`
 *   cover; generating them for database steps would only produce skipped checks;
 * - steps up to and including the pivot: `halted` (the workflow can halt the order only before the pivot passed;
 *   after it, `closed` checks the refusal the kit guarantees there, and that haltOrder reports the pivot passed);
 * - steps with a compensation: `compensation-once`, `compensation-twice`, `compensation-concurrent`,
 *   `compensation-never-ran` (and the fence's rank covers the step once it acted, and only then, so the workflow
 *   compensates a step whose completion its history lost).
 */
import assert from 'node:assert/strict';
import { msOptionalToNumber } from '@temporalio/common/lib/time.js';
import type { RetryPolicy } from '@temporalio/common';
import type { ProviderStepDefinition, StepDefinition } from '../../activities/kit/define.js';
import type { CompensationResult, StepResult } from '../../workflows/order-activities.contract.js';
import { ErrorType } from '../../workflows/errors.js';
import { OrderStatus } from '../../workflows/order-fulfilment.contract.js';
import { RETRY_PROFILES } from '../../workflows/activity-options.js';
import { FINAL_FAILURE_RANK, StepPhase } from '../../workflows/order-plan.js';
import { footprintDelta, type Footprint } from './footprint.js';
import {
  activityInfoOf,
  advanceTo,
  armTripwire,
  claimOf,
  failureOf,
  footprint,
  haltOrder,
  killChild,
  naturalActivityId,
  orderState,
  placeOrder,
  PROVIDER_TIMEOUT_MS,
  quiesce,
  retryPolicyOf,
  runActivity,
  runCompensation,
  runStep,
  settle,
  startChild,
  stepInput,
  totalCalls,
  untilChild,
  type Execution,
  type Lane,
  type PlacedOrder,
} from './harness.js';

/** A retry profile of workflows/activity-options.ts. */
type RetryProfileName = keyof typeof RETRY_PROFILES;

/** The scenarios of the battery (see the module). */
export type ScenarioId =
  | 'once'
  | 'twice'
  | 'concurrent'
  | 'answer-lost'
  | 'unavailable'
  | 'rejected'
  | 'never-answers'
  | 'halted'
  | 'closed'
  | 'killed'
  | 'compensation-once'
  | 'compensation-twice'
  | 'compensation-concurrent'
  | 'compensation-never-ran';

/** Footprints the later scenarios of a step compare with (deltas, see ./footprint.ts). */
interface References {
  /** What one successful run of the step changes. */
  once?: Footprint;
  /** What one attempt that the provider definitely refused (503) changes. */
  definiteRefusal?: Footprint;
  /** What one run of the compensation changes after the step acted. */
  compensation?: Footprint;
}

/** What a scenario runs with: the lane, the step under test and its position, the shared references. */
interface ScenarioContext {
  lane: Lane;
  step: StepDefinition;
  /** The step's position in the registry (and so in every plan of the lane). */
  index: number;
  /** The pivot's position. */
  pivot: number;
  refs: References;
  /** What the scenario tells the author (printed with its test), and whether it is a warning. */
  note?: { text: string; warning: boolean };
}

/** One generated scenario. */
export interface Scenario {
  id: ScenarioId;
  /** What the scenario checks, one line (the test's name). */
  title: string;
  run(ctx: ScenarioContext): Promise<void>;
}

/** The outcome of one scenario: `error` is undefined when it passed. */
export interface ScenarioOutcome {
  step: string;
  scenario: ScenarioId;
  title: string;
  error?: unknown;
  /** Wall-clock time of the scenario, ms. */
  ms: number;
  /** What the scenario tells the author (e.g. the `never-answers` figure), and whether it is a warning. */
  note?: { text: string; warning: boolean };
}

/** Wait of the `slow` fault that widens the window of two concurrent calls, ms. */
const CONCURRENT_SLOW_MS = 1_000;
/** Wait of the `slow` fault that keeps a killed worker's call in flight, ms. */
const KILL_SLOW_MS = 2_500;
/**
 * The bound on how long an order whose provider never answers in time may wait before a person hears of it (its step's
 * retry profile exhausted: `attention_required`): 15 minutes (docs/extending.md). Above it, `never-answers` warns.
 */
export const ATTENTION_BOUND_MS = 15 * 60_000;
/** The client timeout of the `never-answers` attempts, ms (short, so the scenario takes seconds, not minutes). */
const IMPATIENT_TIMEOUT_MS = 250;
/** How long the provider of `never-answers` holds its first request before it acts, ms (beyond every attempt). */
const NEVER_ANSWERS_SLOW_MS = 4_000;
/** Attempts of `never-answers` while the provider holds the request. */
const NEVER_ANSWERS_ATTEMPTS = 3;
/** Activity ids beyond any plan's: an operator's retry (a new activity of the same workflow run). */
const OPERATOR_RETRY_ID_BASE = 100;
/** Activity ids of compensations (two different ones for the concurrent pair). */
const COMPENSATION_ID_BASE = 200;
const SECOND_COMPENSATION_ID_BASE = 300;

function operatorRetryId(index: number): string {
  return String(OPERATOR_RETRY_ID_BASE + index);
}

/** The step as a provider step, or undefined. */
function providerStep(step: StepDefinition): ProviderStepDefinition | undefined {
  return step.kind === 'provider' ? step : undefined;
}

/** A fresh order in the state just before the step under test. */
async function prepared(ctx: ScenarioContext): Promise<PlacedOrder> {
  const order = await placeOrder(ctx.lane);
  await advanceTo(ctx.lane, order, ctx.index);
  return order;
}

/** The lane's footprint change since `before`. */
async function since(ctx: ScenarioContext, before: Footprint): Promise<Footprint> {
  return footprintDelta(before, await footprint(ctx.lane));
}

function assertFootprint(actual: Footprint, expected: Footprint | undefined, what: string, reference: string): void {
  if (expected === undefined) {
    throw new assert.AssertionError({ message: `${what}: no reference footprint (the ${reference} scenario failed)` });
  }
  assert.deepEqual(actual, expected, `${what}: the footprint differs from ${reference}'s`);
}

/** The order carries the step's planned status and rank. */
async function assertPlannedStatus(ctx: ScenarioContext, order: PlacedOrder, what: string): Promise<void> {
  const planned = order.plan.steps[ctx.index]!;
  const state = await orderState(ctx.lane, order.orderId);
  assert.deepEqual(
    { status: state.status, rank: state.rank },
    { status: planned.status, rank: planned.rank },
    `${what}: the order's status is not the step's planned one`,
  );
}

/**
 * A result with what only reports on the run itself removed: boolean leaves of a database step's data say whether
 * this run wrote (e.g. "created", "applied"), which a re-run legitimately reports differently.
 */
function withoutRunFlags(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutRunFlags);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value)
        .filter(([, v]) => typeof v !== 'boolean')
        .map(([k, v]) => [k, withoutRunFlags(v)]),
    );
  }
  return value;
}

/**
 * Two runs of the step returned the same result: provider steps the same provider id and key; database steps with
 * a recorded result the identical data; database steps idempotent by nature the same data but for run flags
 * ({@link withoutRunFlags}).
 */
function assertSameResult(step: StepDefinition, first: StepResult, again: StepResult, what: string): void {
  assert.equal(again.step, first.step, `${what}: another step answered`);
  if (step.kind === 'provider') {
    assert.deepEqual(
      { providerId: again.providerId, key: again.key },
      { providerId: first.providerId, key: first.key },
      `${what}: a re-run returned another provider id`,
    );
  } else if (step.kind === 'event' || step.idempotency === 'recorded') {
    assert.deepEqual(again.data, first.data, `${what}: a re-run returned other data than the recorded result`);
  } else {
    assert.deepEqual(withoutRunFlags(again.data), withoutRunFlags(first.data), `${what}: a re-run returned other data`);
  }
}

/** The provider id the simulator recorded for its (only) effect under `key`, read with the operation's definition. */
function ledgerProviderId(ctx: ScenarioContext, step: ProviderStepDefinition, key: string): string | undefined {
  const effect = ctx.lane.sims.provider(step.provider.name).ledger.effects(key)[0];
  if (!effect) return undefined;
  const operation = step.provider.operations[step.operation]!;
  return operation.providerId(operation.response.parse(effect.response.body));
}

/**
 * The step's effect happened exactly once: one ledger effect under `key(orderId)` at its provider, the claim `sent`
 * with the provider's id of that effect, which the run returned.
 */
async function assertOneEffect(
  ctx: ScenarioContext,
  order: PlacedOrder,
  result: StepResult,
  what: string,
): Promise<void> {
  const step = providerStep(ctx.step);
  if (!step) return;
  const key = step.key(order.orderId);
  const sim = ctx.lane.sims.provider(step.provider.name);
  assert.equal(sim.ledger.count(key), 1, `${what}: effects at the provider under the step's key ${key}`);
  assert.equal(result.key, key, `${what}: the run reports another key`);
  const claim = await claimOf(ctx.lane, key);
  assert.deepEqual(
    { status: claim?.status, providerId: claim?.provider_id },
    { status: 'sent', providerId: ledgerProviderId(ctx, step, key) },
    `${what}: the claim does not record the provider's effect`,
  );
  assert.equal(result.providerId, claim?.provider_id, `${what}: the run returned another provider id`);
}

/** Expects a failure of the given type and retryability. */
async function expectFailure(
  run: Promise<unknown>,
  expected: { type: string; retryable: boolean; mayHaveActed?: boolean },
  what: string,
) {
  const failure = await failureOf(run, what);
  assert.equal(failure.type, expected.type, `${what}: failure type (${failure.message})`);
  assert.equal(!failure.nonRetryable, expected.retryable, `${what}: retryable`);
  if (expected.mayHaveActed !== undefined) {
    const details = failure.details?.[0] as { mayHaveActed?: unknown } | undefined;
    assert.equal(details?.mayHaveActed, expected.mayHaveActed, `${what}: details.mayHaveActed`);
  }
  return failure;
}

/** The claim of the step's key (provider steps). */
async function claimStatus(ctx: ScenarioContext, order: PlacedOrder): Promise<string | undefined> {
  const step = providerStep(ctx.step)!;
  return (await claimOf(ctx.lane, step.key(order.orderId)))?.status;
}

/** The delay of the profile's backoff before attempt `attempt + 1`, ms (no jitter: the upper bound). */
function backoffMs(policy: RetryPolicy, attempt: number): number {
  const initial = msOptionalToNumber(policy.initialInterval) ?? 1000;
  const coefficient = policy.backoffCoefficient ?? 2;
  const maximum = msOptionalToNumber(policy.maximumInterval) ?? initial * 100;
  return Math.min(maximum, initial * coefficient ** (attempt - 1));
}

/** How long a retry profile takes to give up on a provider that never answers in time (see {@link attentionEstimate}). */
export interface AttentionEstimate {
  /** Attempts of the profile. */
  attempts: number;
  /** One attempt, ms: the client's timeout, within the profile's start-to-close. */
  attemptMs: number;
  /** The backoffs between the attempts, ms: the least (half of each, the kit's jitter) and the most. */
  backoffMs: { min: number; max: number };
  /** The whole wait until the last attempt fails (capped by the schedule-to-close timeout), ms. */
  totalMs: { min: number; max: number };
}

/**
 * How long `profile` keeps retrying a provider call that never answers within `providerTimeoutMs`, until the order
 * reaches `attention_required` (the activity fails for good: after the pivot it waits for an operator; before it,
 * the halt finds the outcome unknown): every attempt waits the client's timeout (or the start-to-close, if shorter),
 * and between attempts the kit's jittered backoff (half the profile's interval, up to all of it).
 */
export function attentionEstimate(profile: RetryProfileName, providerTimeoutMs: number): AttentionEstimate {
  const options = RETRY_PROFILES[profile];
  const policy = retryPolicyOf(profile);
  const attempts = policy.maximumAttempts ?? 1;
  const startToClose = msOptionalToNumber(options.startToCloseTimeout) ?? Number.POSITIVE_INFINITY;
  const attemptMs = Math.min(providerTimeoutMs, startToClose);
  let max = 0;
  for (let attempt = 1; attempt < attempts; attempt++) max += backoffMs(policy, attempt);
  const min = max / 2;
  const cap = msOptionalToNumber(options.scheduleToCloseTimeout) ?? Number.POSITIVE_INFINITY;
  const total = (backoff: number) => Math.min(cap, attempts * attemptMs + backoff);
  return { attempts, attemptMs, backoffMs: { min, max }, totalMs: { min: total(min), max: total(max) } };
}

/**
 * What the `never-answers` scenario tells the author of `step`: how long its retry profile takes to bring an order
 * whose provider never answers within `providerTimeoutMs` to `attention_required`, as a warning when it can take
 * longer than {@link ATTENTION_BOUND_MS}.
 */
export function attentionNote(
  step: string,
  profile: RetryProfileName,
  providerTimeoutMs: number,
): { text: string; warning: boolean } {
  const estimate = attentionEstimate(profile, providerTimeoutMs);
  const figure =
    `${step}: a provider that never answers in time puts the order in attention_required after ` +
    `${minutes(estimate.totalMs.min)} to ${minutes(estimate.totalMs.max)} (retry profile ${profile}: ` +
    `${estimate.attempts} attempts of ${estimate.attemptMs / 1000} s, PROVIDER_TIMEOUT_MS, and ` +
    `${minutes(estimate.backoffMs.min)} to ${minutes(estimate.backoffMs.max)} of backoff)`;
  const warning = estimate.totalMs.max > ATTENTION_BOUND_MS;
  return {
    text: warning
      ? `WARNING ${figure}: above the ${minutes(ATTENTION_BOUND_MS)} bound of docs/extending.md; give the step a shorter retry profile`
      : figure,
    warning,
  };
}

/** `ms` as minutes with one decimal, e.g. `9.5 min`. */
function minutes(ms: number): string {
  return `${(ms / 60_000).toFixed(1)} min`;
}

/**
 * A refused run changed nothing: the failure has the expected type and is not retryable, the footprint is zero,
 * no provider client was called and no request reached the simulator under the step's key.
 */
async function assertRefusedUntouched(
  ctx: ScenarioContext,
  order: PlacedOrder,
  type: string,
  what: string,
  execution: Execution = { activityId: naturalActivityId(ctx.index), attempt: 1 },
): Promise<void> {
  const step = providerStep(ctx.step);
  const tripwire = step
    ? await armTripwire(ctx.lane.sims, step.provider.name, step.key(order.orderId))
    : { reached: async () => false };
  const calls = totalCalls(ctx.lane);
  const before = await footprint(ctx.lane);
  await expectFailure(runStep(ctx.lane, order, ctx.index, execution), { type, retryable: false }, what);
  assert.deepEqual(await since(ctx, before), {}, `${what}: a refused run changed the database or a provider`);
  assert.equal(totalCalls(ctx.lane), calls, `${what}: a provider was called`);
  assert.equal(await tripwire.reached(), false, `${what}: a request reached the provider`);
}

const once: Scenario = {
  id: 'once',
  title: 'once: succeeds, writes its planned status, one effect, claim sent with the provider id',
  async run(ctx) {
    const order = await prepared(ctx);
    const before = await footprint(ctx.lane);
    const result = await runStep(ctx.lane, order, ctx.index);
    ctx.refs.once = await since(ctx, before);
    assert.equal(result.step, ctx.step.name, 'once: another step answered');
    assert.equal(result.performed, true, 'once: the first run reports it did not act');
    await assertPlannedStatus(ctx, order, 'once');
    await assertOneEffect(ctx, order, result, 'once');
  },
};

const twice: Scenario = {
  id: 'twice',
  title: 'twice: a retry (attempt 2) and an operator retry (new activity) return the same, no second effect',
  async run(ctx) {
    const order = await prepared(ctx);
    const natural = naturalActivityId(ctx.index);
    const before = await footprint(ctx.lane);
    const first = await runStep(ctx.lane, order, ctx.index, { activityId: natural, attempt: 1 });
    const retry = await runStep(ctx.lane, order, ctx.index, { activityId: natural, attempt: 2 });
    const operator = await runStep(ctx.lane, order, ctx.index, {
      activityId: operatorRetryId(ctx.index),
      attempt: 1,
    });
    assertSameResult(ctx.step, first, retry, 'twice (attempt 2)');
    assertSameResult(ctx.step, first, operator, 'twice (new activity)');
    if (ctx.step.kind === 'provider') {
      assert.equal(retry.performed, false, 'twice (attempt 2): reports it acted again');
      assert.equal(operator.performed, false, 'twice (new activity): reports it acted again');
    }
    assertFootprint(await since(ctx, before), ctx.refs.once, 'twice', 'once');
    await assertPlannedStatus(ctx, order, 'twice');
    await assertOneEffect(ctx, order, first, 'twice');
  },
};

const concurrent: Scenario = {
  id: 'concurrent',
  title: 'two at once: two executions from the same state (losers retried) end with one effect',
  async run(ctx) {
    const order = await prepared(ctx);
    const step = providerStep(ctx.step);
    // Widen the window: the first call stays in flight while the second one claims.
    if (step) {
      ctx.lane.sims
        .provider(step.provider.name)
        .injectFault({ mode: 'slow', delayMs: CONCURRENT_SLOW_MS, keyPrefix: step.key(order.orderId), times: 1 });
    }
    const before = await footprint(ctx.lane);
    const [a, b] = await Promise.all(
      [naturalActivityId(ctx.index), operatorRetryId(ctx.index)].map((activityId) =>
        settle((attempt) => runStep(ctx.lane, order, ctx.index, { activityId, attempt })),
      ),
    );
    assertSameResult(ctx.step, a!.result, b!.result, 'two at once');
    assertFootprint(await since(ctx, before), ctx.refs.once, 'two at once', 'once');
    await assertPlannedStatus(ctx, order, 'two at once');
    await assertOneEffect(ctx, order, a!.result, 'two at once');
  },
};

const answerLost: Scenario = {
  id: 'answer-lost',
  title: 'answer lost: the step acted but its caller never heard; the retry returns the same, one effect',
  async run(ctx) {
    const order = await prepared(ctx);
    const natural = naturalActivityId(ctx.index);
    const step = providerStep(ctx.step);
    const before = await footprint(ctx.lane);
    if (!step) {
      // A database step's answer is lost when its transaction commits but the worker never reports the result
      // (it dies, or the completion is lost): Temporal runs it again. That is attempt 1 acting and attempt 2
      // running on the committed state: the same as `twice`, with the first result never seen by anyone.
      const first = await runStep(ctx.lane, order, ctx.index, { activityId: natural, attempt: 1 });
      const retry = await runStep(ctx.lane, order, ctx.index, { activityId: natural, attempt: 2 });
      assertSameResult(ctx.step, first, retry, 'answer lost');
    } else {
      const key = step.key(order.orderId);
      const sim = ctx.lane.sims.provider(step.provider.name);
      sim.injectFault({ mode: 'drop-response', keyPrefix: key, times: 1 });
      await expectFailure(
        runStep(ctx.lane, order, ctx.index, { activityId: natural, attempt: 1 }),
        { type: ErrorType.ProviderUnavailable, retryable: true, mayHaveActed: true },
        'answer lost (attempt 1)',
      );
      assert.equal(await claimStatus(ctx, order), 'sending', 'answer lost: the claim after attempt 1');
      assert.equal(sim.ledger.count(key), 1, 'answer lost: the provider acted on attempt 1');
      const retry = await runStep(ctx.lane, order, ctx.index, { activityId: natural, attempt: 2 });
      assert.equal(retry.providerId, ledgerProviderId(ctx, step, key), 'answer lost: attempt 2 returned another id');
      await assertOneEffect(ctx, order, retry, 'answer lost');
    }
    assertFootprint(await since(ctx, before), ctx.refs.once, 'answer lost', 'once');
    await assertPlannedStatus(ctx, order, 'answer lost');
  },
};

const unavailable: Scenario = {
  id: 'unavailable',
  title: 'a definite 503: retryable, nothing performed, claim failed; the next attempt acts once',
  async run(ctx) {
    const step = providerStep(ctx.step)!;
    const order = await prepared(ctx);
    const key = step.key(order.orderId);
    const natural = naturalActivityId(ctx.index);
    const sim = ctx.lane.sims.provider(step.provider.name);
    const stateBefore = await orderState(ctx.lane, order.orderId);
    sim.injectFault({ mode: 'unavailable', keyPrefix: key, times: 1 });
    const before = await footprint(ctx.lane);
    const failure = await expectFailure(
      runStep(ctx.lane, order, ctx.index, { activityId: natural, attempt: 1 }),
      { type: ErrorType.ProviderUnavailable, retryable: true, mayHaveActed: false },
      '503 (attempt 1)',
    );
    const delay = msOptionalToNumber(failure.nextRetryDelay ?? undefined);
    const backoff = backoffMs(retryPolicyOf(order.plan.steps[ctx.index]!.retry), 1);
    assert.ok(
      delay !== undefined && delay > 0 && delay <= backoff,
      `503: nextRetryDelay ${delay} ms is not within the profile's backoff (0, ${backoff}] ms`,
    );
    ctx.refs.definiteRefusal = await since(ctx, before);
    assert.equal(await claimStatus(ctx, order), 'failed', '503: the claim after a definite refusal');
    assert.equal(sim.ledger.count(key), 0, '503: the provider acted');
    assert.deepEqual(await orderState(ctx.lane, order.orderId), stateBefore, '503: the order changed');
    const retry = await runStep(ctx.lane, order, ctx.index, { activityId: natural, attempt: 2 });
    await assertOneEffect(ctx, order, retry, '503 then attempt 2');
    assertFootprint(await since(ctx, before), ctx.refs.once, '503 then attempt 2', 'once');
    await assertPlannedStatus(ctx, order, '503 then attempt 2');
  },
};

const rejected: Scenario = {
  id: 'rejected',
  title: 'a permanent 4xx: non-retryable, nothing performed; halted before the pivot, retried by an operator after',
  async run(ctx) {
    const step = providerStep(ctx.step)!;
    const order = await prepared(ctx);
    const key = step.key(order.orderId);
    const sim = ctx.lane.sims.provider(step.provider.name);
    const stateBefore = await orderState(ctx.lane, order.orderId);
    sim.injectFault({ mode: 'reject', keyPrefix: key, times: 1 });
    const before = await footprint(ctx.lane);
    await expectFailure(
      runStep(ctx.lane, order, ctx.index),
      { type: ErrorType.ProviderRejected, retryable: false, mayHaveActed: false },
      '4xx',
    );
    assertFootprint(await since(ctx, before), ctx.refs.definiteRefusal, '4xx', 'a definite 503');
    assert.equal(await claimStatus(ctx, order), 'failed', '4xx: the claim after a definite refusal');
    assert.equal(sim.ledger.count(key), 0, '4xx: the provider acted');
    assert.deepEqual(await orderState(ctx.lane, order.orderId), stateBefore, '4xx: the order changed');
    if (ctx.index <= ctx.pivot) {
      // The workflow halts the order: the fence tombstones the refused claim, and no later attempt ever acts.
      const halt = await haltOrder(ctx.lane, order, 'conformance: the provider refused');
      assert.equal(halt.outcome, 'halted', '4xx then halt: haltOrder');
      assert.equal(await claimStatus(ctx, order), 'cancelled', '4xx then halt: the claim is not tombstoned');
      await assertRefusedUntouched(ctx, order, ErrorType.OrderHalted, '4xx then halt, then a late attempt', {
        activityId: naturalActivityId(ctx.index),
        attempt: 2,
      });
      const operator = runStep(ctx.lane, order, ctx.index, { activityId: operatorRetryId(ctx.index), attempt: 1 });
      await expectFailure(operator, { type: ErrorType.OrderHalted, retryable: false }, '4xx then halt, then a retry');
      assert.equal(sim.ledger.count(key), 0, '4xx then halt: the provider acted');
    } else {
      // After the pivot nothing compensates: the workflow waits for an operator, whose retry is a new activity.
      const retry = await runStep(ctx.lane, order, ctx.index, { activityId: operatorRetryId(ctx.index), attempt: 1 });
      await assertOneEffect(ctx, order, retry, "4xx then the operator's retry");
      assertFootprint(await since(ctx, before), ctx.refs.once, "4xx then the operator's retry", 'once');
      await assertPlannedStatus(ctx, order, "4xx then the operator's retry");
    }
  },
};

const neverAnswers: Scenario = {
  id: 'never-answers',
  title:
    'a provider that never answers in time: every attempt an unknown outcome, at most one effect, the claim kept; ' +
    'the same key settles it; prints how long the retry profile takes to reach attention_required',
  async run(ctx) {
    const step = providerStep(ctx.step)!;
    const order = await prepared(ctx);
    const key = step.key(order.orderId);
    const natural = naturalActivityId(ctx.index);
    const sim = ctx.lane.sims.provider(step.provider.name);
    const stateBefore = await orderState(ctx.lane, order.orderId);
    const before = await footprint(ctx.lane);
    // The provider holds the first request past every attempt's timeout (then acts: the effect the client never
    // heard of); the later attempts meet it in flight (409) or time out too. Either way: an unknown outcome.
    sim.injectFault({ mode: 'slow', delayMs: NEVER_ANSWERS_SLOW_MS, keyPrefix: key, times: 1 });
    const impatient = ctx.lane.impatient(IMPATIENT_TIMEOUT_MS);
    for (let attempt = 1; attempt <= NEVER_ANSWERS_ATTEMPTS; attempt++) {
      await expectFailure(
        runStep(ctx.lane, order, ctx.index, { activityId: natural, attempt }, impatient),
        { type: ErrorType.ProviderUnavailable, retryable: true, mayHaveActed: true },
        `never answers (attempt ${attempt})`,
      );
      assert.equal(await claimStatus(ctx, order), 'sending', `never answers: the claim after attempt ${attempt}`);
      assert.ok(sim.ledger.count(key) <= 1, `never answers: ${sim.ledger.count(key)} effects after attempt ${attempt}`);
    }
    assert.deepEqual(await orderState(ctx.lane, order.orderId), stateBefore, 'never answers: the order changed');
    await quiesce(ctx.lane, NEVER_ANSWERS_SLOW_MS * 3);
    assert.ok(sim.ledger.count(key) <= 1, `never answers: ${sim.ledger.count(key)} effects once the provider acted`);
    // A later attempt under the same key gets the provider's answer: one effect, the status written.
    const settled = await runStep(ctx.lane, order, ctx.index, {
      activityId: natural,
      attempt: NEVER_ANSWERS_ATTEMPTS + 1,
    });
    await assertOneEffect(ctx, order, settled, 'never answers, then answered');
    assertFootprint(await since(ctx, before), ctx.refs.once, 'never answers, then answered', 'once');
    await assertPlannedStatus(ctx, order, 'never answers, then answered');

    ctx.note = attentionNote(ctx.step.name, order.plan.steps[ctx.index]!.retry, PROVIDER_TIMEOUT_MS);
  },
};

const halted: Scenario = {
  id: 'halted',
  title: 'halted before the call: refused (OrderHaltedError), nothing reaches the provider, footprint zero',
  async run(ctx) {
    const order = await prepared(ctx);
    const halt = await haltOrder(ctx.lane, order, 'conformance: halted before the call');
    assert.equal(halt.outcome, 'halted', 'halted: haltOrder');
    await assertRefusedUntouched(ctx, order, ErrorType.OrderHalted, 'halted');
    const step = providerStep(ctx.step);
    if (step) {
      const key = step.key(order.orderId);
      assert.equal(ctx.lane.sims.provider(step.provider.name).ledger.count(key), 0, 'halted: the provider acted');
      assert.equal(await claimStatus(ctx, order), 'cancelled', 'halted: the claim is not tombstoned');
    }
  },
};

const closed: Scenario = {
  id: 'closed',
  title: 'closed before the call: a final order is refused (OrderClosedError), nothing reaches the provider',
  async run(ctx) {
    const order = await prepared(ctx);
    if (ctx.index > ctx.pivot) {
      // Past the pivot the workflow cannot halt the order: the fence reports the pivot passed and changes nothing.
      const before = await footprint(ctx.lane);
      const halt = await haltOrder(ctx.lane, order, 'conformance: too late to halt');
      assert.equal(halt.outcome, 'sent', 'closed: haltOrder after the pivot');
      assert.deepEqual(await since(ctx, before), {}, 'closed: haltOrder after the pivot changed something');
    }
    const written = await runActivity(
      ctx.lane.activities.setOrderStatus,
      {
        orderId: order.orderId,
        status: OrderStatus.Failed,
        rank: FINAL_FAILURE_RANK,
        failureReason: 'conformance: closed before the call',
      },
      activityInfoOf(order, 'setOrderStatus', { activityId: '901', attempt: 1 }, 'compensation'),
    );
    assert.equal(written.applied, true, 'closed: the final status was not written');
    await assertRefusedUntouched(ctx, order, ErrorType.OrderClosed, 'closed');
  },
};

const killed: Scenario = {
  id: 'killed',
  title: 'worker killed mid-call (SIGKILL): the next attempt takes over and ends with one effect',
  async run(ctx) {
    const order = await prepared(ctx);
    const planned = order.plan.steps[ctx.index]!;
    const natural = naturalActivityId(ctx.index);
    const step = providerStep(ctx.step);
    const before = await footprint(ctx.lane);
    const job = {
      activity: planned.name,
      input: stepInput(order, ctx.index),
      info: activityInfoOf(
        order,
        planned.name,
        { activityId: natural, attempt: 1 },
        planned.retry,
        planned.kind !== 'provider',
      ),
    };
    if (step) {
      // Attempt 1 in another process, its call held in flight by the provider; killed while the call is pending.
      const key = step.key(order.orderId);
      const sim = ctx.lane.sims.provider(step.provider.name);
      sim.injectFault({ mode: 'slow', delayMs: KILL_SLOW_MS, keyPrefix: key, times: 1 });
      const child = await startChild(ctx.lane, { ...job, hangBeforeCommit: false });
      await untilChild(child, () => sim.inFlightKeys().includes(key), `the call under ${key} to reach the provider`);
      await killChild(child);
      assert.equal(await claimStatus(ctx, order), 'sending', 'killed: the dead attempt’s claim');
    } else {
      // A database step dies inside its transaction: after all its work, before COMMIT. The kill is a rollback.
      const child = await startChild(ctx.lane, { ...job, hangBeforeCommit: true });
      await untilChild(child, () => child.output().includes('before-commit'), 'the step’s transaction to do its work');
      await killChild(child);
      assert.deepEqual(await since(ctx, before), {}, 'killed: a transaction killed before COMMIT left something');
    }
    // Attempt 2 (and more, as Temporal retries: the provider answers 409 while the dead attempt's call is in flight).
    const { result } = await settle(
      (attempt) => runStep(ctx.lane, order, ctx.index, { activityId: natural, attempt }),
      {
        firstAttempt: 2,
      },
    );
    await assertOneEffect(ctx, order, result, 'killed, then retried');
    assertFootprint(await since(ctx, before), ctx.refs.once, 'killed, then retried', 'once');
    await assertPlannedStatus(ctx, order, 'killed, then retried');
  },
};

/** An order whose step under test acted, then halted by the workflow's fence (before its compensations run). */
async function actedThenHalted(ctx: ScenarioContext): Promise<PlacedOrder> {
  const order = await prepared(ctx);
  await runStep(ctx.lane, order, ctx.index);
  const halt = await haltOrder(ctx.lane, order, 'conformance: compensate');
  assert.equal(halt.outcome, 'halted', 'compensation: haltOrder after the step acted');
  // The fence's rank covers the step: the workflow compensates it even when its history lost the step (a worker
  // that died after the step's commit, a cancel that reached the replacement worker first).
  const planned = order.plan.steps[ctx.index]!;
  assert.ok(
    halt.outcome === 'halted' && (halt.rank ?? -1) >= planned.rank,
    `compensation: haltOrder's rank ${halt.outcome === 'halted' ? halt.rank : '-'} after the step acted is below the step's ${planned.rank}`,
  );
  return order;
}

/** A provider compensation's effect happened exactly once under its key. */
function assertCompensationEffects(
  ctx: ScenarioContext,
  order: PlacedOrder,
  results: CompensationResult[],
  expected: number,
  what: string,
): void {
  const compensation = ctx.step.compensation!;
  if (compensation.kind !== 'provider') return;
  const key = compensation.key(order.orderId);
  const count = ctx.lane.sims.provider(compensation.provider.name).ledger.count(key);
  assert.equal(count, expected, `${what}: compensation effects under ${key}`);
  const ids = new Set(results.map((r) => r.providerId));
  assert.equal(ids.size, 1, `${what}: the compensation's runs returned different provider ids`);
}

function compensationExecution(index: number, attempt = 1, base = COMPENSATION_ID_BASE) {
  return { activityId: String(base + index), attempt };
}

const compensationOnce: Scenario = {
  id: 'compensation-once',
  title: 'compensation once: after the step acted and the order was halted, it undoes the effect',
  async run(ctx) {
    const order = await actedThenHalted(ctx);
    const before = await footprint(ctx.lane);
    const result = await runCompensation(ctx.lane, order, ctx.index, compensationExecution(ctx.index));
    const delta = await since(ctx, before);
    ctx.refs.compensation = delta;
    assert.notDeepEqual(delta, {}, 'compensation once: it changed nothing although the step had acted');
    assertCompensationEffects(ctx, order, [result], 1, 'compensation once');
  },
};

const compensationTwice: Scenario = {
  id: 'compensation-twice',
  title: 'compensation twice: a second run changes nothing more',
  async run(ctx) {
    const order = await actedThenHalted(ctx);
    const before = await footprint(ctx.lane);
    const first = await runCompensation(ctx.lane, order, ctx.index, compensationExecution(ctx.index, 1));
    const again = await runCompensation(ctx.lane, order, ctx.index, compensationExecution(ctx.index, 2));
    assertFootprint(await since(ctx, before), ctx.refs.compensation, 'compensation twice', 'compensation once');
    assertCompensationEffects(ctx, order, [first, again], 1, 'compensation twice');
  },
};

const compensationConcurrent: Scenario = {
  id: 'compensation-concurrent',
  title: 'compensation twice at once: the effect is undone exactly once',
  async run(ctx) {
    const order = await actedThenHalted(ctx);
    const before = await footprint(ctx.lane);
    const settled = await Promise.all(
      [COMPENSATION_ID_BASE, SECOND_COMPENSATION_ID_BASE].map((base) =>
        settle((attempt) =>
          runCompensation(ctx.lane, order, ctx.index, compensationExecution(ctx.index, attempt, base)),
        ),
      ),
    );
    assertFootprint(await since(ctx, before), ctx.refs.compensation, 'compensation twice at once', 'compensation once');
    assertCompensationEffects(
      ctx,
      order,
      settled.map((s) => s.result),
      1,
      'compensation twice at once',
    );
  },
};

const compensationNeverRan: Scenario = {
  id: 'compensation-never-ran',
  title: 'compensation of a step that never ran: a no-op (footprint zero, nothing called)',
  async run(ctx) {
    const order = await prepared(ctx);
    const halt = await haltOrder(ctx.lane, order, 'conformance: compensate before the step');
    assert.equal(halt.outcome, 'halted', 'compensation never ran: haltOrder');
    const planned = order.plan.steps[ctx.index]!;
    assert.ok(
      halt.outcome === 'halted' && (halt.rank ?? -1) < planned.rank,
      "compensation never ran: haltOrder's rank says the step acted",
    );
    const calls = totalCalls(ctx.lane);
    const before = await footprint(ctx.lane);
    const result = await runCompensation(ctx.lane, order, ctx.index, compensationExecution(ctx.index));
    assert.deepEqual(await since(ctx, before), {}, 'compensation never ran: it changed something');
    assert.equal(totalCalls(ctx.lane), calls, 'compensation never ran: a provider was called');
    if (ctx.step.compensation!.kind === 'provider') {
      assert.equal(result.performed, false, 'compensation never ran: reports it acted');
    }
  },
};

/**
 * The scenarios of `step` within `registry`, in the order they must run (see the module).
 * @throws Error when the step is not in the registry or the registry has no pivot.
 */
export function scenariosFor(step: StepDefinition, registry: readonly StepDefinition[]): Scenario[] {
  const index = registry.findIndex((s) => s.name === step.name);
  const pivot = registry.findIndex((s) => s.phase === StepPhase.Pivot);
  if (index < 0) throw new Error(`step ${step.name} is not in the registry`);
  if (pivot < 0) throw new Error('the registry has no pivot');
  return [
    once,
    twice,
    concurrent,
    answerLost,
    ...(step.kind === 'provider' ? [unavailable, rejected, neverAnswers] : []),
    ...(index <= pivot ? [halted] : []),
    closed,
    killed,
    ...(step.compensation ? [compensationOnce, compensationTwice, compensationConcurrent, compensationNeverRan] : []),
  ];
}

/**
 * Runs the battery of `step` in `lane`, one scenario at a time, each on its own order; between scenarios the lane's
 * faults are cleared and in-flight calls drained.
 * @param onOutcome called as each scenario ends (so a spec can report them as they come).
 * @returns every scenario's outcome; never throws for a failing scenario.
 */
export async function runBattery(
  lane: Lane,
  step: StepDefinition,
  onOutcome: (outcome: ScenarioOutcome) => void = () => undefined,
): Promise<ScenarioOutcome[]> {
  const ctx: ScenarioContext = {
    lane,
    step,
    index: lane.registry.findIndex((s) => s.name === step.name),
    pivot: lane.registry.findIndex((s) => s.phase === StepPhase.Pivot),
    refs: {},
  };
  const outcomes: ScenarioOutcome[] = [];
  for (const scenario of scenariosFor(step, lane.registry)) {
    const started = Date.now();
    let error: unknown;
    ctx.note = undefined;
    try {
      await scenario.run(ctx);
    } catch (err) {
      error = err;
    }
    await quiesce(lane);
    const outcome: ScenarioOutcome = {
      step: step.name,
      scenario: scenario.id,
      title: scenario.title,
      ...(error === undefined ? {} : { error }),
      ms: Date.now() - started,
      ...(ctx.note ? { note: ctx.note } : {}),
    };
    outcomes.push(outcome);
    onOutcome(outcome);
  }
  return outcomes;
}
