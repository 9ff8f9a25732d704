/**
 * Captures the authorized amount right after the hand-over to the carrier (after the pivot: a failure waits for an
 * operator, and a retry captures with the same key `payment-capture:<orderId>`). Card orders only (`when`). The
 * amount is the order's total, which is what authorizePayment authorized. The `payments` row becomes `captured` with
 * the captured amount (absolute values).
 */
import { payments } from '../../providers/payments.provider.js';
import { defineProviderStep, StepPhase } from '../kit/define.js';
import { formatMinor } from '../kit/text.js';
import { authorizePayment } from './authorize-payment.step.js';

/** The idempotency key of the capture of an order's payment. */
export function paymentCaptureKey(orderId: string): string {
  return `payment-capture:${orderId}`;
}

export const capturePayment = defineProviderStep({
  name: 'capturePayment',
  phase: StepPhase.AfterPivot,
  status: 'payment_captured',
  label: 'Payment captured',
  description: 'Captures the authorized amount once the parcel was handed to the carrier; card orders only.',
  when: (order) => Boolean(order.payment),
  provider: payments,
  operation: 'capture',
  key: paymentCaptureKey,
  summary: (order) => `capture of ${formatMinor(order.totalMinor, order.currency)}`,
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
