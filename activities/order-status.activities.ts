/**
 * Order status writes. The status is written as an absolute value together with its step number
 * (ORDER_STATUS_STEP); a write whose step is lower than the stored one is ignored, so a late retry of
 * an earlier step never moves an order backwards.
 */
import { ORDER_STATUS_STEP, type OrderStatus } from '../workflows/order-fulfilment.contract.js';
import { notFound } from './failures.js';
import type { Db } from './ports.js';

/** Input of setOrderStatus. */
export interface SetOrderStatusInput {
  orderId: string;
  status: OrderStatus;
  /** Why the order failed; only with status `failed` (max 1000 chars are stored). */
  failureReason?: string;
}

/** Result of setOrderStatus: `applied` is false when a later status was already stored. */
export interface SetOrderStatusResult {
  applied: boolean;
}

/** Builds the status activity over the database port. */
export function createOrderStatusActivities(db: Db) {
  return {
    /**
     * Sets `orders.status` to `status` if its step is >= the stored step. Sets `completed_at` on
     * `completed`.
     * @throws ApplicationFailure `NotFoundError` (non-retryable) when the order does not exist.
     */
    async setOrderStatus(input: SetOrderStatusInput): Promise<SetOrderStatusResult> {
      const step = ORDER_STATUS_STEP[input.status];
      const reason = input.failureReason?.slice(0, 1000) ?? null;
      const updated = await db.$executeRaw`
        UPDATE orders
        SET status = ${input.status}, status_step = ${step}, failure_reason = ${reason},
            completed_at = CASE WHEN ${input.status} = 'completed' THEN coalesce(completed_at, now()) ELSE completed_at END,
            updated_at = now()
        WHERE id = ${input.orderId}::uuid AND status_step <= ${step}`;
      if (updated === 1) return { applied: true };
      const exists = await db.order.count({ where: { id: input.orderId } });
      if (exists === 0) throw notFound('order', input.orderId);
      return { applied: false };
    },
  };
}
