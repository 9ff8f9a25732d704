/**
 * The order confirmation email, sent at most once per order by claim-first, act-second
 * (see side-effect-claims.ts) and the provider's `Idempotency-Key` de-duplication, and the halt that
 * fences it: the confirmation is the pivot, so before compensating, the workflow makes sure it was not sent
 * and never will be.
 */
import { log } from '@temporalio/activity';
import { CancelledFailure } from '@temporalio/common';
import { OrderStatus, statusRank } from '../workflows/order-fulfilment.contract.js';
import { notFound, rethrowProviderError } from './failures.js';
import {
  cancellationRequested,
  currentClaimOwner,
  halted,
  lockOrder,
  lockOrderForForwardStep,
  markHalted,
  orderStatusUpdate,
  withHeartbeats,
  writeOrderStatus,
} from './order-guards.js';
import type { ActivitySettings, Db, EmailMessage, EmailProvider } from './ports.js';
import { ProviderError } from './provider-error.js';
import {
  claimNewSideEffectOfOpenOrder,
  claimSideEffect,
  completeSideEffect,
  markSideEffectNotPerformed,
  tombstoneSideEffect,
} from './side-effect-claims.js';

/** Input of sendOrderConfirmation. */
export interface SendOrderConfirmationInput {
  orderId: string;
}

/** Result of sendOrderConfirmation. */
export interface SendOrderConfirmationResult {
  /** The provider's message id. */
  messageId: string;
  /** `order-confirmation:<orderId>`: the claim key and the `Idempotency-Key` sent to the provider. */
  idempotencyKey: string;
  /** False when an earlier run had already sent it (nothing was called this time). */
  sentNow: boolean;
}

/** The idempotency key of an order's confirmation email. */
export function orderConfirmationKey(orderId: string): string {
  return `order-confirmation:${orderId}`;
}

/** Formats integer minor units for display, e.g. (1999, 'EUR') → `19.99 EUR`. Exact: no floats. */
export function formatMinor(amountMinor: number, currency: string): string {
  const sign = amountMinor < 0 ? '-' : '';
  const abs = Math.abs(amountMinor);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')} ${currency}`;
}

/** Input of haltOrder. */
export interface HaltOrderInput {
  orderId: string;
  /** Why the order stops (the cancel reason or the failure), stored in `orders.halt_reason`. */
  reason: string;
}

/**
 * Result of haltOrder:
 * - `halted`: the confirmation was not sent and now never will be (tombstone); the order is halted, so
 *   compensating is safe.
 * - `sent`: the confirmation went out (past the pivot): nothing was changed, nothing may be compensated.
 * - `unknown`: a confirmation call is in flight or ended without a known outcome: nothing was changed.
 */
export type HaltOrderResult =
  { outcome: 'halted' } | { outcome: 'sent'; messageId: string } | { outcome: 'unknown'; claimOwner: string };

/** The order as the confirmation reads it: one statement (lines in line order, with the products' names). */
interface ConfirmationOrderRow {
  customer_email: string;
  customer_name: string | null;
  currency: string;
  total_minor: number;
  invoice_number: string | null;
  lines: Array<{ sku: string; quantity: number; unitPriceMinor: number; name: string }> | null;
}

/** Builds the confirmation activities over the database and email ports. */
export function createConfirmationActivities(db: Db, email: EmailProvider, settings: ActivitySettings) {
  return {
    /**
     * Sends the order confirmation: under the order-row lock (refusing a final or halted order), claim
     * `order-confirmation:<orderId>`; call the provider with that key as `Idempotency-Key` while heartbeating;
     * then, in one transaction, mark the claim sent with the provider's message id and set the order's status
     * to `confirmation_sent`.
     *
     * Cancellation (delivered through heartbeats): before the provider is called, the activity stops and
     * never calls it; once the call is under way it is not cut short (its outcome would become unknown): it
     * finishes, and a success is reported as a success.
     * @throws ApplicationFailure `NotFoundError` (order or invoice missing), `OrderClosedError`,
     *   `OrderHaltedError` (halted: the confirmation is tombstoned), `ProviderRejectedError` or
     *   `UnauthorizedError` (permanent), `ProviderUnavailableError` or `ClaimInProgressError` (transient; details
     *   `{ status, mayHaveActed }`); `CancelledFailure` when cancelled before the call.
     */
    async sendOrderConfirmation(input: SendOrderConfirmationInput): Promise<SendOrderConfirmationResult> {
      const { orderId } = input;
      const key = orderConfirmationKey(orderId);
      const [order] = await db.$queryRaw<ConfirmationOrderRow[]>`
        SELECT o.customer_email, o.customer_name, o.currency, o.total_minor, i.number AS invoice_number,
               (SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity,
                                                  'unitPriceMinor', l.unit_price_minor, 'name', p.name)
                                ORDER BY l.line_no)
                FROM order_lines l JOIN products p ON p.sku = l.sku WHERE l.order_id = o.id) AS lines
        FROM orders o LEFT JOIN invoices i ON i.order_id = o.id
        WHERE o.id = ${orderId}::uuid`;
      if (!order) throw notFound('order', orderId);
      if (order.invoice_number === null) throw notFound('invoice of order', orderId);
      const invoiceNumber = order.invoice_number;
      if (cancellationRequested()) throw new CancelledFailure('cancelled before the confirmation was claimed');

      const owner = currentClaimOwner();
      const rank = statusRank(OrderStatus.ConfirmationSent);
      const claim =
        (await claimNewSideEffectOfOpenOrder(db, orderId, { key, kind: 'email', owner })) ??
        (await db.$transaction(async (tx) => {
          await lockOrderForForwardStep(tx, orderId, 'sendOrderConfirmation');
          const outcome = await claimSideEffect(tx, { key, kind: 'email', owner, leaseMs: settings.claimLeaseMs });
          if (outcome.state === 'done') await writeOrderStatus(tx, orderId, OrderStatus.ConfirmationSent, rank);
          return outcome;
        }));
      if (claim.state === 'done') return { messageId: claim.providerId, idempotencyKey: key, sentNow: false };
      if (claim.state === 'cancelled') throw halted(orderId, 'sendOrderConfirmation', 'the confirmation is cancelled');
      if (claim.how !== 'new')
        log.info('sending the claimed email with the same idempotency key', {
          key,
          how: claim.how,
          prior: claim.prior,
        });
      if (cancellationRequested()) {
        await markSideEffectNotPerformed(db, key, owner, claim.prior);
        throw new CancelledFailure('cancelled before the email provider was called');
      }

      const lines = (order.lines ?? []).map(
        (l) => `  ${l.quantity} x ${l.name} (${l.sku}) @ ${formatMinor(l.unitPriceMinor, order.currency)}`,
      );
      const message: EmailMessage = {
        to: order.customer_email,
        subject: `Order confirmed: invoice ${invoiceNumber}`,
        text: [
          `Hello ${order.customer_name ?? order.customer_email},`,
          '',
          `Thank you for your order ${orderId}.`,
          ...lines,
          `Total: ${formatMinor(order.total_minor, order.currency)}`,
          `Invoice: ${invoiceNumber}`,
        ].join('\n'),
        metadata: { orderId, invoiceNumber },
      };
      let messageId: string;
      try {
        ({ messageId } = await withHeartbeats(() => email.send(message, key)));
      } catch (err) {
        // Definitely not performed: the claim may be taken again, and a halt may tombstone it. Otherwise the
        // claim stays `sending`: the provider may have acted, and only a retry with the same key can tell.
        if (err instanceof ProviderError && !err.mayHaveActed)
          await markSideEffectNotPerformed(db, key, owner, claim.prior);
        rethrowProviderError(err, 'email provider');
      }
      // The claim and the status in one statement: they commit together.
      const stored = await completeSideEffect(db, key, messageId, {
        orderId,
        alongside: orderStatusUpdate(orderId, OrderStatus.ConfirmationSent, rank),
      });
      return { messageId: stored, idempotencyKey: key, sentNow: true };
    },

    /**
     * The fence before any compensation: under the order-row lock (the lock sendOrderConfirmation claims
     * under), tombstones the confirmation claim unless it was sent or may have been, and if so marks the order
     * halted (`halted_at`, `halt_reason`) so no forward step acts any more. Idempotent.
     * @returns see {@link HaltOrderResult}.
     * @throws ApplicationFailure `NotFoundError` when the order does not exist.
     */
    async haltOrder(input: HaltOrderInput): Promise<HaltOrderResult> {
      const { orderId } = input;
      return db.$transaction(async (tx) => {
        await lockOrder(tx, orderId);
        const found = await tombstoneSideEffect(tx, orderConfirmationKey(orderId), 'email');
        if (found.effect === 'sent') return { outcome: 'sent', messageId: found.providerId };
        if (found.effect === 'unknown') return { outcome: 'unknown', claimOwner: found.owner };
        await markHalted(tx, orderId, input.reason);
        return { outcome: 'halted' };
      });
    },
  };
}
