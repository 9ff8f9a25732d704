/**
 * The step kit's runners: the protocols every step runs (see ./define.ts), as code instead of prose.
 *
 * Locks, in the order every runner takes them (so two runners wait for each other instead of deadlocking): the order
 * row first (`FOR UPDATE` by halts and compensations, `FOR NO KEY UPDATE` by the status write of a forward step),
 * then claim rows, then product rows in SKU order.
 */
import { activityInfo } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { Prisma } from '../../prisma/generated/client.js';
import { ErrorType } from '../../workflows/errors.js';
import type { ProviderAnswer, ProviderClient } from '../../providers/kit/define.js';
import type { ProviderError } from '../../providers/kit/errors.js';
import type {
  CompensationInput,
  CompensationResult,
  HaltOrderInput,
  HaltOrderResult,
  StepInput,
  StepResult,
} from '../../workflows/order-activities.contract.js';
import type { ActivityDeps } from '../ports.js';
import {
  claimNewSideEffectOfOpenOrder,
  claimSideEffect,
  completeSideEffect,
  markSideEffectNotPerformed,
  readSideEffects,
  tombstoneSideEffect,
} from './claims.js';
import type {
  DatabaseCompensation,
  DatabaseStepDefinition,
  ProviderCompensation,
  ProviderStepDefinition,
  RecordContext,
  RequestContext,
  StepDefinition,
} from './define.js';
import { earlierAnswers } from './answers.js';
import { startCall, settleFailedCall } from './calls.js';
import { businessRefusal, preconditionFailure, refusalFailure, rethrowProviderError, withDoubt } from './failures.js';
import { readOrder, type StepOrder } from './order.js';
import {
  cancellationRequested,
  currentClaimOwner,
  halted,
  lockOrder,
  markHalted,
  orderStatusUpdate,
  refuseUnlessOpen,
  withHeartbeats,
  writeOrderStatus,
  writeStatusOfOpenOrder,
} from './order-guards.js';

/** The provider's client of a step, or an error naming the missing configuration. */
export function clientOf(deps: ActivityDeps, provider: string): ProviderClient {
  const client = deps.providers[provider];
  if (!client) throw new Error(`no client for provider ${provider} (is it in providers/index.ts?)`);
  return client;
}

/**
 * Runs a database step: one transaction under the order-row lock, the status written in it.
 * - `recorded`: locks the order, then returns the recorded result if the step ran before (whatever the order's state);
 *   else refuses a final or halted order, runs the step, records its result and writes the status.
 * - `byNature`: writes the status while taking the lock (refusing a final or halted order, unless its status is the
 *   one this step writes at this rank: a re-run of the step that made it so), then runs the step.
 * @throws ApplicationFailure `RecordNotFoundError`, `OrderClosedError`, `OrderHaltedError` (non-retryable), or what the
 *   step throws; the transaction is rolled back then.
 */
export async function runDatabaseStep(
  step: DatabaseStepDefinition,
  deps: ActivityDeps,
  input: StepInput,
): Promise<StepResult> {
  const { orderId, status, rank } = input;
  const { db } = deps;
  return db.$transaction(async (tx) => {
    if (step.idempotency === 'recorded') {
      // The lock first, then the recorded result in a statement of its own: a statement that waited for the lock
      // sees the newest order row but the rest from its snapshot, taken before the wait, so a result recorded by the
      // run that held the lock would be invisible to it.
      const order = await lockOrder(tx, orderId);
      const [recorded] = await tx.$queryRaw<Array<{ result: unknown }>>`
        SELECT result FROM order_step_results WHERE order_id = ${orderId}::uuid AND step = ${step.name}`;
      if (recorded) return { step: step.name, performed: false, data: recorded.result };
      refuseUnlessOpen(order, orderId, step.name);
      const data = (await step.run({ orderId, db, tx, answers: earlierAnswers(tx, orderId) })) ?? null;
      await tx.$executeRaw`
        WITH recorded AS (
          INSERT INTO order_step_results (order_id, step, result)
          VALUES (${orderId}::uuid, ${step.name}, ${JSON.stringify(data)}::jsonb))
        ${orderStatusUpdate(orderId, status, rank)}`;
      return { step: step.name, performed: true, data };
    }
    const written = await writeStatusOfOpenOrder(tx, orderId, status, rank, Prisma.sql`1 AS written`);
    if (!written) {
      const order = await lockOrder(tx, orderId);
      // The status this very step writes (e.g. `completed` when it is the plan's last step) is its own work done,
      // not a reason to refuse: the re-run goes on, idempotent by nature. Any other final or halted state refuses.
      const ownStatus = order.haltedAt === null && order.status === status && order.statusStep === rank;
      if (!ownStatus) refuseUnlessOpen(order, orderId, step.name);
    }
    const data = (await step.run({ orderId, db, tx, answers: earlierAnswers(tx, orderId) })) ?? null;
    return { step: step.name, performed: true, data };
  });
}

/** The attempt and retry policy of the running activity (for jittered retries), when there is one. */
export function retryTiming(): { attempt: number; retryPolicy?: ReturnType<typeof activityInfo>['retryPolicy'] } {
  const info = activityInfo();
  return { attempt: info.attempt, ...(info.retryPolicy ? { retryPolicy: info.retryPolicy } : {}) };
}

/**
 * Runs a provider step, claim first, act second:
 * 1. Claims the step's key under the order-row lock (refusing a final or halted order unless the effect was
 *    performed already): one statement for a new claim, else a transaction that applies the claim rules
 *    (./claims.ts). A `sent` claim returns its provider id, calls nothing; a tombstone refuses (`OrderHaltedError`).
 * 2. Claim → call (./calls.ts): builds the request (unless the claim carries the frozen body of an earlier call) from
 *    the order, read once for the attempt (./order.ts), and earlier answers (./answers.ts), then moves the claim to
 *    `sending` with the body frozen on it, under the order-row lock and only while the order is open: a halt that came
 *    first stops the step here (nothing called). Then calls the provider with `Idempotency-Key: <key>` and the frozen
 *    body while heartbeating; once under way the call is never cut short.
 * 3. A definite refusal (the provider did not act) frees the claim, and so does a refusal of the identical request
 *    that settles an earlier call's unknown outcome; an unknown outcome keeps it `sending` for a retry with the same
 *    key and body. Transient failures are retried with jitter.
 * 4. Marks the claim `sent` with the provider's id and writes the status in one statement, or, when the step
 *    records the answer, in one transaction with its `record`.
 * Every failure after the claim carries `mayHaveActed` in its details: whether the claim stays `sending`.
 * @throws ApplicationFailure `RecordNotFoundError`, `OrderClosedError`, `OrderHaltedError`, `ProviderRejectedError`,
 *   `UnauthorizedError`, `SideEffectUnrecordedError` (non-retryable); `ProviderUnavailableError` (details
 *   `{ status, mayHaveActed }`) or `ClaimInProgressError` (retryable); `CancelledFailure` when cancelled before the
 *   call.
 */
export async function runProviderStep(
  step: ProviderStepDefinition,
  deps: ActivityDeps,
  input: StepInput,
): Promise<StepResult> {
  const { orderId, status, rank } = input;
  const { db } = deps;
  const key = step.key(orderId);
  const kind = step.name;
  if (cancellationRequested()) throw new CancelledFailure(`cancelled before ${step.name} was claimed`);

  const owner = currentClaimOwner();
  const claim =
    (await claimNewSideEffectOfOpenOrder(db, orderId, { key, kind, owner })) ??
    (await db.$transaction(async (tx) => {
      const order = await lockOrder(tx, orderId);
      const [existing] = await readSideEffects(tx, [key]);
      if (existing?.status !== 'sent') refuseUnlessOpen(order, orderId, step.name);
      const outcome = await claimSideEffect(tx, { key, kind, owner, leaseMs: deps.settings.claimLeaseMs });
      if (outcome.state === 'done') await writeOrderStatus(tx, orderId, status, rank);
      return outcome;
    }));
  if (claim.state === 'done') return { step: step.name, performed: false, providerId: claim.providerId, key };
  if (claim.state === 'cancelled') throw halted(orderId, step.name, `its effect ${key} is cancelled`);

  // The order, read at most once for this attempt (by the precondition and the request).
  let order: Promise<StepOrder> | undefined;
  const context = async (): Promise<RequestContext> => ({
    orderId,
    db,
    answers: earlierAnswers(db, orderId),
    order: await (order ??= readOrder(db, orderId)),
  });
  // What must still hold (e.g. the card's hold), checked unless an earlier call under the key may have acted (then
  // only a replay under the same key can tell what happened).
  if (step.precondition && claim.prior !== 'sending') {
    const why = await step.precondition.check(await context()).catch(async (err: unknown) => {
      await markSideEffectNotPerformed(db, key, owner);
      throw err;
    });
    if (why !== null) {
      await markSideEffectNotPerformed(db, key, owner);
      throw preconditionFailure(step.name, step.precondition.failure, why);
    }
  }
  // Claim → call (./calls.ts): the body built once from the order read for this attempt and earlier answers, and
  // frozen; the fence re-checked as the claim moves to `sending`.
  const call = await startCall(db, {
    key,
    owner,
    claim,
    build: async () => step.request(await context()),
    fence: { orderId, step: step.name },
  });
  const client = clientOf(deps, step.provider.name);
  let answer: ProviderAnswer;
  try {
    answer = await withHeartbeats(() => client[step.operation]!(call.request, key));
  } catch (err) {
    // Definitely not performed: the claim may be taken again, and a halt may tombstone it. Otherwise it stays
    // `sending`: the provider may have acted, and only a retry with the same key (or a person) can tell.
    const doubt = await settleFailedCall(db, { key, owner, claim, call, err });
    const refusal = doubt ? null : businessRefusal(step.refused, err);
    if (refusal) {
      // The customer's business (e.g. a card declined): recorded, then the order fails with its public failure.
      const record = step.refused?.record;
      if (record) {
        await db.$transaction(async (tx) => {
          await lockOrder(tx, orderId);
          await record({ orderId, db, tx, answers: earlierAnswers(tx, orderId), reason: refusal.reason });
        });
      }
      throw refusalFailure(refusal, step.provider.title, err as ProviderError);
    }
    rethrowProviderError(err, step.provider.title, retryTiming(), doubt);
  }

  // The provider acted: whatever fails from here leaves the claim `sending` for a retry (the provider replays).
  try {
    const providerId = await completeAndRecord(deps, {
      orderId,
      key,
      request: call.request,
      answer,
      record: step.record as RecordHook | undefined,
      alongside: { orderId, status, rank },
    });
    return { step: step.name, performed: true, providerId, key };
  } catch (err) {
    throw withDoubt(err, true);
  }
}

/**
 * Runs a database compensation: under the order-row lock, marks the order halted first (so no late attempt of the
 * step acts after it), then the compensation's transaction.
 * @throws ApplicationFailure `RecordNotFoundError` when the order does not exist; what the compensation throws.
 */
export async function runDatabaseCompensation(
  compensation: DatabaseCompensation,
  deps: ActivityDeps,
  input: CompensationInput,
): Promise<CompensationResult> {
  const { orderId } = input;
  const { db } = deps;
  return db.$transaction(async (tx) => {
    await lockOrder(tx, orderId);
    await markHalted(tx, orderId, 'compensating');
    const data = (await compensation.run({ orderId, db, tx, answers: earlierAnswers(tx, orderId) })) ?? null;
    return { compensation: compensation.name, performed: true, data };
  });
}

/**
 * Runs a provider compensation of `step`, claim first like any effect, and only when the step's own effect
 * happened (its claim is `sent`): otherwise there is nothing to undo.
 * @throws ApplicationFailure `ClaimInProgressError` (retryable) while the step's own call is still unsettled
 *   (`sending`); the provider failures of {@link runProviderStep}.
 */
export async function runProviderCompensation(
  step: ProviderStepDefinition,
  compensation: ProviderCompensation,
  deps: ActivityDeps,
  input: CompensationInput,
): Promise<CompensationResult> {
  const { orderId } = input;
  const { db } = deps;
  const forwardKey = step.key(orderId);
  const key = compensation.key(orderId);
  const owner = currentClaimOwner();
  const claim = await db.$transaction(async (tx) => {
    await lockOrder(tx, orderId);
    const [forward] = await readSideEffects(tx, [forwardKey]);
    if (forward?.status === 'sending') {
      throw ApplicationFailure.retryable(
        `${compensation.name} waits: the outcome of ${forwardKey} is not known yet`,
        ErrorType.ClaimInProgress,
      );
    }
    if (forward?.status !== 'sent' || !forward.provider_id) return null;
    const outcome = await claimSideEffect(tx, {
      key,
      kind: compensation.name,
      owner,
      leaseMs: deps.settings.claimLeaseMs,
    });
    return { outcome, forward: { key: forwardKey, providerId: forward.provider_id } };
  });
  if (claim === null) return { compensation: compensation.name, performed: false };
  if (claim.outcome.state === 'done')
    return { compensation: compensation.name, performed: false, providerId: claim.outcome.providerId };
  if (claim.outcome.state === 'cancelled') return { compensation: compensation.name, performed: false };
  const { forward } = claim;
  const call = await startCall(db, {
    key,
    owner,
    claim: claim.outcome,
    build: async () =>
      compensation.request({
        orderId,
        db,
        answers: earlierAnswers(db, orderId),
        order: await readOrder(db, orderId),
        forward,
      }),
  });
  const client = clientOf(deps, compensation.provider.name);
  let answer: ProviderAnswer;
  try {
    answer = await withHeartbeats(() => client[compensation.operation]!(call.request, key));
  } catch (err) {
    const doubt = await settleFailedCall(db, { key, owner, claim: claim.outcome, call, err });
    rethrowProviderError(err, compensation.provider.title, retryTiming(), doubt);
  }
  try {
    const providerId = await completeAndRecord(deps, {
      orderId,
      key,
      request: call.request,
      answer,
      record: compensation.record as RecordHook | undefined,
    });
    return { compensation: compensation.name, performed: true, providerId };
  } catch (err) {
    throw withDoubt(err, true);
  }
}

/**
 * The fence before any compensation. Under the order-row lock (the lock every claim is taken, and every call
 * started, under), reads the claims of the fenced provider steps (every step up to and including the pivot, from the
 * order's plan), then:
 * - the pivot's claim is `sent`: the pivot was passed → `sent`, nothing changed;
 * - a claim is `sending` (a call in flight, or its outcome unknown) → `unknown`, nothing changed;
 * - otherwise tombstones every claim that is not `sent` (`claimed` ones included: their owners have not called, and
 *   they re-check the fence before calling), so no attempt, however late, ever performs it, and marks the order halted
 *   (`halted_at`, `halt_reason`, `halted_rank`) → `halted`.
 * Idempotent. The pivot and the keys come from the input (the order's plan; without a pivot, the last fenced step);
 * `steps` (the registry) only fills in the keys a workflow of 1.0.0 does not pass.
 * @throws ApplicationFailure `RecordNotFoundError` when the order does not exist; Error for a fenced step whose key
 *   neither the input nor the registry knows.
 */
export async function haltOrder(
  steps: readonly StepDefinition[],
  deps: ActivityDeps,
  input: HaltOrderInput,
): Promise<HaltOrderResult> {
  const { orderId } = input;
  const fenced = input.steps.map((name) => {
    const registered = steps.find((s) => s.name === name);
    const key = input.keys?.[name] ?? (registered?.kind === 'provider' ? registered.key(orderId) : undefined);
    if (key === undefined) throw new Error(`haltOrder: step ${name} has no key in the plan and is not in the registry`);
    return { name, key };
  });
  // A workflow that passes no pivot (1.0.0) fences its plan's provider steps up to and including its pivot, in plan
  // order: the last one is its pivot (a provider step), whatever the registry's pivot is today.
  const pivotName = input.pivot ?? input.steps.at(-1);
  return deps.db.$transaction(async (tx) => {
    await lockOrder(tx, orderId);
    const claims = new Map(
      (
        await readSideEffects(
          tx,
          fenced.map((s) => s.key),
        )
      ).map((c) => [c.key, c]),
    );
    const pivot = fenced.find((s) => s.name === pivotName);
    const pivotClaim = pivot && claims.get(pivot.key);
    if (pivot && pivotClaim?.status === 'sent' && pivotClaim.provider_id) {
      return { outcome: 'sent', step: pivot.name, providerId: pivotClaim.provider_id };
    }
    for (const step of fenced) {
      const claim = claims.get(step.key);
      if (claim?.status === 'sending') return { outcome: 'unknown', step: step.name, claimOwner: claim.owner };
    }
    for (const step of fenced) {
      if (claims.get(step.key)?.status !== 'sent') await tombstoneSideEffect(tx, step.key, step.name);
    }
    const rank = await markHalted(tx, orderId, input.reason);
    return { outcome: 'halted', rank };
  });
}

/** A step's or a compensation's `record` hook, its request and answer types erased. */
type RecordHook = (ctx: RecordContext<unknown, unknown>) => Promise<void>;

/**
 * Marks the claim under `key` sent with the provider's id (and, with `alongside`, writes the order's status at its
 * rank in the same statement) and, when there is a `record` hook, runs it in the same transaction, so the answer's
 * own rows commit with the claim or not at all.
 * @returns the provider id stored with the claim (the first one, when a re-run finds it sent).
 * @throws the database's or the hook's error unchanged (the claim then stays `sending` for a retry).
 */
async function completeAndRecord(
  deps: ActivityDeps,
  call: {
    orderId: string;
    key: string;
    request: unknown;
    answer: ProviderAnswer;
    record: RecordHook | undefined;
    alongside?: { orderId: string; status: string; rank: number };
  },
): Promise<string> {
  const { db } = deps;
  const { orderId, key, request, answer, record, alongside } = call;
  if (!record) return completeSideEffect(db, key, answer.providerId, alongside);
  return db.$transaction(async (tx) => {
    const stored = await completeSideEffect(tx, key, answer.providerId, alongside);
    await record({ orderId, db, tx, answers: earlierAnswers(tx, orderId), key, request, answer });
    return stored;
  });
}
