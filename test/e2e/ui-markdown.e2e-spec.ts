/**
 * Customer text through the Temporal UI's own Markdown renderer (issue 21, finding 1): the UI server's `/render`
 * route (gomarkdown with autolinks, tables, MathJax, SmartyPants and raw HTML; the dev server's UI, which the global
 * setup starts), called directly over HTTP. Property: any text, hostile tokens mixed in (Markdown, HTML, bare URLs,
 * e-mail autolinks, entities, fractions, math, bidi controls), escaped with escapeMarkdown, renders as one paragraph
 * of plain text that reads as the text itself (SmartyPants' curly quotes aside): no element, no link, no image, no
 * backslash. The order's summary, details and a waiting order's cause render the same way with the issue's names.
 * The browser test (temporal-ui.e2e-spec.ts) shows the same on the UI's pages.
 */
import fc from 'fast-check';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { buildPlan } from '../../activities/catalogue/plan.js';
import { STEPS } from '../../activities/index.js';
import { orderDisplay, type DisplayedOrder } from '../../src/orders/order-display.js';
import { escapeMarkdown, plainLine } from '../../workflows/display-text.js';
import { describeWait } from '../../workflows/order-details.js';

let ui: string;

beforeAll(() => {
  ui = inject('temporalUiUrl');
  expect(ui, 'a Temporal UI (the global setup starts the dev server with one)').toMatch(/^http/);
});

/** The HTML inside `<main>` of the UI's rendering of `markdown`, trimmed. */
async function render(markdown: string): Promise<string> {
  const res = await fetch(`${ui}/render?content=${encodeURIComponent(markdown)}`);
  expect(res.status).toBe(200);
  const html = await res.text();
  const main = /<main>([\s\S]*)<\/main>/.exec(html);
  expect(main, html).not.toBeNull();
  return main![1]!.trim();
}

/** Entities gomarkdown writes for text, and SmartyPants' quotes as the straight ones they were. */
const ENTITIES: Record<string, string> = {
  '&amp;': '&',
  '&lt;': '<',
  '&gt;': '>',
  '&quot;': '"',
  '&#39;': "'",
  '&lsquo;': "'",
  '&rsquo;': "'",
  '&ldquo;': '"',
  '&rdquo;': '"',
};

/** The text of one rendered paragraph of plain text, or null when the HTML is anything else (an element inside). */
function paragraphText(html: string): string | null {
  if (html === '') return '';
  const p = /^<p>([^<]*)<\/p>$/.exec(html);
  if (!p) return null;
  return p[1]!.replace(/&(?:amp|lt|gt|quot|#39|[lr][sd]quo);/g, (e) => ENTITIES[e]!);
}

/**
 * Curly quotes as straight ones: SmartyPants curls straight quotes, so a rendered curly quote may have been either;
 * applied to both sides of a comparison (a name may hold curly quotes of its own).
 */
const straightQuotes = (text: string) => text.replace(/[‘’]/g, "'").replace(/[“”]/g, '"');

/** Pieces of text with a meaning to the UI's renderer (or to a reader's eye). */
const HOSTILE = [
  '**bold**',
  '__u__',
  '_i_',
  '*',
  '[link](http://x)',
  '![img](http://x/a.png)',
  'http://x',
  'HTTPS://evil.example/a.png',
  'ftp://f.example',
  'file:///etc/passwd',
  'mailto:ada@example.com',
  '<ada@example.com>',
  'ada@example.com',
  'www.example.com',
  '<img src=x onerror=alert(1)>',
  '<b>',
  '</p>',
  '<!-- c -->',
  '&amp;',
  '&#47;',
  '&copy;',
  '&',
  '1/2',
  '3/4',
  '1⁄2',
  '--',
  '---',
  '...',
  '(c)',
  '(tm)',
  '$x$',
  '$$',
  '^sup^',
  '~~del~~',
  '~sub~',
  '`code`',
  '```',
  '# ',
  '> ',
  '- ',
  '+ ',
  '1. ',
  '|',
  ' | a | ',
  ': ',
  '\\',
  '\\*',
  '{#id}',
  '[^1]',
  "O'Brien",
  "O''Brien ''",
  '"quoted"',
  '‘curly’ “quotes”',
  '\n',
  '\t',
  '  ',
  '\u202e',
  '\u2066',
  '\u200b',
  'שרה',
  'عليّ',
  'Ada',
];

const hostileText = fc
  .array(fc.oneof(fc.constantFrom(...HOSTILE), fc.string({ maxLength: 6, unit: 'grapheme' })), { maxLength: 10 })
  .map((parts) => parts.join(''));

describe("escapeMarkdown in the Temporal UI's renderer", () => {
  it('renders any text as one paragraph that reads as the text itself', async () => {
    await fc.assert(
      fc.asyncProperty(hostileText, async (text) => {
        const html = await render(escapeMarkdown(text));
        const shown = paragraphText(html);
        expect(shown, `${JSON.stringify(text)} rendered as ${html}`).not.toBeNull();
        expect(straightQuotes(shown!)).toBe(straightQuotes(plainLine(text)));
      }),
      { numRuns: 400 },
    );
  });

  it.each(HOSTILE.filter((t) => t.trim()))('%j alone renders as itself', async (text) => {
    const html = await render(escapeMarkdown(text));
    expect(straightQuotes(paragraphText(html) ?? html)).toBe(straightQuotes(plainLine(text)));
  });
});

const order = (customerName: string): DisplayedOrder => ({
  id: '1a2b3c4d-0000-4000-8000-000000000042',
  clientId: 'shop-eu',
  customerEmail: '_ada@example.com',
  customerName,
  currency: 'EUR',
  totalMinor: 4350,
  lines: [{ sku: 'MUG-WHT', quantity: 3, unitPriceMinor: 1450 }],
});

/** The names of the issue, and more of their kind. */
const NAMES = [
  '**bold** [link](http://x) <img src=x onerror=alert(1)>',
  '![p](http://e.example/p.png) https://e.example/p mailto:a@e.example <a@e.example>',
  'Ada \u202eRUE 00.1 · senil 1',
  'Ada 1/2 -- (c) ... $x$ ^up^ ~~out~~ `c` | x |',
];

describe("an order's user metadata in the Temporal UI's renderer", () => {
  it.each(NAMES)('%j: the summary is plain text, the name as typed (invisible characters removed)', async (name) => {
    const display = orderDisplay(order(name));
    const shown = paragraphText(await render(display.summary));
    expect(shown).not.toBeNull();
    expect(shown).toBe(display.plainSummary);
    expect(display.plainSummary).toBe(`Order 1a2b3c4d · ${plainLine(name)} · 1 line · 43.50 EUR`);
  });

  it.each(NAMES)('%j: the details have our two links and table, nothing of the name', async (name) => {
    const html = await render(orderDisplay(order(name), 'https://orders.example.com').details);
    expect(html.match(/<a /g)).toHaveLength(2);
    expect(html).toContain('<a href="https://orders.example.com/orders/1a2b3c4d-0000-4000-8000-000000000042"');
    expect(html).not.toMatch(/<img|<em|<del|<sup|<sub|<span|<script|<h\d/);
    expect(html.match(/<strong>/g)).toHaveLength(2); // "Order" and "Total", ours
    expect(html).toContain('<td>MUG-WHT</td>');
    expect(html).toContain('_…@example.com');
    expect(html).not.toContain('\\');
  });

  it('a waiting order shows the cause as text', async () => {
    const plan = buildPlan(STEPS, {
      orderId: order('').id,
      customerEmail: '_ada@example.com',
      customerName: null,
      currency: 'EUR',
      totalMinor: 4350,
      lines: [{ sku: 'MUG-WHT', quantity: 3 }],
    });
    const ship = plan.steps.find((s) => s.name === 'shipOrder')!;
    const html = await render(describeWait(order('').id, ship, 'the carrier refused it', NAMES.join(' '), false));
    expect(html).not.toMatch(/<a |<img|<em|<del|<sup|<sub|<span|<script/);
    expect(html).not.toContain('\\');
    expect(html).not.toContain('\u202e');
  });
});
