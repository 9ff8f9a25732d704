/**
 * Inventory activities: reserve an order's stock and release it (the compensation).
 *
 * Every stock change is a movement in `inventory_movements` with a deterministic id
 * (`reserve:<orderId>:<sku>`, `release:<orderId>:<sku>`), inserted with ON CONFLICT DO NOTHING in the
 * same transaction as the product update it describes. A re-run, or a concurrent run, finds the movement
 * and changes nothing; increments are never replayed.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Prisma } from '../prisma/generated/client.js';
import { ErrorType } from '../workflows/errors.js';
import { OrderStatus, statusRank } from '../workflows/order-fulfilment.contract.js';
import { notFound } from './failures.js';
import {
  halted,
  lockOrder,
  lockOrderForForwardStep,
  markHalted,
  writeOrderStatus,
  writeStatusOfOpenOrder,
} from './order-guards.js';
import type { Db } from './ports.js';

/** Input of reserveInventory / releaseInventory. */
export interface ReserveInventoryInput {
  orderId: string;
}
export type ReleaseInventoryInput = ReserveInventoryInput;

/** One ledger movement of an order. `applied` is true when this run inserted it (false: found). */
export interface MovementOutcome {
  id: string;
  sku: string;
  /** Signed change of `reserved`, in units. */
  quantity: number;
  applied: boolean;
}

/** Result of reserveInventory / releaseInventory. */
export interface ReserveInventoryResult {
  orderId: string;
  movements: MovementOutcome[];
}
export type ReleaseInventoryResult = ReserveInventoryResult;

/** A line that could not be reserved, with the stock seen at the time (units). */
export interface StockShortage {
  sku: string;
  requested: number;
  available: number;
}

/** Builds the inventory activities over the database port. */
export function createInventoryActivities(db: Db) {
  return {
    /**
     * Reserves every line of the order, all or nothing: one `reserve:<orderId>:<sku>` movement per line,
     * each with `reserved += quantity` under the condition `on_hand - reserved >= quantity`.
     * Lines are processed in SKU order so concurrent orders lock products in one order (no deadlock).
     * In the same transaction the order's status becomes `inventory_reserved`. Takes the order-row lock
     * first: an order that is final, halted, or whose reservation was already released is refused (a
     * released reservation is never "already done").
     * @throws ApplicationFailure `NotFoundError` (order missing), `OrderClosedError` (already final),
     *   `OrderHaltedError` (halted or released) or `InsufficientStockError` with `StockShortage[]` as details;
     *   all non-retryable, and the transaction leaves no partial reservation.
     */
    async reserveInventory(input: ReserveInventoryInput): Promise<ReserveInventoryResult> {
      const { orderId } = input;
      const status = OrderStatus.InventoryReserved;
      const rank = statusRank(status);
      return db.$transaction(async (tx) => {
        // Fast path: lock, check and status write in one statement (undone with the rest if a line is short).
        // The order's lines never change after it was placed, so reading them in the same statement is safe. A
        // release movement is written only together with the tombstone (releaseInventory), which the UPDATE
        // re-checks on the newest row; the NOT EXISTS guards the rule itself.
        const fast = await writeStatusOfOpenOrder<{ lines: Array<{ sku: string; quantity: number }> | null }>(
          tx,
          orderId,
          status,
          rank,
          Prisma.sql`(SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity) ORDER BY l.sku)
                      FROM order_lines l WHERE l.order_id = orders.id) AS lines`,
          Prisma.sql`NOT EXISTS (SELECT 1 FROM inventory_movements m
                                 WHERE m.order_id = ${orderId}::uuid AND m.reason = 'release')`,
        );
        let lines = fast?.lines ?? [];
        if (!fast) {
          await lockOrderForForwardStep(tx, orderId, 'reserveInventory');
          const [released] = await tx.$queryRaw<Array<{ any: boolean }>>`
            SELECT EXISTS (SELECT 1 FROM inventory_movements WHERE order_id = ${orderId}::uuid AND reason = 'release') AS any`;
          if (released!.any) throw halted(orderId, 'reserveInventory', 'its reservation was released');
          lines = await tx.$queryRaw<Array<{ sku: string; quantity: number }>>`
            SELECT sku, quantity FROM order_lines WHERE order_id = ${orderId}::uuid ORDER BY sku`;
        }
        if (lines.length === 0) throw notFound('order', orderId);
        const movements: MovementOutcome[] = [];
        const shortages: StockShortage[] = [];
        for (const line of lines) {
          const id = `reserve:${orderId}:${line.sku}`;
          const [applied] = await tx.$queryRaw<Array<{ inserted: boolean; updated: boolean }>>`
            WITH moved AS (
              INSERT INTO inventory_movements (id, sku, order_id, reason, on_hand_delta, reserved_delta)
              VALUES (${id}, ${line.sku}, ${orderId}::uuid, 'reservation', 0, ${line.quantity})
              ON CONFLICT (id) DO NOTHING
              RETURNING 1),
            reserved AS (
              UPDATE products SET reserved = reserved + ${line.quantity}, updated_at = now()
              WHERE sku = ${line.sku} AND on_hand - reserved >= ${line.quantity} AND EXISTS (SELECT 1 FROM moved)
              RETURNING 1)
            SELECT EXISTS (SELECT 1 FROM moved) AS inserted, EXISTS (SELECT 1 FROM reserved) AS updated`;
          if (!applied!.inserted) {
            movements.push({ id, sku: line.sku, quantity: line.quantity, applied: false });
            continue;
          }
          if (!applied!.updated) {
            const [product] = await tx.$queryRaw<Array<{ available: number }>>`
              SELECT on_hand - reserved AS available FROM products WHERE sku = ${line.sku}`;
            shortages.push({ sku: line.sku, requested: line.quantity, available: product?.available ?? 0 });
          }
          movements.push({ id, sku: line.sku, quantity: line.quantity, applied: true });
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
        if (!fast) await writeOrderStatus(tx, orderId, status, rank);
        return { orderId, movements };
      });
    },

    /**
     * Compensation of reserveInventory: for each `reserve:<orderId>:<sku>` movement, records
     * `release:<orderId>:<sku>` with the opposite quantity and `reserved -= quantity`. Releases only
     * what was reserved and not shipped; a second run finds the release movements and changes nothing.
     * Sets the order's tombstone (`halted_at`) first, under the order-row lock, so a late attempt of
     * reserveInventory can never reserve again after this ran.
     * @throws ApplicationFailure `NotFoundError` when the order does not exist.
     */
    async releaseInventory(input: ReleaseInventoryInput): Promise<ReleaseInventoryResult> {
      const { orderId } = input;
      return db.$transaction(async (tx) => {
        await lockOrder(tx, orderId);
        await markHalted(tx, orderId, 'compensating');
        const reservations = await tx.$queryRaw<Array<{ sku: string; reservedDelta: number }>>`
          SELECT sku, reserved_delta AS "reservedDelta" FROM inventory_movements
          WHERE order_id = ${orderId}::uuid AND reason = 'reservation' ORDER BY sku`;
        const shipped = new Set(
          (
            await tx.$queryRaw<Array<{ sku: string }>>`
              SELECT sku FROM inventory_movements WHERE order_id = ${orderId}::uuid AND reason = 'shipment'`
          ).map((m) => m.sku),
        );
        const movements: MovementOutcome[] = [];
        for (const r of reservations) {
          if (shipped.has(r.sku)) continue;
          const id = `release:${orderId}:${r.sku}`;
          const inserted = await tx.$executeRaw`
            INSERT INTO inventory_movements (id, sku, order_id, reason, on_hand_delta, reserved_delta)
            VALUES (${id}, ${r.sku}, ${orderId}::uuid, 'release', 0, ${-r.reservedDelta})
            ON CONFLICT (id) DO NOTHING`;
          if (inserted === 1) {
            await tx.$executeRaw`
              UPDATE products SET reserved = reserved - ${r.reservedDelta}, updated_at = now()
              WHERE sku = ${r.sku}`;
          }
          movements.push({ id, sku: r.sku, quantity: -r.reservedDelta, applied: inserted === 1 });
        }
        return { orderId, movements };
      });
    },
  };
}
