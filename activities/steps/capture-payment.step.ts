/**
 * Captures the authorized amount right after the hand-over to the carrier (after the pivot: a failure waits for an
 * operator, and a retry captures with the same key `payment-capture:<orderId>`). Card orders only (`when`). The
 * amount is the order's total, which is what authorizePayment authorized. The `payments` row becomes `captured` with
 * the captured amount (absolute values).
 */
import { payments } from '../../providers/payments.provider.js';
import { capturePayment as entry } from '../catalogue/steps.js';
import { defineProviderStep } from '../kit/define.js';
import { authorizePayment } from './authorize-payment.step.js';

/** The idempotency key of the capture of an order's payment (its catalogue entry's). */
export const paymentCaptureKey = entry.key;

/** The capture (its metadata: the catalogue entry), and what it does. */
export const capturePayment = defineProviderStep({
  ...entry,
  provider: payments,
  operation: 'capture',
  /**
   * The authorization authorizePayment recorded and the order's total (the authorized amount).
   * @throws ApplicationFailure `RecordNotFoundError` when the order has no authorization.
   */
  request: async ({ order, answers }) => ({
    paymentId: await answers.providerId(authorizePayment),
    amountMinor: order.totalMinor,
  }),
  /** The payment `captured` with the captured amount. */
  async record({ orderId, tx, request }) {
    await tx.$executeRaw`
      UPDATE payments SET status = 'captured', captured_minor = ${request.amountMinor},
                          captured_at = COALESCE(captured_at, now())
      WHERE order_id = ${orderId}::uuid`;
  },
});
