/**
 * Asks the warehouse to pick and pack the order (after the confirmation, before the hand-over to the carrier). The
 * warehouse reports back once the parcel is packed (the awaitPacking step waits for it). Key `pick:<orderId>`; its
 * compensation cancels the pick request (`pick-cancel:<orderId>`), which the warehouse refuses once picking started:
 * a cancel during the wait then answers 409 with the warehouse's reason (awaitPacking's `cancelFirst`).
 */
import { warehouse } from '../../providers/warehouse.provider.js';
import { requestPick as entry } from '../catalogue/steps.js';
import { defineProviderCompensation, defineProviderStep } from '../kit/define.js';

/** The idempotency key of an order's pick request (its catalogue entry's). */
export const pickKey = entry.key;

/** The idempotency key of the cancel of an order's pick request. */
export function pickCancelKey(orderId: string): string {
  return `pick-cancel:${orderId}`;
}

/** The pick request (its metadata: the catalogue entry), and what it does. */
export const requestPick = defineProviderStep({
  ...entry,
  provider: warehouse,
  operation: 'createPick',
  /** The order's lines, by SKU, and our reference (the order id: the warehouse reports packed under it). */
  request: ({ orderId, order }) => ({
    reference: orderId,
    lines: order.lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
  }),
  compensation: defineProviderCompensation({
    ...entry.compensation,
    provider: warehouse,
    operation: 'cancelPick',
    key: pickCancelKey,
    request: ({ forward }) => ({ pickId: forward.providerId }),
  }),
});
