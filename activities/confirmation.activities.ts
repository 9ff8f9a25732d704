/**
 * The order confirmation email, sent at most once per order by claim-first, act-second
 * (see side-effect-claims.ts) and the provider's `Idempotency-Key` de-duplication.
 */
import { activityInfo, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { notFound, rethrowProviderError } from './failures.js';
import type { ActivitySettings, Db, EmailMessage, EmailProvider } from './ports.js';
import { claimSideEffect, completeSideEffect, releaseSideEffect, type ClaimOwner } from './side-effect-claims.js';

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

/** The current activity execution as a claim owner. */
export function currentClaimOwner(): ClaimOwner {
  const info = activityInfo();
  const workflowId = info.workflowExecution?.workflowId ?? 'standalone';
  return { execution: `${workflowId}/${info.activityId}`, attempt: info.attempt };
}

/** Builds the confirmation activity over the database and email ports. */
export function createConfirmationActivities(db: Db, email: EmailProvider, settings: ActivitySettings) {
  return {
    /**
     * Sends the order confirmation: claim `order-confirmation:<orderId>`, call the provider with that
     * key as `Idempotency-Key`, then mark the claim sent with the provider's message id.
     * @throws ApplicationFailure `NotFoundError` (order or invoice missing), `ProviderRejectedError` or
     *   `UnauthorizedError` (permanent; the claim is released), `ProviderUnavailableError` or
     *   `ClaimInProgressError` (transient, retried).
     */
    async sendOrderConfirmation(input: SendOrderConfirmationInput): Promise<SendOrderConfirmationResult> {
      const { orderId } = input;
      const key = orderConfirmationKey(orderId);
      const order = await db.order.findUnique({
        where: { id: orderId },
        include: { lines: { orderBy: { lineNo: 'asc' }, include: { product: true } }, invoice: true },
      });
      if (!order) throw notFound('order', orderId);
      if (!order.invoice) throw notFound('invoice of order', orderId);

      const owner = currentClaimOwner();
      const claim = await claimSideEffect(db, { key, kind: 'email', owner, leaseMs: settings.claimLeaseMs });
      if (claim.state === 'done') return { messageId: claim.providerId, idempotencyKey: key, sentNow: false };
      if (claim.how !== 'new')
        log.info('re-sending claimed email with the same idempotency key', { key, how: claim.how });

      const lines = order.lines.map(
        (l) => `  ${l.quantity} x ${l.product.name} (${l.sku}) @ ${formatMinor(l.unitPriceMinor, order.currency)}`,
      );
      const message: EmailMessage = {
        to: order.customerEmail,
        subject: `Order confirmed: invoice ${order.invoice.number}`,
        text: [
          `Hello ${order.customerName ?? order.customerEmail},`,
          '',
          `Thank you for your order ${order.id}.`,
          ...lines,
          `Total: ${formatMinor(order.totalMinor, order.currency)}`,
          `Invoice: ${order.invoice.number}`,
        ].join('\n'),
        metadata: { orderId, invoiceNumber: order.invoice.number },
      };
      let messageId: string;
      try {
        ({ messageId } = await email.send(message, key));
      } catch (err) {
        try {
          rethrowProviderError(err, 'email provider');
        } catch (failure) {
          if (failure instanceof ApplicationFailure && failure.nonRetryable) await releaseSideEffect(db, key, owner);
          throw failure;
        }
      }
      const stored = await completeSideEffect(db, key, messageId);
      return { messageId: stored, idempotencyKey: key, sentNow: true };
    },
  };
}
