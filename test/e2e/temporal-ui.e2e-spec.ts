/**
 * What a person sees of an order in the Temporal UI (the UI the stack runs: the dev server's own, 2.42), in headless
 * Chromium against the real stack: the workflow list shows each order's summary (the `OrderSummary` search attribute
 * column, as docs/operations.md tells an operator to add it) and status; an order's User Metadata tab shows the
 * summary, the details and the current details, rendered from escaped Markdown (a customer's `<b>` stays text); an
 * order waiting for an operator says what it waits for and how to retry, and says it is completed after the retry.
 * Screenshots: `artifacts/temporal-ui-list.png`, `artifacts/temporal-ui-attention.png` (gitignored).
 *
 * Chromium: `CHROMIUM_PATH`, default `/usr/bin/chromium`. Without it the suite is skipped, except in CI (`CI=true`),
 * where it fails (as the web page's test, test/e2e/web-page.e2e-spec.ts).
 */
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type FrameLocator, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { OrderPlan } from '../../workflows/order-plan.js';
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

    stack.carrier.injectFault({ mode: 'reject', times: 1 });
    const waiting = await stack.http
      .post('/orders')
      .send({
        customer: { email: 'grace.hopper@example.com', name: 'Grace <b>Hopper</b> *' },
        lines: [{ sku: 'TEE-BLK-M', quantity: 1 }],
      })
      .expect(202);
    waitingId = waiting.body.id;
    await orderReaches(waitingId, 'attention_required');

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
    expect(currentText).toContain('Waiting for an operator at shipOrder (shipment of 1 item)');
    expect(currentText).toContain('the carrier provider refused it (HTTP 422)');
    expect(currentText).toContain(`POST /orders/${waitingId}/retry`);
    // One line per step of the order's plan (whatever the registry held when it was placed), done up to shipOrder.
    const { plan } = await stack.db.prisma.order.findUniqueOrThrow({ where: { id: waitingId } });
    const planned = (plan as unknown as OrderPlan).steps;
    const waitingAt = planned.findIndex((step) => step.name === 'shipOrder');
    const items = await current.locator('li').allInnerTexts();
    expect(items.map((item) => item.slice(0, item.indexOf(':')))).toEqual(
      planned.map((step, i) => `[${i < waitingAt ? 'x' : ' '}] ${step.name}`),
    );
    expect(items).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^\[x\] reserveInventory: reserve 1 unit of 1 SKU/),
        expect.stringMatching(/^\[x\] createInvoice: invoice of 19\.99 EUR/),
        expect.stringMatching(/^\[x\] sendOrderConfirmation: confirmation to g…@example\.com \(point of no return\)/),
        expect.stringMatching(/^\[ \] shipOrder: shipment of 1 item \(waiting for an operator\)/),
        expect.stringMatching(/^\[ \] syncInvoiceToAccounting: invoice of 19\.99 EUR to accounting/),
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
});
