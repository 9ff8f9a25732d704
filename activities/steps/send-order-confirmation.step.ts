/**
 * Send the order confirmation email (key `order-confirmation:<orderId>`): an ordinary step before the pivot (the
 * hand-over to the carrier). An order cancelled or failed after it went out is compensated by a cancellation notice,
 * sendCancellationNotice (key `order-cancellation:<orderId>`); the kit calls it only when the confirmation's claim is
 * `sent`, so a customer who never got a confirmation gets no notice either.
 */
import { email } from '../../providers/email.provider.js';
import { sendOrderConfirmation as entry } from '../catalogue/steps.js';
import { displayText, formatMinor } from '../catalogue/text.js';
import { defineProviderCompensation, defineProviderStep } from '../kit/define.js';
import type { StepOrder } from '../kit/define.js';
import { notFound } from '../kit/failures.js';

/** The idempotency key of an order's confirmation email (its catalogue entry's). */
export const orderConfirmationKey = entry.key;

/** The idempotency key of an order's cancellation notice (the compensation of its confirmation). */
export function orderCancellationKey(orderId: string): string {
  return `order-cancellation:${orderId}`;
}

/** The customer's name as the emails greet them: the name given, else the address. */
function greeting(order: StepOrder): string {
  return displayText(order.customerName ?? order.customerEmail);
}

/**
 * The cancellation notice: tells the customer who holds a confirmation that the order is cancelled, naming the order
 * and its invoice number. Customer-safe: no internal reason (a cancel's or a failure's) is shown, only that nothing
 * will ship and the invoice is void.
 */
export const sendCancellationNotice = defineProviderCompensation({
  ...entry.compensation,
  provider: email,
  operation: 'send',
  key: orderCancellationKey,
  /** The email, from the stored order: a confirmation went out, so the order has an invoice (void by now, or soon). */
  request: ({ orderId, order }) => {
    const number = order.invoice?.number ?? null;
    const text = [
      `Hello ${greeting(order)},`,
      '',
      `Your order ${orderId} has been cancelled: nothing will be shipped.`,
      ...(number === null ? [] : [`Invoice ${number} is void.`]),
      'If you have any questions, reply to this email.',
    ];
    return {
      to: order.customerEmail,
      subject: number === null ? `Order cancelled: ${orderId}` : `Order cancelled: invoice ${number}`,
      text: text.join('\n'),
      metadata: number === null ? { orderId } : { orderId, invoiceNumber: number },
    };
  },
});

/** The confirmation (its metadata: the catalogue entry), and what it does. */
export const sendOrderConfirmation = defineProviderStep({
  ...entry,
  provider: email,
  operation: 'send',
  /** The email, from the stored order: its lines with the products' names, the total and the invoice number. */
  request: ({ orderId, order }) => {
    if (order.invoice === null) throw notFound('invoice of order', orderId);
    const money = (minor: number) => formatMinor(minor, order.currency);
    const name = greeting(order);
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
  compensation: sendCancellationNotice,
});
