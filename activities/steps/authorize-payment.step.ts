/**
 * Authorizes the order's total on the customer's card, FIRST (before anything is reserved): a hold at the payments
 * provider, captured at the hand-over to the carrier (capturePayment) or voided if the order is cancelled or fails
 * (its compensation, voidPayment). Only orders placed with `payment: { method }` have it (`when`); an order paid on
 * account has no card steps. Key `payment-authorization:<orderId>`; the void's `payment-void:<orderId>`.
 *
 * A decline (the provider's definite 402 `card-declined`) is the customer's business, not a fault: the payment is
 * recorded `declined` with its code and the order fails with the public failure `payment_declined` (nothing reserved,
 * invoiced or emailed: this step is first). The `payments` row holds absolute values, written with the claim.
 */
import { payments } from '../../providers/payments.provider.js';
import { authorizePayment as entry } from '../catalogue/steps.js';
import { defineProviderCompensation, defineProviderStep } from '../kit/define.js';
import { notFound } from '../kit/failures.js';

export { maskPaymentMethod } from '../catalogue/steps.js';

/** The idempotency key of an order's payment authorization (its catalogue entry's). */
export const paymentAuthorizationKey = entry.key;

/** The idempotency key of the void of an order's payment authorization. */
export function paymentVoidKey(orderId: string): string {
  return `payment-void:${orderId}`;
}

/** The authorization (its metadata: the catalogue entry), and what it does. */
export const authorizePayment = defineProviderStep({
  ...entry,
  provider: payments,
  operation: 'authorize',
  /**
   * The order's total and currency, its payment method and our reference (the order id).
   * @throws ApplicationFailure `RecordNotFoundError` when the order has no payment method (paid on account).
   */
  request: ({ orderId, order }) => {
    if (!order.payment) throw notFound('payment method of order', orderId);
    return {
      amountMinor: order.totalMinor,
      currency: order.currency,
      method: order.payment.method,
      reference: orderId,
    };
  },
  /** The authorization in `payments` (absolute values; a row already there is left as it is). */
  async record({ orderId, tx, answer }) {
    const { id, amountMinor, currency, captureBefore } = answer.response;
    await tx.$executeRaw`
      INSERT INTO payments (order_id, provider_payment_id, status, amount_minor, currency, capture_before, authorized_at)
      VALUES (${orderId}::uuid, ${id}, 'authorized', ${amountMinor}, ${currency}, ${captureBefore}::timestamptz, now())
      ON CONFLICT (order_id) DO NOTHING`;
  },
  refused: {
    ...entry.refused,
    /** The decline in `payments` (status `declined`, its code), once. */
    async record({ orderId, tx, reason }) {
      await tx.$executeRaw`
        INSERT INTO payments (order_id, status, amount_minor, currency, decline_code, declined_at)
        SELECT id, 'declined', total_minor, currency, ${reason}, now() FROM orders WHERE id = ${orderId}::uuid
        ON CONFLICT (order_id) DO NOTHING`;
    },
  },
  compensation: defineProviderCompensation({
    ...entry.compensation,
    provider: payments,
    operation: 'void',
    key: paymentVoidKey,
    request: ({ forward }) => ({ paymentId: forward.providerId }),
    /** The payment `voided`, its whole amount released (absolute values). */
    async record({ orderId, tx }) {
      await tx.$executeRaw`
        UPDATE payments SET status = 'voided', voided_minor = amount_minor, voided_at = COALESCE(voided_at, now())
        WHERE order_id = ${orderId}::uuid AND status IN ('authorized', 'voided')`;
    },
  }),
});
