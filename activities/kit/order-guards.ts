/**
 * What every order activity shares: the order-row lock that serialises forward steps against halts
 * (the per-order tombstone), absolute status writes guarded by rank, the claim owner of the current
 * activity, and heartbeats around slow calls.
 */
import { activityInfo, Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../../workflows/errors.js';
import { Prisma } from '../../prisma/generated/client.js';
import { isTerminalStatus, TERMINAL_ORDER_STATUSES } from '../../workflows/order-fulfilment.contract.js';
import { notFound } from './failures.js';
import type { SqlQueries } from '../ports.js';
import type { ClaimOwner, DbOrTx } from './claims.js';

/** A transaction (the argument of `db.$transaction(async (tx) => ...)`). */
export type Tx = SqlQueries;

/** The order row as the guards read it. */
export interface LockedOrder {
  status: string;
  /** The rank of the status (`orders.status_step`). */
  statusStep: number;
  haltedAt: Date | null;
  haltReason: string | null;
}

/**
 * Locks the order row (`SELECT ... FOR UPDATE`) for the rest of the transaction. Every forward step and every
 * halt takes this lock first, so a halt and a forward step never interleave: either the step acts before
 * the halt (and the compensation that follows undoes it), or it sees the tombstone and refuses.
 * @throws ApplicationFailure `RecordNotFoundError` when there is no such order.
 */
export async function lockOrder(tx: DbOrTx, orderId: string): Promise<LockedOrder> {
  const rows = await tx.$queryRaw<
    Array<{ status: string; status_step: number; halted_at: Date | null; halt_reason: string | null }>
  >`
    SELECT status, status_step, halted_at, halt_reason FROM orders WHERE id = ${orderId}::uuid FOR UPDATE`;
  const row = rows[0];
  if (!row) throw notFound('order', orderId);
  return { status: row.status, statusStep: row.status_step, haltedAt: row.halted_at, haltReason: row.halt_reason };
}

/**
 * {@link lockOrder}, then refuses a forward step on an order that is final or halted.
 * @param step name of the step, for the message.
 * @throws ApplicationFailure `OrderClosedError` (final: completed, failed or cancelled; details `{ status }`),
 *   `OrderHaltedError` (halted for compensation; details `{ haltReason }`), `RecordNotFoundError`. All non-retryable.
 */
export async function lockOrderForForwardStep(tx: DbOrTx, orderId: string, step: string): Promise<LockedOrder> {
  const order = await lockOrder(tx, orderId);
  refuseUnlessOpen(order, orderId, step);
  return order;
}

/**
 * The check of {@link lockOrderForForwardStep} on an order row read under the order-row lock.
 * @throws ApplicationFailure `OrderClosedError` or `OrderHaltedError` (non-retryable).
 */
export function refuseUnlessOpen(
  order: Pick<LockedOrder, 'status' | 'haltedAt' | 'haltReason'>,
  orderId: string,
  step: string,
): Pick<LockedOrder, 'status' | 'haltedAt' | 'haltReason'> {
  if (isTerminalStatus(order.status)) {
    throw ApplicationFailure.nonRetryable(
      `${step} refused: order ${orderId} is already ${order.status}`,
      ErrorType.OrderClosed,
      { status: order.status },
    );
  }
  if (order.haltedAt) throw halted(orderId, step, order.haltReason ?? 'halted');
  return order;
}

/**
 * Sets the order's tombstone (`halted_at`, database clock; `halt_reason`; `halted_rank`, the rank of the last status
 * it reached) if it is not set yet: from then on forward steps refuse the order. Call it under {@link lockOrder}.
 * @param reason kept when the order was halted before (the first reason wins), max 1000 chars.
 * @returns `halted_rank`: the rank of the last status the order reached before its first halt (every step ranked
 *   at or below it committed its effect: a step writes its status in its own transaction), or null when the order
 *   does not exist.
 */
export async function markHalted(tx: DbOrTx, orderId: string, reason: string): Promise<number | null> {
  const rows = await tx.$queryRaw<Array<{ halted_rank: number | null }>>`
    UPDATE orders SET halted_at = coalesce(halted_at, now()), halt_reason = coalesce(halt_reason, ${reason.slice(0, 1000)}),
           halted_rank = coalesce(halted_rank, status_step), updated_at = now()
    WHERE id = ${orderId}::uuid
    RETURNING halted_rank`;
  return rows[0]?.halted_rank ?? null;
}

/**
 * The fast path of a forward step that writes its status first in its transaction: one `UPDATE` that takes the
 * order-row lock (a row lock that conflicts with the `FOR UPDATE` of {@link lockOrder}, so the fence against
 * halts holds) and writes `status` with `rank`, but only on an order that is open (not final, not halted), whose
 * stored rank is lower (or equal with the same status), and that matches `extra` (a further condition on the
 * row, e.g. `NOT EXISTS (...)`). PostgreSQL re-checks these conditions on the newest row version when the
 * statement had to wait for the lock.
 * @param returning the RETURNING list (columns of `orders`, or sub-selects of immutable rows; a sub-select sees
 *   the statement's snapshot, taken before any wait for the lock).
 * @returns the RETURNING row, or undefined when the row was not written: then the caller takes the slow path
 *   ({@link lockOrderForForwardStep} and its own checks), which refuses, or proceeds without writing when only
 *   the rank was higher already.
 */
export async function writeStatusOfOpenOrder<Row>(
  tx: DbOrTx,
  orderId: string,
  status: string,
  rank: number,
  returning: Prisma.Sql,
  extra: Prisma.Sql = Prisma.sql`TRUE`,
): Promise<Row | undefined> {
  const rows = await tx.$queryRaw<Row[]>`
    UPDATE orders
    SET status = ${status}, status_step = ${rank}, failure_reason = NULL,
        completed_at = CASE WHEN ${status} = 'completed' THEN coalesce(completed_at, now()) ELSE completed_at END,
        updated_at = now()
    WHERE id = ${orderId}::uuid AND halted_at IS NULL AND status <> ALL(${[...TERMINAL_ORDER_STATUSES]})
      AND (status_step < ${rank} OR (status_step = ${rank} AND status = ${status})) AND ${extra}
    RETURNING ${returning}`;
  return rows[0];
}

/**
 * The `UPDATE` of {@link writeOrderStatus} without a reason, as a fragment to run inside a data-modifying `WITH`
 * (so a status write shares a statement with the write it belongs to).
 * @param only a further condition (e.g. `EXISTS (SELECT 1 FROM inserted)`).
 */
export function orderStatusUpdate(
  orderId: string,
  status: string,
  rank: number,
  only: Prisma.Sql = Prisma.sql`TRUE`,
): Prisma.Sql {
  return Prisma.sql`
    UPDATE orders
    SET status = ${status}, status_step = ${rank}, failure_reason = NULL,
        completed_at = CASE WHEN ${status} = 'completed' THEN coalesce(completed_at, now()) ELSE completed_at END,
        updated_at = now()
    WHERE id = ${orderId}::uuid AND (status_step < ${rank} OR (status_step = ${rank} AND status = ${status}))
      AND ${only}`;
}

/** The non-retryable `OrderHaltedError` of a forward step that must not act any more. */
export function halted(orderId: string, step: string, why: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(`${step} refused: order ${orderId} stopped (${why})`, ErrorType.OrderHalted, {
    haltReason: why,
  });
}

/**
 * Writes the order's status as an absolute value with its rank: applied only when the stored rank is lower,
 * or equal with the same status (so a late retry never moves an order backwards, and `failed`/`cancelled`
 * are never overwritten by each other). Sets `completed_at` (database clock) on `completed`.
 * @param reason stored in `failure_reason` (max 1000 chars); null clears it.
 * @returns true when the row changed.
 */
export async function writeOrderStatus(
  db: DbOrTx,
  orderId: string,
  status: string,
  rank: number,
  reason: string | null = null,
): Promise<boolean> {
  const stored = reason?.slice(0, 1000) ?? null;
  const updated = await db.$executeRaw`
    UPDATE orders
    SET status = ${status}, status_step = ${rank}, failure_reason = ${stored},
        completed_at = CASE WHEN ${status} = 'completed' THEN coalesce(completed_at, now()) ELSE completed_at END,
        updated_at = now()
    WHERE id = ${orderId}::uuid AND (status_step < ${rank} OR (status_step = ${rank} AND status = ${status}))`;
  return updated === 1;
}

/** The current activity execution as a claim owner (`<workflowId>/<runId>/<activityId>`, attempt). */
export function currentClaimOwner(): ClaimOwner {
  const info = activityInfo();
  const workflowId = info.workflowExecution?.workflowId ?? 'standalone';
  const runId = info.workflowExecution?.runId ?? 'none';
  return { execution: `${workflowId}/${runId}/${info.activityId}`, attempt: info.attempt };
}

/** True when Temporal asked this activity to cancel (delivered with a heartbeat response). */
export function cancellationRequested(): boolean {
  return Context.current().cancellationSignal.aborted;
}

/**
 * Runs `fn` while heartbeating every `intervalMs` ms, so a worker that dies mid-call is noticed within the
 * heartbeat timeout of the activity's retry profile, and a cancel request reaches the activity. The call
 * itself is never aborted: a provider call cut short would leave its outcome unknown.
 * The first heartbeat comes after `intervalMs`, not at once: the server's heartbeat timeout runs from the
 * activity's start, so a call that ends sooner needs none (and costs no heartbeat request to Temporal).
 * See https://docs.temporal.io/encyclopedia/detecting-activity-failures#activity-heartbeat
 */
export async function withHeartbeats<T>(fn: () => Promise<T>, intervalMs = 1000): Promise<T> {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(), intervalMs);
  try {
    return await fn();
  } finally {
    clearInterval(timer);
  }
}
