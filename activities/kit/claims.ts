/**
 * Claims for external side effects: claim first, act second.
 *
 * Before an activity calls a provider it writes a `side_effect_claims` row under the effect's idempotency
 * key (e.g. `order-confirmation:<orderId>`). The unique key decides one owner among concurrent runs; the
 * owner calls the provider with the same key as `Idempotency-Key`, then marks the claim `sent` with the
 * provider's id. Statuses: `sending` (a call may be in flight, or an earlier call's outcome is unknown),
 * `sent`, `failed` (the last call was definitely not performed) and `cancelled` (a tombstone: never perform).
 * Rules, in order:
 *  1. No row: insert `sending` and own it.
 *  2. Row `sent`: the effect happened; return the recorded provider id, call nothing.
 *  3. Row `cancelled`: the order was halted before the effect; return `cancelled`, call nothing, ever.
 *  4. Row `failed`: nothing was performed; take it with a conditional UPDATE (one winner).
 *  5. Row `sending` owned by an earlier attempt of the same activity (Temporal retried because that
 *     attempt failed or timed out), or by an earlier activity of the same workflow (a lower activity id of the same
 *     run, or any activity of an earlier run: the workflow runs one such activity at a time, and schedules a new one
 *     only after the old one closed, e.g. after an operator's retry, possibly in the run a continue-as-new started):
 *     take it over and re-send with the same key; the provider de-duplicates, so a send
 *     that did happen is not repeated, and a zombie attempt still running is harmless for the same reason.
 *  6. Row `sending` older than the lease (its owner died): reclaim it with a conditional UPDATE on status
 *     and claim age; exactly one reclaimer wins. A dead worker never means zero emails.
 *  7. Otherwise someone else is sending right now: throw the retryable `ClaimInProgressError`.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Prisma } from '../../prisma/generated/client.js';
import { ErrorType } from '../../workflows/errors.js';
import { TERMINAL_ORDER_STATUSES } from '../../workflows/order-fulfilment.contract.js';
import type { Db } from '../ports.js';

/** The client or a transaction of it: claims can be taken inside a caller's transaction. */
export type DbOrTx = Pick<Db, '$executeRaw' | '$queryRaw'>;

/** Who is running: `<workflowId>/<runId>/<activityId>#<attempt>` of the current activity execution. */
export interface ClaimOwner {
  /** `<workflowId>/<runId>/<activityId>`: identical across retries of one activity. */
  execution: string;
  /** Temporal attempt number, starting at 1. */
  attempt: number;
}

/** Status a claim had before this owner took it: `sending` means an earlier call may have acted. */
export type PriorClaimStatus = 'none' | 'failed' | 'sending';

/** Outcome of `claimSideEffect`. */
export type ClaimOutcome =
  | {
      state: 'owned';
      how: 'new' | 'after-failure' | 'retry-takeover' | 'lease-expired';
      attempts: number;
      prior: PriorClaimStatus;
    }
  | { state: 'done'; providerId: string }
  | { state: 'cancelled' };

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

/** The workflow id part of an execution `<workflowId>/<activityId>`. */
function workflowOf(execution: string): string {
  const slash = execution.indexOf('/');
  return slash < 0 ? execution : execution.slice(0, slash);
}

/** The run id part of an execution `<workflowId>/<runId>/<activityId>` ('' for an older two-part token). */
function runOf(execution: string): string {
  const parts = execution.split('/');
  return parts.length >= 3 ? parts[1]! : '';
}

/** The activity id of an execution as a number (the TypeScript SDK numbers a run's activities 1, 2, 3...). */
function activitySeq(execution: string): number {
  const id = Number(execution.slice(execution.lastIndexOf('/') + 1));
  return Number.isInteger(id) ? id : Number.NaN;
}

function parseOwner(token: string): ClaimOwner | undefined {
  const hash = token.lastIndexOf('#');
  if (hash < 0) return undefined;
  const attempt = Number(token.slice(hash + 1));
  return Number.isInteger(attempt) ? { execution: token.slice(0, hash), attempt } : undefined;
}

/** A claim decision as {@link observeSideEffectClaims} reports it: the outcome, or `in-progress` (rule 7). */
export interface ClaimObservation {
  /** The effect's kind, as passed to `claimSideEffect` (e.g. `email`). */
  kind: string;
  outcome: ClaimOutcome | { state: 'in-progress' };
}

let claimObserver: ((observation: ClaimObservation) => void) | undefined;

/**
 * Installs the process-wide observer of claim decisions (one at a time; `undefined` removes it). The worker
 * installs a metrics recorder here, so this module never imports metrics code. The observer runs synchronously
 * after each decision (inside the caller's transaction, so a decision whose transaction later rolls back is
 * reported too); an observer that throws is ignored.
 */
export function observeSideEffectClaims(observer: ((observation: ClaimObservation) => void) | undefined): void {
  claimObserver = observer;
}

function report(observation: ClaimObservation): void {
  try {
    claimObserver?.(observation);
  } catch {
    // Observability must never change what the activity does.
  }
}

/**
 * Claims the side effect `key` for `owner`, following the rules of this module, and reports the decision to the
 * observer of {@link observeSideEffectClaims}.
 * @param leaseMs age in ms after which a `sending` claim of another execution may be reclaimed.
 * @throws ApplicationFailure `ClaimInProgressError` (retryable) when another live owner holds the claim.
 */
export async function claimSideEffect(
  db: DbOrTx,
  params: { key: string; kind: string; owner: ClaimOwner; leaseMs: number },
): Promise<ClaimOutcome> {
  try {
    const outcome = await decideClaim(db, params);
    report({ kind: params.kind, outcome });
    return outcome;
  } catch (err) {
    if (err instanceof ApplicationFailure && err.type === ErrorType.ClaimInProgress) {
      report({ kind: params.kind, outcome: { state: 'in-progress' } });
    }
    throw err;
  }
}

async function decideClaim(
  db: DbOrTx,
  params: { key: string; kind: string; owner: ClaimOwner; leaseMs: number },
): Promise<ClaimOutcome> {
  const { key, kind, owner, leaseMs } = params;
  const me = ownerToken(owner);
  const inserted = await db.$executeRaw`
    INSERT INTO side_effect_claims (key, kind, status, owner, attempts, claimed_at)
    VALUES (${key}, ${kind}, 'sending', ${me}, 1, now())
    ON CONFLICT (key) DO NOTHING`;
  if (inserted === 1) return { state: 'owned', how: 'new', attempts: 1, prior: 'none' };

  const rows = await db.$queryRaw<ClaimRow[]>`
    SELECT status, owner, provider_id, attempts,
           claimed_at < now() - make_interval(secs => ${leaseMs / 1000}::float8) AS expired
    FROM side_effect_claims WHERE key = ${key}`;
  const row = rows[0];
  if (!row) throw ApplicationFailure.retryable(`claim ${key} changed while claiming`, ErrorType.ClaimInProgress);
  if (row.status === 'sent' && row.provider_id) return { state: 'done', providerId: row.provider_id };
  if (row.status === 'cancelled') return { state: 'cancelled' };

  if (row.status === 'failed') {
    const taken = await db.$executeRaw`
      UPDATE side_effect_claims
      SET status = 'sending', owner = ${me}, attempts = attempts + 1, claimed_at = now()
      WHERE key = ${key} AND status = 'failed'`;
    if (taken === 1) return { state: 'owned', how: 'after-failure', attempts: row.attempts + 1, prior: 'failed' };
  } else {
    const current = parseOwner(row.owner);
    const sameActivity = current?.execution === owner.execution && current.attempt < owner.attempt;
    // A later activity of the same workflow: in the same run, a higher activity id; or any activity of another run
    // (only one run of a workflow is open, so the claim's run is an earlier one, closed by a continue-as-new or a
    // reset, whose activity ids started again at 1).
    const laterActivityOfSameWorkflow =
      current !== undefined &&
      workflowOf(current.execution) === workflowOf(owner.execution) &&
      workflowOf(owner.execution) !== 'standalone' &&
      (runOf(current.execution) !== runOf(owner.execution) ||
        activitySeq(current.execution) < activitySeq(owner.execution));
    if (sameActivity || laterActivityOfSameWorkflow) {
      const taken = await db.$executeRaw`
        UPDATE side_effect_claims
        SET owner = ${me}, attempts = attempts + 1, claimed_at = now()
        WHERE key = ${key} AND status = 'sending' AND owner = ${row.owner}`;
      if (taken === 1) return { state: 'owned', how: 'retry-takeover', attempts: row.attempts + 1, prior: 'sending' };
    } else if (row.expired) {
      const reclaimed = await db.$executeRaw`
        UPDATE side_effect_claims
        SET owner = ${me}, attempts = attempts + 1, claimed_at = now()
        WHERE key = ${key} AND status = 'sending'
          AND claimed_at < now() - make_interval(secs => ${leaseMs / 1000}::float8)`;
      if (reclaimed === 1)
        return { state: 'owned', how: 'lease-expired', attempts: row.attempts + 1, prior: 'sending' };
    }
  }
  throw ApplicationFailure.retryable(
    `side effect ${key} is claimed by ${row.owner} (status ${row.status}); retrying later`,
    ErrorType.ClaimInProgress,
  );
}

/**
 * The fast path of "lock the order row, refuse a final or halted order, claim": one statement that locks the
 * order row (`FOR UPDATE`, the lock a halt takes before it tombstones claims) and inserts a new `sending` claim
 * for `owner` only if the order is open (not final, not halted; PostgreSQL re-reads the newest row version when it
 * had to wait for the lock). Rule 1 of this module, under the same fence as the transaction of
 * `lockOrderForForwardStep` + {@link claimSideEffect}, in one round trip; reported to the observer like them.
 * @returns the `owned` outcome when this statement inserted the claim; undefined otherwise (the order is missing,
 *   final or halted, or the claim exists): the caller then runs that transaction, which refuses or applies rules
 *   2 to 7.
 */
export async function claimNewSideEffectOfOpenOrder(
  db: DbOrTx,
  orderId: string,
  params: { key: string; kind: string; owner: ClaimOwner },
): Promise<ClaimOutcome | undefined> {
  const { key, kind, owner } = params;
  const inserted = await db.$executeRaw`
    WITH locked AS MATERIALIZED (
      SELECT status, halted_at FROM orders WHERE id = ${orderId}::uuid FOR UPDATE)
    INSERT INTO side_effect_claims (key, kind, status, owner, attempts, claimed_at)
    SELECT ${key}, ${kind}, 'sending', ${ownerToken(owner)}, 1, now() FROM locked
    WHERE locked.halted_at IS NULL AND locked.status <> ALL(${[...TERMINAL_ORDER_STATUSES]})
    ON CONFLICT (key) DO NOTHING`;
  if (inserted !== 1) return undefined;
  const outcome: ClaimOutcome = { state: 'owned', how: 'new', attempts: 1, prior: 'none' };
  report({ kind, outcome });
  return outcome;
}

/**
 * Marks the claim `sent` with the provider's id. Idempotent: if another owner already completed it, the
 * recorded id is returned instead.
 * @param withOrder the order whose row lock fences the claim, and a data-modifying statement on that order (its
 *   status write) run in the same statement, so both commit together without a transaction of their own. The
 *   order row is locked (`FOR NO KEY UPDATE`, which conflicts with the halt's `FOR UPDATE`) before the claim row,
 *   the order every claimant and haltOrder take them in, so a halt racing the completion waits instead of
 *   deadlocking.
 * @returns the provider id now stored on the claim.
 */
export async function completeSideEffect(
  db: DbOrTx,
  key: string,
  providerId: string,
  withOrder?: { orderId: string; alongside: Prisma.Sql },
): Promise<string> {
  const orderLockedFirst = withOrder
    ? Prisma.sql`AND (SELECT count(*) FROM (
        SELECT 1 FROM orders WHERE id = ${withOrder.orderId}::uuid FOR NO KEY UPDATE) AS locked) >= 0`
    : Prisma.empty;
  const rows = await db.$queryRaw<Array<{ provider_id: string | null }>>`
    WITH done AS (
      UPDATE side_effect_claims SET status = 'sent', provider_id = ${providerId}, completed_at = now()
      WHERE key = ${key} AND status IN ('sending', 'failed') ${orderLockedFirst}
      RETURNING provider_id)${withOrder ? Prisma.sql`, alongside AS (${withOrder.alongside})` : Prisma.empty}
    SELECT provider_id FROM done
    UNION ALL
    SELECT provider_id FROM side_effect_claims WHERE key = ${key} AND NOT EXISTS (SELECT 1 FROM done)`;
  return rows[0]?.provider_id ?? providerId;
}

/**
 * Records that this owner's call was definitely not performed (the provider refused it, or it was never
 * made), so the claim may be taken again and a halt may tombstone it. With `prior = 'sending'` (an earlier
 * call's outcome is still unknown) the claim stays `sending`: nothing this owner did settles that doubt.
 * Does nothing if the claim moved on (another owner, or `sent`).
 */
export async function markSideEffectNotPerformed(
  db: DbOrTx,
  key: string,
  owner: ClaimOwner,
  prior: PriorClaimStatus,
): Promise<void> {
  if (prior === 'sending') return;
  await db.$executeRaw`
    UPDATE side_effect_claims SET status = 'failed'
    WHERE key = ${key} AND status = 'sending' AND owner = ${ownerToken(owner)}`;
}

/** A claim row as {@link readSideEffects} returns it. */
export interface SideEffectRow {
  key: string;
  kind: string;
  status: 'sending' | 'sent' | 'failed' | 'cancelled';
  owner: string;
  provider_id: string | null;
}

/** The claim rows of `keys` that exist (in no particular order). Run it under the order-row lock to act on them. */
export async function readSideEffects(db: DbOrTx, keys: readonly string[]): Promise<SideEffectRow[]> {
  if (keys.length === 0) return [];
  return db.$queryRaw<SideEffectRow[]>`
    SELECT key, kind, status, owner, provider_id FROM side_effect_claims WHERE key = ANY(${[...keys]})`;
}

/**
 * Makes sure the side effect `key` is never performed: inserts a `cancelled` claim (a tombstone), or turns a `failed`
 * one into `cancelled`; a `sending` or `sent` claim is left as it is (the caller decided it may be tombstoned after
 * reading it under the lock every claimant takes first, the order row, so no claim slips in between).
 */
export async function tombstoneSideEffect(db: DbOrTx, key: string, kind: string): Promise<void> {
  await db.$executeRaw`
    INSERT INTO side_effect_claims (key, kind, status, owner, attempts, claimed_at)
    VALUES (${key}, ${kind}, 'cancelled', 'tombstone', 0, now())
    ON CONFLICT (key) DO UPDATE SET status = 'cancelled', owner = 'tombstone'
      WHERE side_effect_claims.status = 'failed'`;
}
