/**
 * What a person reads in the Temporal UI: the static summary and details an order's workflow starts with
 * (src/orders/order-display.ts), the current details the workflow keeps (workflows/order-details.ts), and the text
 * helpers they use (activities/catalogue/text.ts). Personal data is masked; text from outside is escaped.
 */
import { describe, expect, it } from 'vitest';
import { currencyExponent, formatMinor, maskEmail } from '../../activities/catalogue/text.js';
import { buildPlan } from '../../activities/catalogue/plan.js';
import { SHIPPED_STEPS } from '../helpers/shipped-steps.js';
import { orderDisplay, type DisplayedOrder } from '../../src/orders/order-display.js';
import { describeWait, detailsOf, escapeMarkdown } from '../../workflows/order-details.js';

const order: DisplayedOrder = {
  id: '1a2b3c4d-0000-4000-8000-000000000042',
  clientId: 'shop-eu',
  customerEmail: 'ada.lovelace@example.com',
  customerName: 'Ada Lovelace',
  currency: 'EUR',
  totalMinor: 3998,
  lines: [
    { sku: 'WIDGET-1', quantity: 1, unitPriceMinor: 1999 },
    { sku: 'WIDGET-2', quantity: 1, unitPriceMinor: 1999 },
  ],
};

describe('money and personal data', () => {
  it('formats minor units with the currency exponent of ISO 4217, exactly', () => {
    expect(formatMinor(1999, 'EUR')).toBe('19.99 EUR');
    expect(formatMinor(5, 'EUR')).toBe('0.05 EUR');
    expect(formatMinor(-1999, 'EUR')).toBe('-19.99 EUR');
    expect(formatMinor(1999, 'JPY')).toBe('1999 JPY');
    expect(formatMinor(1999, 'BHD')).toBe('1.999 BHD');
    expect(formatMinor(Number.MAX_SAFE_INTEGER, 'EUR')).toBe('90071992547409.91 EUR');
    expect(currencyExponent('XXZ')).toBe(2);
  });

  it('masks an email address to its first character and domain', () => {
    expect(maskEmail('ada.lovelace@example.com')).toBe('a…@example.com');
    expect(maskEmail('not-an-address')).toBe('…');
  });
});

describe('static summary and details', () => {
  it('summarises the order in one line: short id, customer, lines, total', () => {
    const { summary, plainSummary } = orderDisplay(order);
    expect(plainSummary).toBe('Order 1a2b3c4d · Ada Lovelace · 2 lines · 39.98 EUR');
    expect(summary).toBe(plainSummary);
  });

  it('shows a customer without a name by the masked address, never the full one', () => {
    const { summary, plainSummary, details } = orderDisplay({ ...order, customerName: null });
    expect(plainSummary).toContain('a…@example.com');
    expect(summary).toContain('a…@example\\.com');
    expect(summary + details).not.toContain('ada.lovelace');
  });

  it('escapes Markdown and HTML a customer controls, and keeps the summary to one line', () => {
    const { summary, plainSummary, details } = orderDisplay(
      { ...order, customerName: '<img src=x onerror=alert(1)> **Ada**\n# [me](http://evil)' },
      'https://orders.example.com/',
    );
    expect(summary).not.toMatch(/(^|[^\\])[<*[\]#]/);
    expect(summary).not.toContain('\n');
    expect(plainSummary).toContain('<img'); // the search attribute is plain text, not Markdown
    expect(details).toContain('\\<img src=x onerror=alert\\(1\\)\\> \\*\\*Ada\\*\\* \\# \\[me\\]\\(http\\://evil\\)');
    expect(details).toContain(`[The order in the API](https://orders.example.com/orders/${order.id})`);
    expect(details).toContain('[The web page](https://orders.example.com/)');
  });

  it('cuts a long name so the summary keeps 120 characters and its figures', () => {
    const { summary, plainSummary, details } = orderDisplay({ ...order, customerName: 'A'.repeat(300) });
    expect(plainSummary.length).toBe(120);
    expect(plainSummary).toMatch(/^Order 1a2b3c4d · A+… · 2 lines · 39\.98 EUR$/);
    expect(summary).toBe(plainSummary);
    expect(details).toContain('A'.repeat(300));
  });

  it('shows a name with bidi controls as its characters in their order, everywhere (issue 21)', () => {
    const { summary, plainSummary, details } = orderDisplay({ ...order, customerName: 'Ada \u202eRUE 00.1 · senil 1' });
    expect(plainSummary).toBe('Order 1a2b3c4d · Ada RUE 00.1 · senil 1 · 2 lines · 39.98 EUR');
    expect(summary).toBe('Order 1a2b3c4d · Ada RUE 00\\.1 · senil 1 · 2 lines · 39.98 EUR');
    expect(details).not.toContain('\u202e');
  });

  it('isolates a right-to-left name, so the count and total keep their places', () => {
    const { plainSummary } = orderDisplay({ ...order, customerName: 'שרה כהן' });
    expect(plainSummary).toBe('Order 1a2b3c4d · \u2068שרה כהן\u2069 · 2 lines · 39.98 EUR');
  });

  it('lists every line with its unit price, and the total', () => {
    const { details } = orderDisplay(order);
    expect(details).toContain('| WIDGET\\-2 | 1 | 19\\.99 EUR |');
    expect(details).toContain('**Total**: 39\\.98 EUR');
  });
});

describe('current details', () => {
  const plan = buildPlan(SHIPPED_STEPS, {
    orderId: order.id,
    customerEmail: order.customerEmail,
    customerName: order.customerName,
    currency: order.currency,
    totalMinor: order.totalMinor,
    lines: order.lines,
  });

  it('gives every step a summary in words, without the customer address', () => {
    const summaries = Object.fromEntries(plan.steps.map((s) => [s.name, s.summary]));
    expect(summaries).toMatchObject({
      reserveInventory: 'reserve 2 units of 2 SKUs',
      createInvoice: 'invoice of 39.98 EUR',
      sendOrderConfirmation: 'confirmation to a…@example.com',
    });
    expect(JSON.stringify(summaries)).not.toContain('ada.lovelace');
  });

  it('says what runs now and checks off what is done, the pivot marked', () => {
    const text = detailsOf({
      orderId: order.id,
      plan,
      run: 1,
      now: null,
      state: {
        status: 'invoiced',
        currentStep: 'sendOrderConfirmation',
        completedSteps: ['reserveInventory', 'createInvoice'],
        pivotPassed: false,
        attention: null,
      },
    });
    expect(text.split('\n')[0]).toBe(
      `**Running** \`sendOrderConfirmation\`: confirmation to a…@example\\.com (step 3 of ${plan.steps.length})`,
    );
    expect(text).toContain('- [x] `createInvoice`');
    expect(text).toContain('- [ ] `sendOrderConfirmation`: confirmation to a…@example\\.com (running)');
    expect(text).toContain('- [ ] `shipOrder`: shipment of 2 items (point of no return)');
    expect(text).toContain(`\`GET /orders/${order.id}\``);
  });

  it('tells an operator why an order waits and how to retry, the provider message escaped', () => {
    const ship = plan.steps.find((s) => s.name === 'shipOrder')!;
    const text = describeWait(
      order.id,
      ship,
      'the carrier provider did not answer (HTTP 503)',
      '<b>down</b> *now*',
      true,
    );
    expect(text).toContain('**Waiting for an operator** at `shipOrder`');
    expect(text).toContain('the carrier provider did not answer (HTTP 503).');
    expect(text).toContain('same Idempotency-Key');
    expect(text).toContain(`POST /orders/${order.id}/retry`);
    expect(text).toContain('Cause: \\<b\\>down\\</b\\> \\*now\\*');
  });

  it('escapes every Markdown character that means something inside a line', () => {
    expect(escapeMarkdown('a_b`c|d~e{f}g&h\\i')).toBe('a\\_b\\`c\\|d\\~e\\{f\\}g\\&h\\\\i');
  });
});
