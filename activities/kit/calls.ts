/**
 * The protocol between a claim and its provider call (the runners of ./run.ts call it for every provider step and
 * provider compensation):
 * 1. {@link startCall}: the request body is built (unless the claim carries a frozen one: an earlier call under the
 *    key sent it, and every call sends the identical body), then the claim moves from `claimed` to `sending` with the
 *    body frozen on it, under the order-row lock and only while the order is open ({@link startSideEffectCall}). A
 *    halt that came first tombstoned the claim or halted the order: nothing is called. A cancel therefore stops a
 *    call that was not made yet without the activity having to hear of it (an activity learns of a cancel only from
 *    a heartbeat's response).
 * 2. {@link settleFailedCall}: after a failed call, whether the claim stays `sending` (the effect may have happened
 *    under the key) or becomes `failed` (definitely not performed): this call's own refusal, or a refusal of the
 *    identical request under the same key that settles an earlier call's doubt ({@link refusalSettlesDoubt}).
 * 3. `withDoubt` (./failures.ts): every failure after the claim says in its details whether the effect may have happened
 *    (`mayHaveActed`), judged from the claim, not only from the last error, so the workflow tells an unknown outcome
 *    from a refusal after the pivot too.
 */
import { log } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { ErrorType } from '../../workflows/errors.js';
import { ProviderError } from '../../providers/kit/errors.js';
import type { Db } from '../ports.js';
import {
  type ClaimOutcome,
  type ClaimOwner,
  markSideEffectNotPerformed,
  ownerToken,
  readSideEffects,
  startSideEffectCall,
} from './claims.js';
import { refusalSettlesDoubt, withDoubt } from './failures.js';
import { cancellationRequested, halted, lockOrder, refuseUnlessOpen } from './order-guards.js';

/** An owned claim, as {@link claimSideEffect} returns it. */
export type OwnedClaim = Extract<ClaimOutcome, { state: 'owned' }>;

/** What {@link startCall} hands to the call. */
export interface StartedCall {
  /** The frozen request body, parsed: send it as it is. */
  request: unknown;
  /** True when the claim carried its frozen body before this call (an earlier call under the key sent it). */
  frozenBefore: boolean;
}

/**
 * Builds (or takes the frozen) request body and moves the claim to `sending`: the last step before the call.
 * @param args.fence the order and step name: the call starts only while the order is open (forward steps); absent
 *   for a compensation (it runs on a halted order).
 * @throws what `build` throws (the claim is freed first, unless an earlier call's outcome is unknown);
 *   `CancelledFailure` when a cancel reached the activity before the call; ApplicationFailure `OrderHaltedError` /
 *   `OrderClosedError` (non-retryable) when the fence refused; `ClaimInProgressError` (retryable) when the claim was
 *   taken over or completed by another attempt meanwhile. Nothing was called in every case.
 */
export async function startCall(
  db: Db,
  args: {
    key: string;
    owner: ClaimOwner;
    claim: OwnedClaim;
    build: () => Promise<unknown>;
    fence?: { orderId: string; step: string };
  },
): Promise<StartedCall> {
  const { key, owner, claim, fence } = args;
  const doubt = claim.prior === 'sending';
  let body = claim.request;
  if (body === null) {
    try {
      body = JSON.stringify((await args.build()) ?? null);
    } catch (err) {
      if (!doubt) await markSideEffectNotPerformed(db, key, owner);
      throw withDoubt(err, doubt);
    }
  }
  if (cancellationRequested()) {
    if (!doubt) await markSideEffectNotPerformed(db, key, owner);
    throw withDoubt(new CancelledFailure(`cancelled before the call under ${key}`), doubt);
  }
  const frozen = await startSideEffectCall(db, {
    key,
    owner,
    request: body,
    ...(fence ? { fence: { orderId: fence.orderId } } : {}),
    // A claim left `sending` by a 1.0.0 worker: its first call's body is unknown, so none is frozen for it.
    freeze: !(doubt && claim.request === null),
  });
  if (frozen === null) throw await refusedStart(db, key, owner, doubt, fence);
  return { request: JSON.parse(frozen) as unknown, frozenBefore: claim.request !== null };
}

/** Why {@link startSideEffectCall} did not start the call, as the failure to throw (read under the order-row lock). */
async function refusedStart(
  db: Db,
  key: string,
  owner: ClaimOwner,
  doubt: boolean,
  fence: { orderId: string; step: string } | undefined,
): Promise<unknown> {
  return db.$transaction(async (tx) => {
    const order = fence ? await lockOrder(tx, fence.orderId) : undefined;
    const [claim] = await readSideEffects(tx, [key]);
    if (fence && claim?.status === 'cancelled')
      return halted(fence.orderId, fence.step, `its effect ${key} is cancelled`);
    if (claim?.status === 'sent') {
      // Another attempt under the key completed it meanwhile: the retry finds it `sent` and returns its provider id.
      return ApplicationFailure.retryable(
        `${key} was completed by another attempt before this call`,
        ErrorType.ClaimInProgress,
      );
    }
    if (fence && order && claim?.owner === ownerToken(owner)) {
      // The claim is still ours: the order stopped (halted by a compensation, or final). Free the claim so a halt
      // can tombstone it, unless an earlier call's outcome is unknown.
      if (!doubt) await markSideEffectNotPerformed(tx, key, owner);
      try {
        refuseUnlessOpen(order, fence.orderId, fence.step);
      } catch (refusal) {
        return withDoubt(refusal, doubt);
      }
    }
    return ApplicationFailure.retryable(
      `${key} was taken over before its call (now ${claim?.status ?? 'missing'}, ${claim?.owner ?? 'no owner'})`,
      ErrorType.ClaimInProgress,
    );
  });
}

/**
 * Records what a failed call means for its claim and returns whether the effect may have happened under the key:
 * - the call may have acted (timeout, lost connection, 5xx but 503, 409 in flight), or the error is not a provider
 *   error: the claim stays `sending` → true;
 * - a definite refusal of this call when no earlier call may have acted: the claim becomes `failed` → false;
 * - a definite refusal of the identical request under the key after an unknown outcome: it settles the doubt when
 *   {@link refusalSettlesDoubt} says so (the claim becomes `failed`, logged) → false; otherwise the doubt stays → true.
 */
export async function settleFailedCall(
  db: Db,
  args: { key: string; owner: ClaimOwner; claim: OwnedClaim; call: StartedCall; err: unknown },
): Promise<boolean> {
  const { key, owner, claim, call, err } = args;
  if (!(err instanceof ProviderError) || err.mayHaveActed) return true;
  if (claim.prior === 'sending') {
    if (!refusalSettlesDoubt(err, call.frozenBefore)) return true;
    log.warn('a refusal of the same request under the same key settled an unknown outcome: not performed', {
      key,
      status: err.status,
    });
  }
  await markSideEffectNotPerformed(db, key, owner);
  return false;
}
