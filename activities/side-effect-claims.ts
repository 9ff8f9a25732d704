/**
 * Claims for external side effects: claim first, act second.
 *
 * Before an activity calls a provider it writes a `side_effect_claims` row under the effect's idempotency
 * key (e.g. `order-confirmation:<orderId>`). The unique key decides one owner among concurrent runs; the
 * owner calls the provider with the same key as `Idempotency-Key`, then marks the claim `sent` with the
 * provider's id. Rules, in order:
 *  1. No row: insert `sending` and own it.
 *  2. Row `sent`: the effect happened; return the recorded provider id, call nothing.
 *  3. Row `sending` owned by an earlier attempt of the same activity (Temporal retried because that
 *     attempt failed or timed out): take it over and re-send with the same key; the provider
 *     de-duplicates, so a send that did happen is not repeated.
 *  4. Row `sending` older than the lease (its owner died): reclaim it with a conditional UPDATE on status
 *     and claim age; exactly one reclaimer wins. A dead worker never means zero emails.
 *  5. Otherwise someone else is sending right now: throw the retryable `ClaimInProgressError`.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../workflows/errors.js';
import type { Db } from './ports.js';

/** Who is running: `<workflowId>/<activityId>#<attempt>` of the current activity execution. */
export interface ClaimOwner {
  /** `<workflowId>/<activityId>`: identical across retries of one activity. */
  execution: string;
  /** Temporal attempt number, starting at 1. */
  attempt: number;
}

/** Outcome of `claimSideEffect`. */
export type ClaimOutcome =
  | { state: 'owned'; how: 'new' | 'retry-takeover' | 'lease-expired'; attempts: number }
  | { state: 'done'; providerId: string };

interface ClaimRow {
  status: string;
  owner: string;
  provider_id: string | null;
  attempts: number;
  expired: boolean;
}

function ownerToken(owner: ClaimOwner): string {
  return `${owner.execution}#${owner.attempt}`;
}

function parseOwner(token: string): ClaimOwner | undefined {
  const hash = token.lastIndexOf('#');
  if (hash < 0) return undefined;
  const attempt = Number(token.slice(hash + 1));
  return Number.isInteger(attempt) ? { execution: token.slice(0, hash), attempt } : undefined;
}

/**
 * Claims the side effect `key` for `owner`, following the rules of this module.
 * @param leaseMs age in ms after which a `sending` claim of another execution may be reclaimed.
 * @throws ApplicationFailure `ClaimInProgressError` (retryable) when another live owner holds the claim.
 */
export async function claimSideEffect(
  db: Db,
  params: { key: string; kind: string; owner: ClaimOwner; leaseMs: number },
): Promise<ClaimOutcome> {
  const { key, kind, owner, leaseMs } = params;
  const me = ownerToken(owner);
  const inserted = await db.$executeRaw`
    INSERT INTO side_effect_claims (key, kind, status, owner, attempts, claimed_at)
    VALUES (${key}, ${kind}, 'sending', ${me}, 1, now())
    ON CONFLICT (key) DO NOTHING`;
  if (inserted === 1) return { state: 'owned', how: 'new', attempts: 1 };

  const rows = await db.$queryRaw<ClaimRow[]>`
    SELECT status, owner, provider_id, attempts,
           claimed_at < now() - make_interval(secs => ${leaseMs / 1000}::float8) AS expired
    FROM side_effect_claims WHERE key = ${key}`;
  const row = rows[0];
  if (!row) {
    // The claim vanished between insert and select (a permanent failure released it): retry soon.
    throw ApplicationFailure.retryable(`claim ${key} changed while claiming`, ErrorType.ClaimInProgress);
  }
  if (row.status === 'sent' && row.provider_id) return { state: 'done', providerId: row.provider_id };

  const current = parseOwner(row.owner);
  if (current && current.execution === owner.execution && current.attempt < owner.attempt) {
    const taken = await db.$executeRaw`
      UPDATE side_effect_claims
      SET owner = ${me}, attempts = attempts + 1, claimed_at = now()
      WHERE key = ${key} AND status = 'sending' AND owner = ${row.owner}`;
    if (taken === 1) return { state: 'owned', how: 'retry-takeover', attempts: row.attempts + 1 };
  } else if (row.expired) {
    const reclaimed = await db.$executeRaw`
      UPDATE side_effect_claims
      SET owner = ${me}, attempts = attempts + 1, claimed_at = now()
      WHERE key = ${key} AND status = 'sending'
        AND claimed_at < now() - make_interval(secs => ${leaseMs / 1000}::float8)`;
    if (reclaimed === 1) return { state: 'owned', how: 'lease-expired', attempts: row.attempts + 1 };
  }
  throw ApplicationFailure.retryable(
    `side effect ${key} is claimed by ${row.owner} (status ${row.status}); retrying later`,
    ErrorType.ClaimInProgress,
  );
}

/**
 * Marks the claim `sent` with the provider's id. Idempotent: if another owner already completed it, the
 * recorded id is returned instead.
 * @returns the provider id now stored on the claim.
 */
export async function completeSideEffect(db: Db, key: string, providerId: string): Promise<string> {
  const updated = await db.$executeRaw`
    UPDATE side_effect_claims SET status = 'sent', provider_id = ${providerId}, completed_at = now()
    WHERE key = ${key} AND status = 'sending'`;
  if (updated === 1) return providerId;
  const row = await db.sideEffectClaim.findUnique({ where: { key } });
  return row?.providerId ?? providerId;
}

/**
 * Releases a `sending` claim this owner holds, after the provider rejected the effect permanently, so
 * that a corrected re-run can claim it again. Does nothing if the claim moved on.
 */
export async function releaseSideEffect(db: Db, key: string, owner: ClaimOwner): Promise<void> {
  await db.$executeRaw`
    DELETE FROM side_effect_claims WHERE key = ${key} AND status = 'sending' AND owner = ${ownerToken(owner)}`;
}
