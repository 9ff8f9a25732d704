/**
 * Claims for external side effects: claim first, act second.
 *
 * Before an activity calls a provider it writes a `side_effect_claims` row under the effect's idempotency
 * key (e.g. `order-confirmation:<orderId>`). The unique key decides one owner among concurrent runs; the
 * owner calls the provider with the same key as `Idempotency-Key`, then marks the claim `sent` with the
 * provider's id. Statuses:
 * - `claimed`: owned, and no call under the key may have acted (none was made since the claim was last known not
 *   performed). A halt may tombstone it: its owner re-checks the fence right before calling ({@link startSideEffectCall}).
 * - `sending`: a call is in flight, or an earlier call's outcome is unknown (the provider may have acted). Moved
 *   there by {@link startSideEffectCall}, under the order-row lock, immediately before the HTTP call. The request
 *   body sent is frozen with it (`request`): every later call under the key sends the identical body.
 * - `sent` (the provider's id recorded), `failed` (the last call was definitely not performed), `cancelled` (a
 *   tombstone: never perform).
 * Rules of {@link claimSideEffect}, in order:
 *  1. No row: insert `claimed` and own it.
 *  2. Row `sent`: the effect happened; return the recorded provider id, call nothing.
 *  3. Row `cancelled`: the order was halted before the effect; return `cancelled`, call nothing, ever.
 *  4. Row `failed`: nothing was performed; take it with a conditional UPDATE (one winner), as `claimed` (its old body
 *     is no longer binding: the new owner builds and freezes its own).
 *  5. Row `claimed` or `sending` owned by an earlier attempt of the same activity (Temporal retried because that
 *     attempt failed or timed out), or by an earlier activity of the same workflow (a lower activity id of the same
 *     run, or any activity of an earlier run: the workflow runs one such activity at a time, and schedules a new one
 *     only after the old one closed, e.g. after an operator's retry, possibly in the run a continue-as-new started):
 *     take it over as it is; a `sending` claim is re-sent with the same key and the same frozen body, so the
 *     provider de-duplicates: a send that did happen is not repeated, and a zombie attempt still running is harmless
 *     for the same reason.
 *  6. Row `claimed` or `sending` older than the lease (its owner died): reclaim it with a conditional UPDATE on status
 *     and claim age; exactly one reclaimer wins. A dead worker never means zero emails.
 *  7. Otherwise someone else is sending right now: throw the retryable `ClaimInProgressError`.
 */
import { observerSlot } from './observer.js';
import { ApplicationFailure } from '@temporalio/common';
import { Prisma } from '../../prisma/generated/client.js';
import { ErrorType } from '../../workflows/errors.js';
import type { ClaimStatus } from '../../workflows/order-activities.contract.js';
import { TERMINAL_ORDER_STATUSES } from '../../workflows/order-fulfilment.contract.js';
import type { Db } from '../ports.js';
import { orderStatusUpdate } from './order-guards.js';

/** The client or a transaction of it: claims can be taken inside a caller's transaction. */
export type DbOrTx = Pick<Db, '$executeRaw' | '$queryRaw'>;

/** Who is running: `<workflowId>/<runId>/<activityId>#<attempt>` of the current activity execution. */
export interface ClaimOwner {
  /** `<workflowId>/<runId>/<activityId>`: identical across retries of one activity. */
  execution: string;
  /** Temporal attempt number, starting at 1. */
  attempt: number;
}

/**
 * Status a claim had before this owner took it: `sending` means an earlier call may have acted; `none`, `failed` and
 * `claimed` that no call under the key did.
 */
export type PriorClaimStatus = 'none' | 'failed' | 'claimed' | 'sending';

/** Outcome of `claimSideEffect`. */
export type ClaimOutcome =
  | {
      state: 'owned';
      how: 'new' | 'after-failure' | 'retry-takeover' | 'lease-expired';
      attempts: number;
      prior: PriorClaimStatus;
      /**
       * The body frozen with a `sending` claim (JSON text): what every call under the key sends. Null when no call
       * was made yet (the owner builds the body and freezes it when it calls), or for a claim taken before bodies
       * were frozen (1.0.0).
       */
      request: string | null;
    }
  | { state: 'done'; providerId: string }
  | { state: 'cancelled' };

interface ClaimRow {
  status: string;
  owner: string;
  provider_id: string | null;
  attempts: number;
  request: string | null;
  expired: boolean;
}

/** The claim's `owner` column of `owner`: `<execution>#<attempt>`. */
export function ownerToken(owner: ClaimOwner): string {
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

const claimObserver = observerSlot<ClaimObservation>();
const report = (observation: ClaimObservation): void => claimObserver.report(observation);

/**
 * Installs the process-wide observer of claim decisions (one at a time; `undefined` removes it). The worker
 * installs a metrics recorder here, so this module never imports metrics code. The observer runs synchronously
 * after each decision (inside the caller's transaction, so a decision whose transaction later rolls back is
 * reported too); an observer that throws is ignored.
 */
export function observeSideEffectClaims(observer: ((observation: ClaimObservation) => void) | undefined): void {
  claimObserver.set(observer);
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
    VALUES (${key}, ${kind}, 'claimed', ${me}, 1, now())
    ON CONFLICT (key) DO NOTHING`;
  if (inserted === 1) return { state: 'owned', how: 'new', attempts: 1, prior: 'none', request: null };

  const rows = await db.$queryRaw<ClaimRow[]>`
    SELECT status, owner, provider_id, attempts, request,
           claimed_at < now() - make_interval(secs => ${leaseMs / 1000}::float8) AS expired
    FROM side_effect_claims WHERE key = ${key}`;
  const row = rows[0];
  if (!row) throw ApplicationFailure.retryable(`claim ${key} changed while claiming`, ErrorType.ClaimInProgress);
  if (row.status === 'sent' && row.provider_id) return { state: 'done', providerId: row.provider_id };
  if (row.status === 'cancelled') return { state: 'cancelled' };

  if (row.status === 'failed') {
    const taken = await db.$executeRaw`
      UPDATE side_effect_claims
      SET status = 'claimed', owner = ${me}, attempts = attempts + 1, claimed_at = now(), request = NULL
      WHERE key = ${key} AND status = 'failed'`;
    if (taken === 1)
      return { state: 'owned', how: 'after-failure', attempts: row.attempts + 1, prior: 'failed', request: null };
  } else if (row.status === 'claimed' || row.status === 'sending') {
    const prior = row.status;
    const request = prior === 'sending' ? row.request : null;
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
        WHERE key = ${key} AND status = ${prior} AND owner = ${row.owner}`;
      if (taken === 1) return { state: 'owned', how: 'retry-takeover', attempts: row.attempts + 1, prior, request };
    } else if (row.expired) {
      const reclaimed = await db.$executeRaw`
        UPDATE side_effect_claims
        SET owner = ${me}, attempts = attempts + 1, claimed_at = now()
        WHERE key = ${key} AND status = ${prior} AND owner = ${row.owner}
          AND claimed_at < now() - make_interval(secs => ${leaseMs / 1000}::float8)`;
      if (reclaimed === 1) return { state: 'owned', how: 'lease-expired', attempts: row.attempts + 1, prior, request };
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
    SELECT ${key}, ${kind}, 'claimed', ${ownerToken(owner)}, 1, now() FROM locked
    WHERE locked.halted_at IS NULL AND locked.status <> ALL(${[...TERMINAL_ORDER_STATUSES]})
    ON CONFLICT (key) DO NOTHING`;
  if (inserted !== 1) return undefined;
  const outcome: ClaimOutcome = { state: 'owned', how: 'new', attempts: 1, prior: 'none', request: null };
  report({ kind, outcome });
  return outcome;
}

/**
 * Moves this owner's claim to `sending` immediately before its call, freezing the request body with it: the one
 * moment a call may start. With `fence` it does so only while the order is open (not final, not halted), under the
 * order-row lock (`FOR UPDATE`, the lock a halt takes before it tombstones claims), so a halt either comes first (it
 * tombstoned the `claimed` claim or set the order's halt: nothing is called) or finds the claim `sending` (a call
 * may act: the halt answers `unknown`). Without `fence` (a compensation, which runs on a halted order) only the
 * claim's status and owner are checked.
 * @param request the body to freeze (JSON text) when the claim has none yet; a claim that has one keeps it.
 * @param freeze false for a claim that was `sending` before bodies were frozen (1.0.0): what its first call sent is
 *   not known, so no body is frozen for it (each call sends the one it builds) and no refusal settles its doubt.
 * @returns the body to send (JSON text), or null when the claim is no longer this owner's `claimed` or
 *   `sending` claim, or the fence refused: nothing was changed, nothing may be called.
 */
export async function startSideEffectCall(
  db: DbOrTx,
  params: { key: string; owner: ClaimOwner; request: string; fence?: { orderId: string }; freeze?: boolean },
): Promise<string | null> {
  const { key, owner, request, fence, freeze = true } = params;
  const open = fence ? Prisma.sql`AND EXISTS (SELECT 1 FROM locked)` : Prisma.empty;
  const locked = fence
    ? Prisma.sql`WITH locked AS MATERIALIZED (
        SELECT 1 FROM orders WHERE id = ${fence.orderId}::uuid
          AND halted_at IS NULL AND status <> ALL(${[...TERMINAL_ORDER_STATUSES]}) FOR UPDATE)`
    : Prisma.empty;
  const rows = await db.$queryRaw<Array<{ request: string }>>`
    ${locked}
    UPDATE side_effect_claims
    SET status = 'sending', request = CASE WHEN ${freeze} THEN coalesce(request, ${request}) ELSE request END
    WHERE key = ${key} AND owner = ${ownerToken(owner)} AND status IN ('claimed', 'sending') ${open}
    RETURNING coalesce(request, ${request}) AS request`;
  return rows[0]?.request ?? null;
}

/**
 * Marks the claim `sent` with the provider's id. Idempotent: if the claim is `sent` already (another owner completed
 * it), the recorded id is returned instead. A claim that is `failed` or `claimed` is completed too: the provider's
 * answer is the truth (a late answer of an attempt another attempt had superseded).
 * @param withOrder the order whose row lock fences the claim, and its status write (`status` at `rank`, see
 *   {@link orderStatusUpdate}), run in the same statement only when this statement completed the claim, so both
 *   commit together without a transaction of their own. The order row is locked (`FOR NO KEY UPDATE`, which
 *   conflicts with the halt's `FOR UPDATE`) before the claim row, the order every claimant and haltOrder take them
 *   in, so a halt racing the completion waits instead of deadlocking.
 * @returns the provider id now stored on the claim.
 * @throws ApplicationFailure `SideEffectUnrecordedError` (non-retryable; details `{ mayHaveActed: true, claim }`)
 *   when the claim is a tombstone or missing: the provider acted, but the claim cannot say so (nothing was written);
 *   a person must look at it.
 */
export async function completeSideEffect(
  db: DbOrTx,
  key: string,
  providerId: string,
  withOrder?: { orderId: string; status: string; rank: number },
): Promise<string> {
  const orderLockedFirst = withOrder
    ? Prisma.sql`AND (SELECT count(*) FROM (
        SELECT 1 FROM orders WHERE id = ${withOrder.orderId}::uuid FOR NO KEY UPDATE) AS locked) >= 0`
    : Prisma.empty;
  const alongside = withOrder
    ? Prisma.sql`, alongside AS (${orderStatusUpdate(
        withOrder.orderId,
        withOrder.status,
        withOrder.rank,
        Prisma.sql`EXISTS (SELECT 1 FROM done)`,
      )})`
    : Prisma.empty;
  const rows = await db.$queryRaw<Array<{ provider_id: string | null; status: string }>>`
    WITH done AS (
      UPDATE side_effect_claims SET status = 'sent', provider_id = ${providerId}, completed_at = now()
      WHERE key = ${key} AND status IN ('claimed', 'sending', 'failed') ${orderLockedFirst}
      RETURNING provider_id)${alongside}
    SELECT provider_id, 'sent' AS status FROM done
    UNION ALL
    SELECT provider_id, status FROM side_effect_claims WHERE key = ${key} AND NOT EXISTS (SELECT 1 FROM done)`;
  let row = rows[0];
  if (row?.status !== 'sent') {
    // A statement that waited for another completion's row lock reads the rest from its snapshot, taken before the
    // wait: read the claim again, in a statement of its own, before concluding that nothing recorded it.
    [row] = await db.$queryRaw<Array<{ provider_id: string | null; status: string }>>`
      SELECT provider_id, status FROM side_effect_claims WHERE key = ${key}`;
  }
  if (row?.status === 'sent' && row.provider_id) return row.provider_id;
  const claim = row?.status ?? 'missing';
  throw ApplicationFailure.create({
    message:
      `the provider answered ${providerId} for ${key}, but its claim is ${claim}: nothing was recorded ` +
      '(the effect happened at the provider; a person must reconcile it)',
    type: ErrorType.SideEffectUnrecorded,
    nonRetryable: true,
    details: [{ mayHaveActed: true, claim }],
  });
}

/**
 * Records that the claim's effect was definitely not performed: this owner's call was refused or never made, or (for
 * a `sending` claim) a refusal of the identical request under the same key settled an earlier call's doubt (the
 * caller decides that: {@link refusalSettlesDoubt}). The claim becomes `failed`: it may be taken again, and a halt may
 * tombstone it. Does nothing if the claim moved on (another owner, or `sent`).
 */
export async function markSideEffectNotPerformed(db: DbOrTx, key: string, owner: ClaimOwner): Promise<void> {
  await db.$executeRaw`
    UPDATE side_effect_claims SET status = 'failed'
    WHERE key = ${key} AND status IN ('claimed', 'sending') AND owner = ${ownerToken(owner)}`;
}

/** A claim row as {@link readSideEffects} returns it. */
export interface SideEffectRow {
  key: string;
  kind: string;
  status: ClaimStatus;
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
 * or `claimed` one into `cancelled` (a `claimed` claim's owner has not called: it re-checks the fence under the
 * order-row lock before calling, {@link startSideEffectCall}, and then finds the tombstone); a `sending` or `sent`
 * claim is left as it is (the caller decided it may be tombstoned after reading it under the lock every claimant
 * takes first, the order row, so no claim slips in between).
 */
export async function tombstoneSideEffect(db: DbOrTx, key: string, kind: string): Promise<void> {
  await db.$executeRaw`
    INSERT INTO side_effect_claims (key, kind, status, owner, attempts, claimed_at)
    VALUES (${key}, ${kind}, 'cancelled', 'tombstone', 0, now())
    ON CONFLICT (key) DO UPDATE SET status = 'cancelled', owner = 'tombstone'
      WHERE side_effect_claims.status IN ('failed', 'claimed')`;
}
