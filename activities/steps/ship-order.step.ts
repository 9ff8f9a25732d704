/**
 * Ship the order: the pivot, the point of no return (the hand-over to the carrier). Once the carrier accepted the
 * shipment nothing compensates: a later step that fails for good waits for an operator, and a cancel is refused. The
 * carrier creates one shipment per order (key `shipment:<orderId>`), recorded with the claim in
 * one transaction: the `shipments` row, one `ship:<orderId>:<sku>` movement per line (consuming the reservation:
 * `on_hand` and `reserved` both go down) and the `shipped` status.
 *
 * A card order ships only on a held authorization with at least {@link MIN_HOLD_TO_SHIP_MS} left before its capture
 * deadline (the precondition, checked before each carrier call that no earlier call may have made): e.g. when an
 * operator's retry came after awaitPacking stopped for the deadline. Otherwise nothing is shipped and the order fails
 * `payment_expired`, compensated (stock released, invoice and authorization voided, the customer told).
 */
import { ApplicationFailure } from '@temporalio/common';
import { carrier } from '../../providers/carrier.provider.js';
import { ErrorType } from '../../workflows/errors.js';
import { shipOrder as entry } from '../catalogue/steps.js';
import { defineProviderStep } from '../kit/define.js';
import type { SqlQueries } from '../ports.js';

/** The idempotency key of an order's shipment: the claim key and the carrier's `Idempotency-Key` (its entry's). */
export const shipmentKey = entry.key;

/** The id of the movement that consumes an order line's reservation when it ships. */
export function shipMovementId(orderId: string, sku: string): string {
  return `ship:${orderId}:${sku}`;
}

/**
 * How long a card's authorization must still be held when the order ships, ms (5 min): the shipment and the capture
 * right after it need seconds, and this leaves their first retries (providerCall: 2, 4, 8, 16, 32 s) room.
 */
export const MIN_HOLD_TO_SHIP_MS = 5 * 60_000;

/**
 * Why a card order must not ship now (`authorization_not_held`: its `payments` row is not `authorized`, e.g. voided;
 * `authorization_expiring`: less than {@link MIN_HOLD_TO_SHIP_MS} left), or null: it may (also for an order on
 * account, and for a card order without a `payments` row: a registry whose steps record none).
 */
export async function holdToShip(
  db: SqlQueries,
  orderId: string,
  card: boolean,
  now = Date.now(),
): Promise<string | null> {
  if (!card) return null;
  const [row] = await db.$queryRaw<Array<{ status: string; capture_before: Date | null }>>`
    SELECT status, capture_before FROM payments WHERE order_id = ${orderId}::uuid`;
  if (row === undefined) return null; // no authorization recorded: a registry without authorizePayment
  if (row.status !== 'authorized') return 'authorization_not_held';
  if (row.capture_before && row.capture_before.getTime() - now < MIN_HOLD_TO_SHIP_MS) return 'authorization_expiring';
  return null;
}

/** The hand-over to the carrier (its metadata: the catalogue entry), and what it does. */
export const shipOrder = defineProviderStep({
  ...entry,
  provider: carrier,
  operation: 'createShipment',
  precondition: {
    ...entry.precondition!,
    check: ({ db, orderId, order }) => holdToShip(db, orderId, order.payment !== null),
  },
  /** Who receives which items, from the stored order only: every attempt sends the identical body. */
  request: ({ orderId, order }) => ({
    reference: orderId,
    recipient: { email: order.customerEmail, ...(order.customerName === null ? {} : { name: order.customerName }) },
    items: order.lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
  }),
  /**
   * The carrier's answer recorded: its shipment and the lines' movements ({@link recordShipment}).
   * @throws as {@link recordShipment}: the claim then stays `sending` (the carrier acted) for an operator.
   */
  record: ({ orderId, tx, request, answer }) =>
    recordShipment(
      tx,
      orderId,
      { carrierId: answer.response.id, trackingNumber: answer.response.trackingNumber },
      request.items,
    ),
  /**
   * Shipped by hand (resolved `performed`): what the carrier's answer would have recorded, the `shipments` row
   * (carrier id: the operator's `providerId`, else `resolved:<resolution id>`; tracking number
   * `resolved:<resolution id>`, as no carrier gave one) and the `ship:<orderId>:<sku>` movements of the order's lines.
   * @throws as {@link recordShipment}: the resolution is then not recorded.
   */
  performedByHand: ({ orderId, tx, order, resolution }) =>
    recordShipment(
      tx,
      orderId,
      { carrierId: resolution.providerId ?? `resolved:${resolution.id}`, trackingNumber: `resolved:${resolution.id}` },
      order.lines,
    ),
});

/**
 * Records an order's shipment: the `shipments` row and, when this run inserted it, one movement per line in SKU order
 * (the order reserve and release lock products in), applied only when the movement is new: `on_hand` and `reserved`
 * both go down by the line's quantity. Idempotent: a second run inserts nothing and changes nothing.
 * @throws ApplicationFailure `ValidationError` (non-retryable) when less than a line's quantity is reserved: the
 *   transaction rolls back (for the carrier's answer the claim stays `sending`, the carrier acted, for an operator).
 */
export async function recordShipment(
  tx: SqlQueries,
  orderId: string,
  shipment: { carrierId: string; trackingNumber: string },
  items: ReadonlyArray<{ sku: string; quantity: number }>,
): Promise<void> {
  const [inserted] = await tx.$queryRaw<Array<{ inserted: boolean }>>`
    WITH inserted AS (
      INSERT INTO shipments (order_id, carrier_id, tracking_number)
      VALUES (${orderId}::uuid, ${shipment.carrierId}, ${shipment.trackingNumber})
      ON CONFLICT (order_id) DO NOTHING
      RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM inserted) AS inserted`;
  if (!inserted!.inserted) return;
  for (const line of [...items].sort((a, b) => (a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0))) {
    const id = shipMovementId(orderId, line.sku);
    const [applied] = await tx.$queryRaw<Array<{ inserted: boolean; updated: boolean }>>`
      WITH moved AS (
        INSERT INTO inventory_movements (id, sku, order_id, reason, on_hand_delta, reserved_delta)
        VALUES (${id}, ${line.sku}, ${orderId}::uuid, 'shipment', ${-line.quantity}, ${-line.quantity})
        ON CONFLICT (id) DO NOTHING
        RETURNING 1),
      consumed AS (
        UPDATE products
        SET on_hand = on_hand - ${line.quantity}, reserved = reserved - ${line.quantity}, updated_at = now()
        WHERE sku = ${line.sku} AND reserved >= ${line.quantity} AND EXISTS (SELECT 1 FROM moved)
        RETURNING 1)
      SELECT EXISTS (SELECT 1 FROM moved) AS inserted, EXISTS (SELECT 1 FROM consumed) AS updated`;
    if (applied!.inserted && !applied!.updated) {
      throw ApplicationFailure.nonRetryable(
        `cannot ship ${line.quantity} x ${line.sku} of order ${orderId}: less than that is reserved`,
        ErrorType.Validation,
      );
    }
  }
}
