/**
 * Waits for the warehouse to report the order packed (`POST /orders/:id/packed`, the `reportPacked` Update): an event
 * step, bounded by `WAREHOUSE_PACK_TIMEOUT` (the order then waits for an operator in `attention_required`; a retry
 * waits again). A cancel during the wait first asks the warehouse to cancel the pick (requestPick's compensation): its
 * refusal (picking started) refuses the cancel. The report is recorded in `order_events` with the status `packed`.
 * A card order's wait also stops `WAREHOUSE_PACK_DEADLINE_MARGIN` before its payment authorization's capture deadline
 * (the `deadline` hook): the order then waits for an operator instead of shipping on an expiring hold.
 */
import { awaitPacking as entry } from '../catalogue/steps.js';
import { defineEventStep } from '../kit/define.js';

export { DEFAULT_PACK_DEADLINE_MARGIN_MS, DEFAULT_PACK_TIMEOUT_MS } from '../catalogue/steps.js';

/** The wait (its metadata: the catalogue entry), and its deadline. */
export const awaitPacking = defineEventStep({
  ...entry,
  /**
   * The capture deadline of the order's payment authorization while it is held (card orders): the wait stops the
   * margin before it, so an order never ships on an expired authorization. Null for an order paid on account.
   */
  async deadline({ db, orderId }) {
    const [row] = await db.$queryRaw<Array<{ capture_before: Date | null }>>`
      SELECT capture_before FROM payments WHERE order_id = ${orderId}::uuid AND status = 'authorized'`;
    return row?.capture_before ? row.capture_before.toISOString() : null;
  },
});
