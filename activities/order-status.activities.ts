/**
 * Order status writes the workflow makes on its own (the forward steps write theirs in their own
 * transactions): `attention_required`, `failed` and `cancelled`. The status is written as an absolute value
 * with its rank (statusRank in the workflow contract); a write whose rank is lower than the stored one is
 * ignored, so a late retry never moves an order backwards.
 */
import {
  OrderStatus,
  OrderStep,
  statusRank,
  type OrderStatus as OrderStatusValue,
  type OrderStep as OrderStepValue,
} from '../workflows/order-fulfilment.contract.js';
import { notFound } from './failures.js';
import { writeOrderStatus } from './order-guards.js';
import type { Db } from './ports.js';

/** Input of setOrderStatus. */
export interface SetOrderStatusInput {
  orderId: string;
  status: OrderStatusValue;
  /** Why the order failed, was cancelled or needs attention (max 1000 chars are stored). */
  failureReason?: string;
  /**
   * With `attention_required`: the step that waits (sets its rank). Default `syncInvoiceToAccounting`, the
   * only step that waited in the first workflow version.
   */
  step?: OrderStepValue;
}

/** Result of setOrderStatus: `applied` is false when a later status was already stored. */
export interface SetOrderStatusResult {
  applied: boolean;
}

/** Builds the status activity over the database port. */
export function createOrderStatusActivities(db: Db) {
  return {
    /**
     * Sets `orders.status` to `status` if its rank is above the stored one (or equal with the same status).
     * Sets `completed_at` on `completed` (database clock).
     * @throws ApplicationFailure `NotFoundError` (non-retryable) when the order does not exist.
     */
    async setOrderStatus(input: SetOrderStatusInput): Promise<SetOrderStatusResult> {
      const step =
        input.status === OrderStatus.AttentionRequired ? (input.step ?? OrderStep.SyncInvoiceToAccounting) : undefined;
      const rank = statusRank(input.status, step);
      const applied = await writeOrderStatus(db, input.orderId, input.status, rank, input.failureReason ?? null);
      if (applied) return { applied: true };
      const [order] = await db.$queryRaw<Array<{ exists: boolean }>>`
        SELECT EXISTS (SELECT 1 FROM orders WHERE id = ${input.orderId}::uuid) AS exists`;
      if (!order!.exists) throw notFound('order', input.orderId);
      return { applied: false };
    },
  };
}
