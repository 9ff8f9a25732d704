/**
 * Asks the warehouse to pick and pack the order (after the confirmation, before the hand-over to the carrier). The
 * warehouse reports back once the parcel is packed (the awaitPacking step waits for it). Key `pick:<orderId>`; its
 * compensation cancels the pick request (`pick-cancel:<orderId>`), which the warehouse refuses once picking started:
 * a cancel during the wait then answers 409 with the warehouse's reason (awaitPacking's `cancelFirst`).
 */
import { warehouse } from '../../providers/warehouse.provider.js';
import { defineProviderCompensation, defineProviderStep, StepPhase } from '../kit/define.js';

/** The idempotency key of an order's pick request. */
export function pickKey(orderId: string): string {
  return `pick:${orderId}`;
}

/** The idempotency key of the cancel of an order's pick request. */
export function pickCancelKey(orderId: string): string {
  return `pick-cancel:${orderId}`;
}

export const requestPick = defineProviderStep({
  name: 'requestPick',
  phase: StepPhase.BeforePivot,
  status: 'pick_requested',
  label: 'Pick requested',
  description: 'Asks the warehouse to pick and pack the order; it reports back once packed.',
  provider: warehouse,
  operation: 'createPick',
  key: pickKey,
  summary: (order) => `pick request of ${order.lines.reduce((n, l) => n + l.quantity, 0)} items`,
  /** The order's lines, by SKU, and our reference (the order id: the warehouse reports packed under it). */
  request: ({ orderId, order }) => ({
    reference: orderId,
    lines: order.lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
  }),
  compensation: defineProviderCompensation({
    name: 'cancelPick',
    description: 'Cancels the pick request (refused once the warehouse started picking).',
    provider: warehouse,
    operation: 'cancelPick',
    key: pickCancelKey,
    request: ({ forward }) => ({ pickId: forward.providerId }),
  }),
});
