/**
 * Shipping: the carrier creates one shipment per order, by claim-first, act-second (see side-effect-claims.ts)
 * and the carrier's `Idempotency-Key` de-duplication; the shipment is then recorded in one transaction with the
 * claim's completion, the `ship:<orderId>:<sku>` movements (which consume the reservation: `on_hand` and
 * `reserved` both go down) and the `shipped` status.
 */
import { log } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { Prisma } from '../prisma/generated/client.js';
import { ErrorType } from '../workflows/errors.js';
import { OrderStatus, statusRank } from '../workflows/order-fulfilment.contract.js';
import { notFound, rethrowProviderError } from './failures.js';
import {
  cancellationRequested,
  currentClaimOwner,
  halted,
  lockOrderForForwardStep,
  orderStatusUpdate,
  withHeartbeats,
} from './order-guards.js';
import type { ActivitySettings, CarrierProvider, Db, ShipmentRequest, ShipmentResult } from './ports.js';
import { ProviderError } from './provider-error.js';
import {
  claimNewSideEffectOfOpenOrder,
  claimSideEffect,
  markSideEffectNotPerformed,
  type ClaimOwner,
  type PriorClaimStatus,
} from './side-effect-claims.js';

/** Input of shipOrder. */
export interface ShipOrderInput {
  orderId: string;
}

/** Result of shipOrder. */
export interface ShipOrderResult {
  /** The carrier's shipment id, e.g. `shp_...`. */
  shipmentId: string;
  /** The carrier's tracking number, e.g. `1Z...`. */
  trackingNumber: string;
  /** `shipment:<orderId>`: the claim key and the `Idempotency-Key` sent to the carrier. */
  idempotencyKey: string;
  /**
   * True when this run recorded the shipment (row, movements, status); false when an earlier or concurrent run
   * had already recorded it. The carrier call of a run that records may have been a replay of an earlier
   * attempt's: the carrier never creates a second shipment for the key either way.
   */
  shippedNow: boolean;
}

/** Claim kind of a shipment (`side_effect_claims.kind`). */
export const SHIPMENT_CLAIM_KIND = 'shipment';

/** The idempotency key of an order's shipment: the claim key and the carrier's `Idempotency-Key`. */
export function shipmentKey(orderId: string): string {
  return `shipment:${orderId}`;
}

/** The id of the movement that consumes an order line's reservation when it ships. */
export function shipMovementId(orderId: string, sku: string): string {
  return `ship:${orderId}:${sku}`;
}

/** The order as shipOrder reads it: one statement (lines in line order, the recorded shipment if any). */
interface ShippingOrderRow {
  customer_email: string;
  customer_name: string | null;
  carrier_id: string | null;
  tracking_number: string | null;
  lines: Array<{ sku: string; quantity: number }> | null;
}

/** Builds the shipping activity over the database and carrier ports. */
export function createShippingActivities(db: Db, carrier: CarrierProvider, settings: ActivitySettings) {
  /**
   * Calls the carrier with `key`, heartbeating every second meanwhile (the call itself is never cut short). When
   * this run owns the claim and the carrier definitely did not act, the claim is marked `failed` (taken again by
   * the next attempt, or tombstoned by a halt).
   * @throws ApplicationFailure via rethrowProviderError (details `{ status, mayHaveActed }`).
   */
  async function createShipment(
    request: ShipmentRequest,
    key: string,
    owned?: { owner: ClaimOwner; prior: PriorClaimStatus },
  ): Promise<ShipmentResult> {
    try {
      return await withHeartbeats(() => carrier.createShipment(request, key));
    } catch (err) {
      if (owned && err instanceof ProviderError && !err.mayHaveActed) {
        await markSideEffectNotPerformed(db, key, owned.owner, owned.prior);
      }
      return rethrowProviderError(err, 'carrier');
    }
  }

  /**
   * Records the carrier's shipment in one transaction: the claim `sent` with the shipment id, the `shipments`
   * row, one `ship:<orderId>:<sku>` movement per line (`on_hand -= q`, `reserved -= q`, applied only when the
   * movement is new) and the `shipped` status (writeOrderStatus: never lowering a higher rank). Lines go in SKU
   * order, like the reservation, so concurrent transactions lock products in one order.
   * @returns the recorded shipment, `shippedNow` false when another run had recorded it first.
   * @throws ApplicationFailure `ValidationError` (non-retryable) when less than a line's quantity is reserved.
   */
  async function recordShipment(
    orderId: string,
    key: string,
    lines: Array<{ sku: string; quantity: number }>,
    shipment: ShipmentResult,
  ): Promise<ShipOrderResult> {
    const status = OrderStatus.Shipped;
    return db.$transaction(async (tx) => {
      // The claim's completion, the shipment row and (when this run inserted that row) the status, in one
      // statement. It locks the order row first (FOR NO KEY UPDATE, before the claim row: the order claimants
      // take them in, so a concurrent claim waits instead of deadlocking), and before the products, in the order
      // reserveInventory and releaseInventory lock them.
      const [recorded] = await tx.$queryRaw<Array<{ claimed_id: string | null; inserted: boolean }>>`
        WITH done AS (
          UPDATE side_effect_claims SET status = 'sent', provider_id = ${shipment.shipmentId}, completed_at = now()
          WHERE key = ${key} AND status IN ('sending', 'failed')
            AND (SELECT count(*) FROM (
                   SELECT 1 FROM orders WHERE id = ${orderId}::uuid FOR NO KEY UPDATE) AS locked) >= 0
          RETURNING provider_id),
        inserted AS (
          INSERT INTO shipments (order_id, carrier_id, tracking_number)
          VALUES (${orderId}::uuid, ${shipment.shipmentId}, ${shipment.trackingNumber})
          ON CONFLICT (order_id) DO NOTHING
          RETURNING 1),
        shipped AS (${orderStatusUpdate(orderId, status, statusRank(status), Prisma.sql`EXISTS (SELECT 1 FROM inserted)`)})
        SELECT coalesce((SELECT provider_id FROM done),
                        (SELECT provider_id FROM side_effect_claims WHERE key = ${key})) AS claimed_id,
               EXISTS (SELECT 1 FROM inserted) AS inserted`;
      const claimedId = recorded!.claimed_id ?? shipment.shipmentId;
      if (claimedId !== shipment.shipmentId) {
        log.warn('the shipment claim holds another carrier id than the carrier returned', {
          key,
          claimedId,
          shipmentId: shipment.shipmentId,
        });
      }
      if (!recorded!.inserted) {
        const [row] = await tx.$queryRaw<Array<{ carrierId: string; trackingNumber: string }>>`
          SELECT carrier_id AS "carrierId", tracking_number AS "trackingNumber" FROM shipments
          WHERE order_id = ${orderId}::uuid`;
        if (!row) throw new Error(`shipment of order ${orderId} not found after its insert conflicted`);
        return {
          shipmentId: row.carrierId,
          trackingNumber: row.trackingNumber,
          idempotencyKey: key,
          shippedNow: false,
        };
      }
      for (const line of [...lines].sort((a, b) => (a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0))) {
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
          // Rolls the whole transaction back; the claim stays `sending` (the carrier acted) for a later retry.
          throw ApplicationFailure.nonRetryable(
            `cannot ship ${line.quantity} x ${line.sku} of order ${orderId}: less than that is reserved`,
            ErrorType.Validation,
          );
        }
      }
      return { ...shipment, idempotencyKey: key, shippedNow: true };
    });
  }

  return {
    /**
     * Ships the order: under the order-row lock (refusing a final or halted order), claim `shipment:<orderId>`
     * (kind `shipment`); ask the carrier for a shipment with that key as `Idempotency-Key`, heartbeating during
     * the call; then record it (see the module docstring). A recorded shipment is returned as it is, without a
     * lock or a call; a claim that is `sent` without its record (the run that sent it died before recording)
     * asks the carrier again with the same key, which replays its answer.
     *
     * Cancellation (delivered through heartbeats): before the carrier is called, the activity stops and never
     * calls it; once the call is under way it finishes, and a success is recorded and reported.
     * @throws ApplicationFailure `NotFoundError` (order missing), `OrderClosedError` (the order is final and has
     *   no shipment), `OrderHaltedError` (halted, or the claim is a tombstone; the carrier is not called),
     *   `ProviderRejectedError` or `UnauthorizedError` (permanent; the claim is marked `failed`),
     *   `ValidationError` (less stock reserved than a line ships), all non-retryable; `ProviderUnavailableError`
     *   or `ClaimInProgressError` (transient, retried; details `{ status, mayHaveActed }` for the former);
     *   `CancelledFailure` when cancelled before the call.
     */
    async shipOrder(input: ShipOrderInput): Promise<ShipOrderResult> {
      const { orderId } = input;
      const key = shipmentKey(orderId);
      const [order] = await db.$queryRaw<ShippingOrderRow[]>`
        SELECT o.customer_email, o.customer_name, s.carrier_id, s.tracking_number,
               (SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity) ORDER BY l.line_no)
                FROM order_lines l WHERE l.order_id = o.id) AS lines
        FROM orders o LEFT JOIN shipments s ON s.order_id = o.id
        WHERE o.id = ${orderId}::uuid`;
      if (!order) throw notFound('order', orderId);
      if (order.carrier_id !== null && order.tracking_number !== null) {
        return {
          shipmentId: order.carrier_id,
          trackingNumber: order.tracking_number,
          idempotencyKey: key,
          shippedNow: false,
        };
      }
      const lines = order.lines ?? [];
      // Built only from stored, immutable fields: every attempt sends the identical body for the key.
      const request: ShipmentRequest = {
        reference: orderId,
        recipient: {
          email: order.customer_email,
          ...(order.customer_name === null ? {} : { name: order.customer_name }),
        },
        items: lines,
      };

      if (cancellationRequested()) throw new CancelledFailure('cancelled before the shipment was claimed');

      const owner = currentClaimOwner();
      // The order row's lock is the one a halt takes before it tombstones claims.
      const claim =
        (await claimNewSideEffectOfOpenOrder(db, orderId, { key, kind: SHIPMENT_CLAIM_KIND, owner })) ??
        (await db.$transaction(async (tx) => {
          await lockOrderForForwardStep(tx, orderId, 'shipOrder');
          return claimSideEffect(tx, { key, kind: SHIPMENT_CLAIM_KIND, owner, leaseMs: settings.claimLeaseMs });
        }));
      if (claim.state === 'cancelled') throw halted(orderId, 'shipOrder', 'the shipment is cancelled');
      if (claim.state === 'done') {
        const [row] = await db.$queryRaw<Array<{ carrierId: string; trackingNumber: string }>>`
          SELECT carrier_id AS "carrierId", tracking_number AS "trackingNumber" FROM shipments
          WHERE order_id = ${orderId}::uuid`;
        if (row) {
          return {
            shipmentId: row.carrierId,
            trackingNumber: row.trackingNumber,
            idempotencyKey: key,
            shippedNow: false,
          };
        }
        log.warn('shipment claimed as sent but not recorded: asking the carrier again with the same key', { key });
        return recordShipment(orderId, key, lines, await createShipment(request, key));
      }
      if (claim.how !== 'new') {
        log.info('sending the claimed shipment with the same idempotency key', {
          key,
          how: claim.how,
          prior: claim.prior,
        });
      }
      if (cancellationRequested()) {
        await markSideEffectNotPerformed(db, key, owner, claim.prior);
        throw new CancelledFailure('cancelled before the carrier was called');
      }
      const shipment = await createShipment(request, key, { owner, prior: claim.prior });
      return recordShipment(orderId, key, lines, shipment);
    },
  };
}
