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
  phase: StepPhase.Pivot,
  status: 'confirmation_sent',
  label: 'Confirmation sent',
  description: 'Emails the order confirmation with its invoice number: the point of no return.',
  provider: email,
  operation: 'send',
  key: orderConfirmationKey,
  summary: (order) => `confirmation to ${maskEmail(order.customerEmail)}`,
  /** The email, from the stored order: its lines with the products' names, the total and the invoice number. */
  async request({ orderId, db }) {
    const [order] = await db.$queryRaw<
      Array<{
        customer_email: string;
        customer_name: string | null;
        currency: string;
        total_minor: number;
        invoice_number: string | null;
        lines: Array<{ sku: string; quantity: number; unitPriceMinor: number; name: string }> | null;
      }>
    >`
      SELECT o.customer_email, o.customer_name, o.currency, o.total_minor, i.number AS invoice_number,
             (SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity,
                                                'unitPriceMinor', l.unit_price_minor, 'name', p.name)
                              ORDER BY l.line_no)
              FROM order_lines l JOIN products p ON p.sku = l.sku WHERE l.order_id = o.id) AS lines
      FROM orders o LEFT JOIN invoices i ON i.order_id = o.id
      WHERE o.id = ${orderId}::uuid`;
    if (!order) throw notFound('order', orderId);
    if (order.invoice_number === null) throw notFound('invoice of order', orderId);
    const lines = (order.lines ?? []).map(
      (l) => `  ${l.quantity} x ${displayText(l.name)} (${l.sku}) @ ${formatMinor(l.unitPriceMinor, order.currency)}`,
    );
    return {
      to: order.customer_email,
      subject: `Order confirmed: invoice ${order.invoice_number}`,
      text: [
        `Hello ${displayText(order.customer_name ?? order.customer_email)},`,
        '',
        `Thank you for your order ${orderId}.`,
        ...lines,
        `Total: ${formatMinor(order.total_minor, order.currency)}`,
        `Invoice: ${order.invoice_number}`,
      ].join('\n'),
      metadata: { orderId, invoiceNumber: order.invoice_number },
    };
  },
});
