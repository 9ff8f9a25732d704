/**
 * Waits for the warehouse to report the order packed (`POST /orders/:id/packed`, the `reportPacked` Update): an event
 * step, bounded by `WAREHOUSE_PACK_TIMEOUT` (the order then waits for an operator in `attention_required`; a retry
 * waits again). A cancel during the wait first asks the warehouse to cancel the pick (requestPick's compensation): its
 * refusal (picking started) refuses the cancel. The report is recorded in `order_events` with the status `packed`.
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
});
