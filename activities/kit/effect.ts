/**
 * A provider effect outside an order's steps (e.g. a return's refund): the same claim-first protocol as a provider
 * step (./run.ts `runProviderStep`), fenced by the caller's own row instead of the order's.
 * 1. In one transaction: `lock` locks the subject's row (e.g. the return) and throws when the effect must not start;
 *    then the claim rules of ./claims.ts under `key` (a `sent` claim returns its provider id and calls nothing).
 * 2. ./calls.ts `startCall`: the body built once (or the frozen body of an earlier call under the key) and frozen as
 *    the claim moves to `sending`.
 * 3. The call with `Idempotency-Key: <key>`, heartbeating; a definite refusal frees the claim, an unknown outcome
 *    keeps it `sending` for a retry with the same key and body (./calls.ts `settleFailedCall`).
 * 4. The claim marked `sent` with the provider's id and `record` run in one transaction, the subject's row locked
 *    first again (the order of locks of step 1: subject, then claim).
 */
import { CancelledFailure, ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../../workflows/errors.js';
import type { ProviderAnswer, ProviderDefinition } from '../../providers/kit/define.js';
import type { ActivityDeps, SqlQueries } from '../ports.js';
import { claimSideEffect, completeSideEffect } from './claims.js';
import { settleFailedCall, startCall } from './calls.js';
import { rethrowProviderError, withDoubt } from './failures.js';
import { cancellationRequested, currentClaimOwner, withHeartbeats } from './order-guards.js';
import { clientOf, retryTiming } from './run.js';

/** What {@link runProviderEffect} needs. */
export interface ProviderEffect<Req, Res> {
  /** The idempotency key, from the identity of the work (e.g. `refund:<returnId>`); sent as `Idempotency-Key`. */
  key: string;
  /** The claim's kind (an activity name), for the claims table and its metrics. */
  kind: string;
  provider: ProviderDefinition;
  /** An operation of `provider`. */
  operation: string;
  /**
   * Locks the subject's row in `tx`, first in every transaction of the effect (so the claim's and the record's
   * transactions take their locks in one order and never deadlock). `start`: before the claim, where it throws
   * (non-retryable) when the effect must not start; false before the record, where it must not refuse (the provider
   * acted: its answer is recorded whatever happened to the subject meanwhile).
   */
  lock(tx: SqlQueries, start: boolean): Promise<unknown>;
  /** Builds the request from stored data only (every attempt builds the identical body). */
  build(): Promise<Req>;
  /** Records the answer in the subject's tables, in the transaction that marks the claim `sent` (absolute writes). */
  record?(tx: SqlQueries, answer: ProviderAnswer<Res>, request: Req): Promise<void>;
}

/**
 * Runs `effect` claim first, act second.
 * @returns `performed` false when an earlier run made the effect (its claim was `sent`), and the provider's id.
 * @throws what `lock` or `build` throw; ApplicationFailure `OrderHaltedError` (non-retryable) for a tombstoned claim;
 *   the provider failures of ./failures.ts `rethrowProviderError` (details `{ status, mayHaveActed }`);
 *   `CancelledFailure` when cancelled before the call.
 */
export async function runProviderEffect<Req, Res>(
  deps: ActivityDeps,
  effect: ProviderEffect<Req, Res>,
): Promise<{ performed: boolean; providerId: string }> {
  const { db } = deps;
  const { key, kind } = effect;
  if (cancellationRequested()) throw new CancelledFailure(`cancelled before ${kind} was claimed`);
  const owner = currentClaimOwner();
  const claim = await db.$transaction(async (tx) => {
    await effect.lock(tx, true);
    return claimSideEffect(tx, { key, kind, owner, leaseMs: deps.settings.claimLeaseMs });
  });
  if (claim.state === 'done') return { performed: false, providerId: claim.providerId };
  if (claim.state === 'cancelled') {
    throw ApplicationFailure.nonRetryable(`${kind}: its effect ${key} is cancelled`, ErrorType.OrderHalted);
  }
  const call = await startCall(db, { key, owner, claim, build: () => effect.build() });
  const client = clientOf(deps, effect.provider.name);
  let answer: ProviderAnswer;
  try {
    answer = await withHeartbeats(() => client[effect.operation]!(call.request, key));
  } catch (err) {
    const doubt = await settleFailedCall(db, { key, owner, claim, call, err });
    rethrowProviderError(err, effect.provider.title, retryTiming(), doubt);
  }
  try {
    const providerId = await db.$transaction(async (tx) => {
      await effect.lock(tx, false);
      const stored = await completeSideEffect(tx, key, answer.providerId);
      await effect.record?.(tx, answer as ProviderAnswer<Res>, call.request as Req);
      return stored;
    });
    return { performed: true, providerId };
  } catch (err) {
    throw withDoubt(err, true);
  }
}
