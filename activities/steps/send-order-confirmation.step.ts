/**
 * Send the order confirmation email: the pivot, the point of no return. Once the customer holds a confirmation,
 * nothing compensates: a later step that fails for good waits for an operator. Key `order-confirmation:<orderId>`.
 */
import { email } from '../../providers/email.provider.js';
import { defineProviderStep, StepPhase } from '../kit/define.js';
import { notFound } from '../kit/failures.js';
import { displayText, formatMinor, maskEmail } from '../kit/text.js';

/** The idempotency key of an order's confirmation email. */
export function orderConfirmationKey(orderId: string): string {
  return `order-confirmation:${orderId}`;
}

export const sendOrderConfirmation = defineProviderStep({
  name: 'sendOrderConfirmation',
  phase: StepPhase.BeforePivot,
  status: 'confirmation_sent',
  label: 'Confirmation sent',
  description: 'Emails the order confirmation with its invoice number: the point of no return.',
  provider: email,
  operation: 'send',
  key: orderConfirmationKey,
  summary: (order) => `confirmation to ${maskEmail(order.customerEmail)}`,
  /** The email, from the stored order: its lines with the products' names, the total and the invoice number. */
  request: ({ orderId, order }) => {
    if (order.invoice === null) throw notFound('invoice of order', orderId);
    const money = (minor: number) => formatMinor(minor, order.currency);
    const name = displayText(order.customerName ?? order.customerEmail);
    const items = order.lines.map(
      (l) => `  ${l.quantity} x ${displayText(l.name)} (${l.sku}) @ ${money(l.unitPriceMinor)}`,
    );
    const { number } = order.invoice;
    const text = [`Hello ${name},`, '', `Thank you for your order ${orderId}.`, ...items];
    return {
      to: order.customerEmail,
      subject: `Order confirmed: invoice ${number}`,
      text: [...text, `Total: ${money(order.totalMinor)}`, `Invoice: ${number}`].join('\n'),
      metadata: { orderId, invoiceNumber: number },
    };
  },
});
