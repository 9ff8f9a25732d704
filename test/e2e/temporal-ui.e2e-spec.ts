/**
 * What a person sees of an order in the Temporal UI (the UI the stack runs: the dev server's own, 2.42), in headless
 * Chromium against the real stack: the workflow list shows each order's summary (the `OrderSummary` search attribute
 * column, as docs/operations.md tells an operator to add it) and status; an order's User Metadata tab shows the
 * summary, the details and the current details, rendered from escaped Markdown (a customer's `<b>` stays text); an
 * order waiting for an operator says what it waits for and how to retry, and says it is completed after the retry.
 * Hostile names (issue 21): Markdown, HTML, bare URLs and e-mail autolinks never render as a link, an image or markup;
 * a name with a bidi override reads as its characters in their order (glyphs sorted by where the browser draws them)
 * in the summary, the list and the confirmation email; an activity's summary, plain text in the UI, shows no escapes.
 * Screenshots: `artifacts/temporal-ui-list.png`, `artifacts/temporal-ui-attention.png` (gitignored).
 *
 * Chromium: `CHROMIUM_PATH`, default `/usr/bin/chromium`. Without it the suite is skipped, except in CI (`CI=true`),
 * where it fails (as the web page's test, test/e2e/web-page.e2e-spec.ts).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type FrameLocator, type Locator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { OrderPlan } from '../../workflows/order-plan.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/order-fulfilment.contract.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const HAVE_CHROMIUM = existsSync(CHROMIUM);
const ARTIFACTS = fileURLToPath(new URL('../../artifacts/', import.meta.url));
const NAMESPACE = 'default';

let stack: TestStack;
let browser: Browser;
let page: Page;
let ui: string;
let completedId: string;
let waitingId: string;

/** The names (issue 21): Markdown, HTML, bare URLs and e-mail autolinks, and a bidi override. */
const HOSTILE = {
  markup: { name: '**bold** [link](http://x) <img src=x onerror=alert(1)>', email: '_ada@example.com' },
  links: {
    name: '![p](http://e.example/p.png) https://e.example/p mailto:a@e.example <a@e.example>',
    email: 'b@example.com',
  },
  bidi: { name: 'Ada \u202eRUE 00.1 · senil 1', email: 'c@example.com' },
} as const;
const hostileIds: Record<keyof typeof HOSTILE, string> = { markup: '', links: '', bidi: '' };

/**
 * The text of `element` as a person reads it: its glyphs in the order the browser draws them (top to bottom, left to
 * right), whitespace left out. Text reordered by a bidi override reads reversed here, whatever its logical order.
 */
async function visualText(element: Locator): Promise<string> {
  return element.evaluate((root) => {
    const glyphs: Array<{ ch: string; x: number; y: number }> = [];
    const walker = root.ownerDocument.createTreeWalker(root, 4 /* NodeFilter.SHOW_TEXT */);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent ?? '';
      for (let i = 0; i < text.length; i++) {
        if (/\s/.test(text[i]!)) continue;
        const range = root.ownerDocument.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rect = range.getBoundingClientRect();
        if (rect.width > 0) glyphs.push({ ch: text[i]!, x: rect.left, y: Math.round(rect.top / 4) });
      }
    }
    glyphs.sort((a, b) => a.y - b.y || a.x - b.x);
    return glyphs.map((g) => g.ch).join('');
  });
}

const noSpaces = (text: string) => text.replace(/\s+/g, '');

/** Polls GET /orders/:id until its status is `status`. */
async function orderReaches(id: string, status: string, timeoutMs = 45_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await stack.ops.get(`/orders/${id}`).expect(200);
    if (res.body.status === status) return;
    if (Date.now() > deadline) throw new Error(`order ${id} is ${res.body.status}, not ${status}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * Opens an order's User Metadata tab until a panel shows `text`, and returns that panel. The UI renders each Markdown
 * text in its own `/render?content=<the Markdown>` iframe and re-renders them as the workflow changes, so a panel is
 * found by its content (a FrameLocator, which survives a re-render), not held as a Frame. The current details come
 * from a query the UI sends after the page loads; for a closed workflow a worker answers it by replaying the whole
 * history (seconds on a busy machine; the panel stays empty meanwhile), so each page load waits up to 10 s for the
 * panel before it reloads.
 */
async function metadataPanel(workflowId: string, text: string): Promise<FrameLocator> {
  const selector = `iframe[src^="/render"][src*="${encodeURIComponent(text)}"]`;
  const deadline = Date.now() + 45_000;
  for (;;) {
    await page.goto(`${ui}/namespaces/${NAMESPACE}/workflows/${workflowId}`);
    await page.getByRole('tab', { name: 'User Metadata' }).click();
    await page.locator('iframe[src^="/render"]').first().waitFor();
    const shown = await page
      .locator(selector)
      .first()
      .waitFor({ timeout: 10_000 })
      .then(() => true)
      .catch(() => false);
    if (shown) return page.frameLocator(selector).first();
    if (Date.now() > deadline) {
      const shown = await page
        .locator('iframe[src^="/render"]')
        .evaluateAll((els) => els.map((e) => decodeURIComponent(e.getAttribute('src') ?? '')));
      throw new Error(`no User Metadata panel of ${workflowId} shows "${text}"; they show:\n${shown.join('\n---\n')}`);
    }
    await page.waitForTimeout(500);
  }
}

describe.skipIf(!HAVE_CHROMIUM && process.env.CI !== 'true')('the Temporal UI in Chromium', () => {
  beforeAll(async () => {
    ui = inject('temporalUiUrl');
    expect(ui, 'a Temporal UI (the global setup starts the dev server with one)').toMatch(/^http/);
    stack = await startTestStack();

    const done = await stack.http
      .post('/orders')
      .send({
        customer: { email: 'ada.lovelace@example.com', name: 'Ada Lovelace' },
        lines: [
          { sku: 'MUG-WHT', quantity: 2 },
          { sku: 'TEE-BLK-M', quantity: 1 },
        ],
      })
      .expect(202);
    completedId = done.body.id;
    await orderReaches(completedId, 'completed');

    stack.accounting.injectFault({ mode: 'reject', times: 1 });
    const waiting = await stack.http
      .post('/orders')
      .send({
        customer: { email: 'grace.hopper@example.com', name: 'Grace <b>Hopper</b> *' },
        lines: [{ sku: 'TEE-BLK-M', quantity: 1 }],
      })
      .expect(202);
    waitingId = waiting.body.id;
    await orderReaches(waitingId, 'attention_required');

    for (const [kind, customer] of Object.entries(HOSTILE) as Array<[keyof typeof HOSTILE, (typeof HOSTILE)['bidi']]>) {
      const res = await stack.http
        .post('/orders')
        .send({ customer, lines: [{ sku: 'TEE-BLK-M', quantity: 1 }] })
        .expect(202);
      hostileIds[kind] = res.body.id;
    }
    for (const id of Object.values(hostileIds)) await orderReaches(id, 'completed');

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
    });
    page = await browser.newPage({ viewport: { width: 1600, height: 1100 } });
    // The columns an operator adds once with the list's column settings (docs/operations.md): the UI keeps them in
    // localStorage under this key, per namespace.
    const columns = ['Status', 'Workflow ID', 'OrderSummary', 'OrderStatus', 'Start', 'End'].map((label) => ({
      label,
    }));
    await page.addInitScript(
      `localStorage.setItem('namespace-workflow-table-columns', ${JSON.stringify(JSON.stringify({ [NAMESPACE]: columns }))})`,
    );
    await mkdir(ARTIFACTS, { recursive: true });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it("lists each order with its summary (customer, lines, total) and status, a waiting one as 'attention_required'", async () => {
    const query = encodeURIComponent(`TaskQueue="${stack.config.TEMPORAL_TASK_QUEUE}"`);
    const rowOf = (id: string) => page.locator('tr', { hasText: `order-${id}` });
    const deadline = Date.now() + 30_000;
    for (;;) {
      await page.goto(`${ui}/namespaces/${NAMESPACE}/workflows?query=${query}`);
      await page.locator('table').first().waitFor();
      // Visibility is eventually consistent: the search attribute reaches the list a moment after the update.
      const ready = (
        await rowOf(waitingId)
          .innerText()
          .catch(() => '')
      ).includes('attention_required');
      if (ready || Date.now() > deadline) break;
      await page.waitForTimeout(500);
    }
    await page.screenshot({ path: `${ARTIFACTS}temporal-ui-list.png` });
    const completed = await rowOf(completedId).innerText();
    expect(completed).toContain(`Order ${completedId.slice(0, 8)} · Ada Lovelace · 2 lines · 44.99 EUR`);
    expect(completed).toContain('completed');
    const waiting = await rowOf(waitingId).innerText();
    expect(waiting).toContain('Running');
    expect(waiting).toContain('attention_required');
    expect(waiting).toContain('Grace <b>Hopper</b> * · 1 line · 19.99 EUR');
    expect(completed + waiting).not.toContain('@example.com');
  });

  it('shows the summary, the details and what a waiting order needs, Markdown escaped', async () => {
    const current = await metadataPanel(`order-${waitingId}`, 'Waiting for an operator');
    await page.screenshot({ path: `${ARTIFACTS}temporal-ui-attention.png` });

    const summary = await metadataPanel(`order-${waitingId}`, `Order ${waitingId.slice(0, 8)} `);
    expect(await summary.locator('body').innerText()).toContain('Grace <b>Hopper</b> * · 1 line · 19.99 EUR');
    // The customer's markup is text: no <b> element, nothing emphasised.
    expect(await summary.locator('b, strong, em, img').count()).toBe(0);

    const details = await metadataPanel(`order-${waitingId}`, 'Unit price');
    const detailsText = await details.locator('body').innerText();
    expect(detailsText).toContain('g…@example.com');
    expect(detailsText).not.toContain('grace.hopper@');
    expect(await details.locator('table td', { hasText: 'TEE-BLK-M' }).count()).toBe(1);
    expect(await details.locator(`a[href$="/orders/${waitingId}"]`).count()).toBe(1);

    const currentText = await current.locator('body').innerText();
    expect(currentText).toContain(
      'Waiting for an operator at syncInvoiceToAccounting (invoice of 19.99 EUR to accounting)',
    );
    expect(currentText).toContain('the accounting provider refused it (HTTP 422)');
    expect(currentText).toContain(`POST /orders/${waitingId}/retry`);
    // One line per step of the order's plan (whatever the registry held when it was placed), done up to syncInvoiceToAccounting (after the pivot, a refusal waits for a person).
    const { plan } = await stack.db.prisma.order.findUniqueOrThrow({ where: { id: waitingId } });
    const planned = (plan as unknown as OrderPlan).steps;
    const waitingAt = planned.findIndex((step) => step.name === 'syncInvoiceToAccounting');
    const items = await current.locator('li').allInnerTexts();
    expect(items.map((item) => item.slice(0, item.indexOf(':')))).toEqual(
      planned.map((step, i) => `[${i < waitingAt ? 'x' : ' '}] ${step.name}`),
    );
    expect(items).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^\[x\] reserveInventory: reserve 1 unit of 1 SKU/),
        expect.stringMatching(/^\[x\] createInvoice: invoice of 19\.99 EUR/),
        expect.stringMatching(/^\[x\] sendOrderConfirmation: confirmation to g…@example\.com(?! \(point)/),
        expect.stringMatching(/^\[x\] shipOrder: shipment of 1 item \(point of no return\)/),
        expect.stringMatching(
          /^\[ \] syncInvoiceToAccounting: invoice of 19\.99 EUR to accounting \(waiting for an operator\)/,
        ),
      ]),
    );
    // Each activity's summary, in the list of events with metadata.
    await expect(page.getByText('shipment of 1 item').first().isVisible()).resolves.toBe(true);
  });

  it("says 'Completed' once an operator's retry went through", async () => {
    await stack.ops.post(`/orders/${waitingId}/retry`).set('Idempotency-Key', `ui-retry-${waitingId}`).expect(202);
    await orderReaches(waitingId, 'completed');
    const current = await metadataPanel(`order-${waitingId}`, '**Completed**');
    expect(await current.locator('body').innerText()).toContain('Completed: every step is done.');
    expect(await current.locator('li', { hasText: '[ ]' }).count()).toBe(0);
  });

  describe('hostile names (issue 21)', () => {
    const summaryOf = (id: string, name: string) =>
      `Order ${id.slice(0, 8)} · ${name.replace(/\u202e/g, '')} · 1 line · 19.99 EUR`;

    it.each(Object.keys(HOSTILE) as Array<keyof typeof HOSTILE>)(
      '%s: the summary and the details show the name as its characters, never as a link, an image or markup',
      async (kind) => {
        const id = hostileIds[kind];
        const { name } = HOSTILE[kind];
        const summary = await metadataPanel(`order-${id}`, `Order ${id.slice(0, 8)} `);
        expect(await summary.locator('main *:not(p)').count()).toBe(0);
        expect(noSpaces(await summary.locator('main').innerText())).toBe(noSpaces(summaryOf(id, name)));
        expect(await visualText(summary.locator('main'))).toBe(noSpaces(summaryOf(id, name)));

        const details = await metadataPanel(`order-${id}`, 'Unit price');
        expect(await details.locator('img, em, del, sup, sub, script, span').count()).toBe(0);
        expect(await details.locator('a').count()).toBe(2); // ours: the order in the API, the page
        expect(await details.locator('main').innerText()).toContain(name.replace(/\u202e/g, ''));
      },
    );

    it('the workflow list shows the bidi name in its order', async () => {
      const id = hostileIds.bidi;
      const query = encodeURIComponent(`TaskQueue="${stack.config.TEMPORAL_TASK_QUEUE}"`);
      await page.goto(`${ui}/namespaces/${NAMESPACE}/workflows?query=${query}`);
      const row = page.locator('tr', { hasText: `order-${id}` });
      await row.waitFor({ timeout: 30_000 });
      expect(await visualText(row)).toContain(noSpaces(summaryOf(id, HOSTILE.bidi.name)));
      const described = await stack.client.workflow.getHandle(`order-${id}`).describe();
      const attribute = described.typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderSummary);
      expect(attribute).toBe(summaryOf(id, HOSTILE.bidi.name));
    });

    it('the confirmation email greets the bidi name as its characters', () => {
      const [sent] = stack.email.ledger.effects(`order-confirmation:${hostileIds.bidi}`);
      const text = (sent?.request as { text: string }).text;
      expect(text).toContain('Hello Ada RUE 00.1 · senil 1,');
      expect(text).not.toMatch(/[\u202a-\u202e\u2066-\u2069]/);
    });

    it("an activity's summary, plain text in the UI, shows no escapes", async () => {
      const id = hostileIds.markup;
      await page.goto(`${ui}/namespaces/${NAMESPACE}/workflows/order-${id}`);
      await page.getByRole('tab', { name: 'User Metadata' }).click();
      await expect(page.getByText('confirmation to _…@example.com').first().isVisible()).resolves.toBe(true);
      await expect(page.getByText('confirmation to \\_').count()).resolves.toBe(0);
    });
  });
});
