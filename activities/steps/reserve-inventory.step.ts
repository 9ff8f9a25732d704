/**
 * Reserve inventory: every line of the order, all or nothing, as one `reserve:<orderId>:<sku>` movement per line
 * with `reserved += quantity` under the condition `on_hand - reserved >= quantity`. Its compensation,
 * releaseInventory, records `release:<orderId>:<sku>` movements for what was reserved and not shipped; an order closed
 * after the point of no return releases the same with `close:<orderId>:<sku>` movements.
 *
 * Idempotent by nature: a movement's id is the identity of the work, inserted with ON CONFLICT DO NOTHING in the
 * statement that applies it, so a re-run (or a concurrent run) inserts nothing and changes nothing.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../../workflows/errors.js';
import { reserveInventory as entry } from '../catalogue/steps.js';
import { defineDatabaseStep } from '../kit/define.js';
import { halted } from '../kit/order-guards.js';
import { notFound } from '../kit/failures.js';
import type { SqlQueries } from '../ports.js';

/** One ledger movement of an order. `applied` is true when this run inserted it (false: found). */
export interface MovementOutcome {
  id: string;
  sku: string;
  /** Signed change of `reserved`, in units. */
  quantity: number;
  applied: boolean;
}

/** A line that could not be reserved, with the stock seen at the time (units). */
export interface StockShortage {
  sku: string;
  requested: number;
  available: number;
}

/** The id of the movement that reserves an order line. */
export function reserveMovementId(orderId: string, sku: string): string {
  return `reserve:${orderId}:${sku}`;
}

/** The reservation (its metadata: the catalogue entry), and what it does. */
export const reserveInventory = defineDatabaseStep({
  ...entry,
  idempotency: { byNature: 'each movement id is the identity of the work (`reserve:<orderId>:<sku>`)' },
  /**
   * Lines go in SKU order so concurrent orders lock products in one order (no deadlock). A released reservation is
   * never "already done": the step refuses it.
   * @throws ApplicationFailure `OrderHaltedError` (its reservation was released), `RecordNotFoundError` (no lines), or
   *   `InsufficientStockError` with `StockShortage[]` as details (the transaction leaves no partial reservation).
   */
  async run({ orderId, tx }) {
    const lines = await tx.$queryRaw<Array<{ sku: string; quantity: number; released: boolean }>>`
      SELECT l.sku, l.quantity,
             EXISTS (SELECT 1 FROM inventory_movements m WHERE m.order_id = l.order_id AND m.reason = 'release') AS released
      FROM order_lines l WHERE l.order_id = ${orderId}::uuid ORDER BY l.sku`;
    if (lines.length === 0) throw notFound('order', orderId);
    if (lines[0]!.released) throw halted(orderId, 'reserveInventory', 'its reservation was released');
    const movements: MovementOutcome[] = [];
    const shortages: StockShortage[] = [];
    for (const line of lines) {
      const id = reserveMovementId(orderId, line.sku);
      const [applied] = await tx.$queryRaw<Array<{ inserted: boolean; updated: boolean; available: number }>>`
        WITH moved AS (
          INSERT INTO inventory_movements (id, sku, order_id, reason, on_hand_delta, reserved_delta)
          VALUES (${id}, ${line.sku}, ${orderId}::uuid, 'reservation', 0, ${line.quantity})
          ON CONFLICT (id) DO NOTHING
          RETURNING 1),
        reserved AS (
          UPDATE products SET reserved = reserved + ${line.quantity}, updated_at = now()
          WHERE sku = ${line.sku} AND on_hand - reserved >= ${line.quantity} AND EXISTS (SELECT 1 FROM moved)
          RETURNING 1)
        SELECT EXISTS (SELECT 1 FROM moved) AS inserted, EXISTS (SELECT 1 FROM reserved) AS updated,
               (SELECT on_hand - reserved FROM products WHERE sku = ${line.sku}) AS available`;
      if (applied!.inserted && !applied!.updated) {
        shortages.push({ sku: line.sku, requested: line.quantity, available: applied!.available ?? 0 });
      }
      movements.push({ id, sku: line.sku, quantity: line.quantity, applied: applied!.inserted });
    }
    if (shortages.length > 0) {
      const detail = shortages.map((s) => `${s.sku}: requested ${s.requested}, available ${s.available}`);
      // Throwing rolls the whole transaction back: no movement and no reservation remain.
      throw ApplicationFailure.nonRetryable(
        `insufficient stock for ${detail.join('; ')}`,
        ErrorType.InsufficientStock,
        ...shortages,
      );
    }
    return { orderId, movements };
  },
  /**
   * An order closed after the point of no return: the goods it reserved and never shipped (e.g. the carrier refused the
   * address) did not leave, so their reservation is released: `close:<orderId>:<sku>` movements with
   * `reserved -= quantity`, once; `on_hand` does not change.
   */
  closed: async ({ orderId, tx }) => {
    await releaseUnshipped(tx, orderId, 'close');
  },
  compensation: {
    ...entry.compensation,
    /** For each reservation not shipped: `release:<orderId>:<sku>` with `reserved -= quantity`, once. */
    run: ({ orderId, tx }) => releaseUnshipped(tx, orderId, 'release'),
  },
});

/**
 * Releases an order's reservations that were neither shipped nor released under another id: one `release` movement
 * per such line, id `<prefix>:<orderId>:<sku>`, applied (`reserved -= quantity`) only when the movement is new, so a
 * second run changes nothing. Lines in SKU order, as the reservation locks products.
 * @param prefix `release` (the compensation) or `close` (an order closed after the point of no return).
 * @returns the movements, `applied` when this run inserted them.
 */
export async function releaseUnshipped(
  tx: SqlQueries,
  orderId: string,
  prefix: 'release' | 'close',
): Promise<{ orderId: string; movements: MovementOutcome[] }> {
  const reservations = await tx.$queryRaw<Array<{ sku: string; reserved_delta: number; settled: boolean }>>`
    SELECT r.sku, r.reserved_delta,
           EXISTS (SELECT 1 FROM inventory_movements s
                   WHERE s.order_id = r.order_id AND s.sku = r.sku
                     AND (s.reason = 'shipment'
                          OR (s.reason = 'release' AND s.id <> (${prefix}::text || ':' || r.order_id::text || ':' || r.sku)))
           ) AS settled
    FROM inventory_movements r WHERE r.order_id = ${orderId}::uuid AND r.reason = 'reservation' ORDER BY r.sku`;
  const movements: MovementOutcome[] = [];
  for (const r of reservations) {
    if (r.settled) continue;
    const id = `${prefix}:${orderId}:${r.sku}`;
    const [applied] = await tx.$queryRaw<Array<{ inserted: boolean }>>`
      WITH moved AS (
        INSERT INTO inventory_movements (id, sku, order_id, reason, on_hand_delta, reserved_delta)
        VALUES (${id}, ${r.sku}, ${orderId}::uuid, 'release', 0, ${-r.reserved_delta})
        ON CONFLICT (id) DO NOTHING
        RETURNING 1),
      released AS (
        UPDATE products SET reserved = reserved - ${r.reserved_delta}, updated_at = now()
        WHERE sku = ${r.sku} AND EXISTS (SELECT 1 FROM moved)
        RETURNING 1)
      SELECT EXISTS (SELECT 1 FROM moved) AS inserted`;
    movements.push({ id, sku: r.sku, quantity: -r.reserved_delta, applied: applied!.inserted });
  }
  return { orderId, movements };
}
