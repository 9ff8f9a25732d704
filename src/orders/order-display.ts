/**
 * How an order reads in the Temporal UI (user metadata, https://docs.temporal.io/workflows#user-metadata), built
 * when the order is placed and set by the starter on its workflow: the static summary, one line a person scans
 * (`Order 1a2b3c4d · Ada Lovelace · 2 lines · 39.98 EUR`; also the `OrderSummary` search attribute, a column of the
 * workflow list), and the static details, Markdown: the lines, the total, and links to the order in the API and to
 * the page.
 *
 * Personal data (docs/operations.md, "What the Temporal UI shows"): the customer's name (the UI is an operator's
 * tool) and the email address masked (`a…@example.com`), never in full, also in the `OrderSummary` search attribute
 * (the name, or the masked address when the order has none); `CustomerId` is a keyed hash.
 * Text a customer or an operator controls (names, SKUs, the client id) goes through workflows/display-text.ts: in the
 * Markdown escaped (it shows as its characters, never as Markdown, HTML or a link), everywhere without invisible
 * characters that could reorder the line, and a right-to-left name isolated.
 */
import { formatMinor, maskEmail } from '../../activities/catalogue/index.js';
import { displayText, escapeMarkdown } from '../../workflows/display-text.js';

/** What the display reads of an order. */
export interface DisplayedOrder {
  id: string;
  clientId: string;
  customerEmail: string;
  customerName: string | null;
  currency: string;
  /** Minor units. */
  totalMinor: number;
  lines: Array<{ sku: string; quantity: number; unitPriceMinor: number }>;
}

/**
 * `text` as a code span when it is a plain identifier (a client id: `a-z 0-9 . _ -`), else as escaped text: a code
 * span shows its content literally, so an escape inside it would show as a backslash.
 */
function codeOrText(text: string): string {
  return /^[\w.-]+$/.test(text) ? `\`${text}\`` : escapeMarkdown(text);
}

/** The most characters of a summary (the UI shows one line); a long name is cut so the figures stay. */
const SUMMARY_MAX = 120;

/**
 * The order's summary and details.
 * @param publicUrl the API's public base URL (`PUBLIC_URL`); without it the links are paths.
 */
export function orderDisplay(
  order: DisplayedOrder,
  publicUrl?: string,
): { summary: string; plainSummary: string; details: string } {
  const lineCount = `${order.lines.length} ${order.lines.length === 1 ? 'line' : 'lines'}`;
  const total = formatMinor(order.totalMinor, order.currency);
  const line = (who: string) => `Order ${order.id.slice(0, 8)} · ${who} · ${lineCount} · ${total}`;
  const name = order.customerName ?? maskEmail(order.customerEmail);
  const who = displayText(name, Math.max(SUMMARY_MAX - line('').length, 8));
  const plainSummary = line(who);
  // Only the name is the customer's: the rest (short id, count, total) is ours and has nothing to escape.
  const summary = line(escapeMarkdown(who));
  const base = publicUrl?.replace(/\/+$/, '') ?? '';
  const details = [
    `**Order** \`${order.id}\` for ${escapeMarkdown(displayText(name))} ` +
      `(${escapeMarkdown(maskEmail(order.customerEmail))}), client ${codeOrText(order.clientId)}`,
    '',
    '| SKU | Quantity | Unit price |',
    '| --- | ---: | ---: |',
    ...order.lines.map(
      (l) =>
        `| ${escapeMarkdown(l.sku)} | ${l.quantity} | ${escapeMarkdown(formatMinor(l.unitPriceMinor, order.currency))} |`,
    ),
    '',
    `**Total**: ${escapeMarkdown(total)}`,
    '',
    `[The order in the API](${base}/orders/${order.id}) · [The web page](${base || '/'}${base ? '/' : ''})`,
  ].join('\n');
  return { summary, plainSummary, details };
}
