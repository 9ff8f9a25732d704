/**
 * Waits for the warehouse to report the order packed (`POST /orders/:id/packed`, the `reportPacked` Update): an event
 * step, bounded by `WAREHOUSE_PACK_TIMEOUT` (the order then waits for an operator in `attention_required`; a retry
 * waits again). A cancel during the wait first asks the warehouse to cancel the pick (requestPick's compensation): its
 * refusal (picking started) refuses the cancel. The report is recorded in `order_events` with the status `packed`.
 * A card order's wait also stops `WAREHOUSE_PACK_DEADLINE_MARGIN` before its payment authorization's capture deadline
 * (the `deadline` hook): the order then waits for an operator instead of shipping on an expiring hold.
 */
import { defineEventStep, StepPhase } from '../kit/define.js';

/** Default bound of the wait for the warehouse, ms (4 h; configuration: `WAREHOUSE_PACK_TIMEOUT`). */
export const DEFAULT_PACK_TIMEOUT_MS = 4 * 3_600_000;
/** Default margin before a deadline (e.g. the payment authorization's), ms (configuration: `WAREHOUSE_PACK_DEADLINE_MARGIN`). */
export const DEFAULT_PACK_DEADLINE_MARGIN_MS = 10 * 60_000;

export const awaitPacking = defineEventStep({
  name: 'awaitPacking',
  phase: StepPhase.BeforePivot,
  status: 'packed',
  label: 'Packed',
  description: 'Waits (bounded) for the warehouse to report the order packed; the report is recorded.',
  event: {
    name: 'packed',
    timeoutMs: DEFAULT_PACK_TIMEOUT_MS,
    marginMs: DEFAULT_PACK_DEADLINE_MARGIN_MS,
    timeoutSetting: 'WAREHOUSE_PACK_TIMEOUT',
    cancelFirst: 'requestPick',
  },
  summary: () => 'waits for the warehouse to report the order packed',
  /**
   * The capture deadline of the order's payment authorization while it is held (card orders): the wait stops the
   * margin before it, so an order never ships on an expired authorization. Null for an order paid on account.
   */
  async deadline({ db, orderId }) {
    const [row] = await db.$queryRaw<Array<{ capture_before: Date | null }>>`
      SELECT capture_before FROM payments WHERE order_id = ${orderId}::uuid AND status = 'authorized'`;
    return row?.capture_before ? row.capture_before.toISOString() : null;
  },
  deadlineWhat: 'the payment authorization expires',
});
