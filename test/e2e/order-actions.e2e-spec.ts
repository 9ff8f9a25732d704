/**
 * E2E: the order actions' HTTP contract (POST /orders/:id/cancel, /retry), the
 * reconciler's skip of final orders and the sweeper, on a fresh PostgreSQL database and the real Temporal dev
 * server, with NO worker on the suite's task queue: started workflows stay running and never answer an Update, so
 * every answer here comes from the API's own checks and its mapping of the Temporal client's errors. The paths
 * that need the workflow to answer are in order-actions-lifecycle.e2e-spec.ts.
 */
import { randomUUID } from 'node:crypto';
import type { NestExpressApplication } from '@nestjs/platform-express';
import getPort from 'get-port';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrderWorkflowReconciler } from '../../src/orders/workflow/order-workflow-reconciler.service.js';
import { RETRY_UPDATE_TIMEOUT_MS } from '../../src/temporal/temporal.constants.js';
import { orderWorkflowId, type OrderStatus } from '../../workflows/order-fulfilment.contract.js';
import { api, ApiSuite, testKeys, PROBLEM_JSON, startApiApp, waitForWorkflowStart } from '../helpers/api-app.js';

const PROBLEMS = 'https://order-fulfilment.dev/problems/';
const suite = new ApiSuite(`order-actions-e2e-${randomUUID()}`);
let app: NestExpressApplication;
const http = () => api(app);
/** Operator actions (retry) need an `operator` key. */
const ops = () => api(app, testKeys().operator.key);

beforeAll(async () => {
  await suite.open([{ sku: 'SKU-MUG', name: 'Mug', priceMinor: 1250, onHand: 100 }]);
  app = suite.app;
});
afterAll(() => suite.close());

/** Places an order through the API (its workflow starts and stays pending: no worker). */
async function placeOrder(server = app): Promise<string> {
  const res = await api(server)
    .post('/orders')
    .send({ customer: { email: 'ada@example.com' }, lines: [{ sku: 'SKU-MUG', quantity: 2 }] })
    .expect(202);
  // The start dispatcher starts the workflow right after the 202: these tests act on that workflow.
  await waitForWorkflowStart(suite.db, res.body.id as string);
  return res.body.id as string;
}

/** Sets an order's status straight in the database (as if its workflow had written it). */
async function setStatus(id: string, status: OrderStatus, statusStep: number): Promise<void> {
  await suite.db.prisma.order.update({ where: { id }, data: { status, statusStep } });
}

/** Makes an order look untouched for an hour (the sweeper only looks at stale orders). */
async function age(id: string): Promise<void> {
  await suite.db.prisma.$executeRaw`UPDATE orders SET updated_at = now() - interval '1 hour' WHERE id = ${id}::uuid`;
}

describe('POST /orders/:id/cancel, answered without the workflow', () => {
  it('answers 404 problem+json for an unknown order', async () => {
    const id = randomUUID();
    const res = await http().post(`/orders/${id}/cancel`).send({ reason: 'changed my mind' });
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({ type: `${PROBLEMS}not-found`, status: 404, instance: `/orders/${id}/cancel` });
  });

  it.each([
    ['no body', undefined, ''],
    ['no reason', {}, 'reason'],
    ['an empty reason', { reason: '   ' }, 'reason'],
    ['a reason of 501 characters', { reason: 'x'.repeat(501) }, 'reason'],
    ['a reason that is not a string', { reason: 42 }, 'reason'],
    ['an unknown key', { reason: 'ok', refund: true }, ''],
  ])('answers 400 validation-error for %s', async (_name, body, path) => {
    const id = await placeOrder();
    const res = await http().post(`/orders/${id}/cancel`).send(body);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body.type).toBe(`${PROBLEMS}validation-error`);
    expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ path })]));
  });

  it('answers 400 for a malformed Idempotency-Key and a non-UUID id', async () => {
    const id = await placeOrder();
    const badKey = await http().post(`/orders/${id}/cancel`).set('Idempotency-Key', 'a b').send({ reason: 'x' });
    expect(badKey.status).toBe(400);
    expect(badKey.body.errors).toEqual([expect.objectContaining({ path: 'headers.idempotency-key' })]);
    const badId = await http().post('/orders/not-a-uuid/cancel').send({ reason: 'x' });
    expect(badId.status).toBe(400);
  });

  it.each([
    ['completed', 50],
    ['failed', 90],
  ] as const)(
    'answers 409 order-not-cancellable for a %s order, the same again with the same key',
    async (status, rank) => {
      const id = await placeOrder();
      await setStatus(id, status, rank);
      const key = randomUUID();
      const first = await http().post(`/orders/${id}/cancel`).set('Idempotency-Key', key).send({ reason: 'too late' });
      expect(first.status).toBe(409);
      expect(first.headers['content-type']).toMatch(PROBLEM_JSON);
      expect(first.body).toMatchObject({
        type: `${PROBLEMS}order-not-cancellable`,
        status: 409,
        orderStatus: status,
        instance: `/orders/${id}/cancel`,
      });
      expect(first.body.detail).toContain(`already ${status}`);
      const again = await http().post(`/orders/${id}/cancel`).set('Idempotency-Key', key).send({ reason: 'too late' });
      expect([again.status, again.body]).toEqual([first.status, first.body]);
    },
  );

  it('answers 200 with the order for an order that is already cancelled', async () => {
    const id = await placeOrder();
    await setStatus(id, 'cancelled', 90);
    const res = await http().post(`/orders/${id}/cancel`).send({ reason: 'again' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, status: 'cancelled' });
  });

  it('answers 202 with Location when the outcome is not known within CANCEL_WAIT_MS, and again on a repeat', async () => {
    const quick = await startApiApp(suite.config({ CANCEL_WAIT_MS: '300' }));
    suite.extraApps.push(quick);
    const id = await placeOrder(quick);
    const key = randomUUID();
    for (let attempt = 0; attempt < 2; attempt++) {
      const started = Date.now();
      const res = await api(quick)
        .post(`/orders/${id}/cancel`)
        .set('Idempotency-Key', key)
        .send({ reason: 'no worker takes it' });
      expect(res.status).toBe(202);
      expect(res.headers.location).toBe(`/orders/${id}`);
      expect(res.body).toMatchObject({ id, status: 'received' });
      expect(Date.now() - started).toBeLessThan(5_000);
    }
  });

  it('answers 409 when the workflow has closed while the order is not final', async () => {
    const id = await placeOrder();
    await suite.temporal.workflow.getHandle(orderWorkflowId(id)).terminate('test: closed under the order');
    const res = await http().post(`/orders/${id}/cancel`).send({ reason: 'x' });
    expect(res.status).toBe(409);
    // The cancel swept the order at once: flagged, with the operator's exit named in the answer and the order.
    expect(res.body).toMatchObject({ type: `${PROBLEMS}order-not-cancellable`, orderStatus: 'attention_required' });
    expect(res.body.detail).toContain('has closed (TERMINATED)');
    expect(res.body.detail).toContain(`temporal workflow reset --workflow-id order-${id} --type LastWorkflowTask`);
    const order = (await http().get(`/orders/${id}`).expect(200)).body;
    expect(order).toMatchObject({ status: 'attention_required', cancellable: false });
  });

  it('answers 503 problem+json with Retry-After when Temporal is unreachable', async () => {
    const id = await placeOrder();
    const down = await startApiApp(suite.config({ TEMPORAL_ADDRESS: `127.0.0.1:${await getPort()}` }));
    suite.extraApps.push(down);
    const res = await api(down).post(`/orders/${id}/cancel`).send({ reason: 'x' });
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.headers['retry-after']).toBe('5');
    expect(res.body).toMatchObject({ type: `${PROBLEMS}service-unavailable`, status: 503 });
    expect((await suite.db.prisma.order.findUniqueOrThrow({ where: { id } })).status).toBe('received');
  });
});

describe('POST /orders/:id/retry, answered without the workflow', () => {
  it('answers 404 for an unknown order and 400 for an unknown step or key', async () => {
    expect((await ops().post(`/orders/${randomUUID()}/retry`)).status).toBe(404);
    const id = await placeOrder();
    const badStep = await ops().post(`/orders/${id}/retry`).send({ step: 'launchRocket' });
    expect(badStep.status).toBe(400);
    expect(badStep.body.errors).toEqual([expect.objectContaining({ path: 'step' })]);
    expect((await ops().post(`/orders/${id}/retry`).send({ extra: 1 })).status).toBe(400);
  });

  it('answers 409 order-not-awaiting-retry for a final order', async () => {
    const id = await placeOrder();
    await setStatus(id, 'completed', 50);
    const res = await ops().post(`/orders/${id}/retry`);
    expect(res.status).toBe(409);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: `${PROBLEMS}order-not-awaiting-retry`,
      orderStatus: 'completed',
      waitingFor: null,
    });
  });

  it(
    'answers 409 when the workflow has closed, and 503 with Retry-After when no worker takes the retry',
    async () => {
      const closed = await placeOrder();
      await setStatus(closed, 'attention_required', 45);
      await suite.temporal.workflow.getHandle(orderWorkflowId(closed)).terminate('test');
      const res = await ops().post(`/orders/${closed}/retry`);
      expect(res.status).toBe(409);
      expect(res.body.detail).toContain('has closed (TERMINATED)');

      const pending = await placeOrder();
      const started = Date.now();
      const timeout = await ops().post(`/orders/${pending}/retry`).set('Idempotency-Key', randomUUID());
      expect(timeout.status).toBe(503);
      expect(timeout.headers['retry-after']).toBe('5');
      expect(timeout.body.detail).toContain('same Idempotency-Key');
      // It waited the whole bound: longer than a worker crash takes to recover.
      expect(Date.now() - started).toBeGreaterThanOrEqual(RETRY_UPDATE_TIMEOUT_MS - 500);
    },
    RETRY_UPDATE_TIMEOUT_MS + 30_000,
  );
});

describe('the reconciler and the sweeper', () => {
  const reconciler = () => app.get(OrderWorkflowReconciler);

  it('never starts the workflow of a final order that has none', async () => {
    const id = randomUUID();
    await suite.db.prisma.order.create({
      data: {
        id,
        customerEmail: 'ada@example.com',
        clientId: testKeys().shop.client,
        status: 'failed',
        statusStep: 90,
        failureReason: 'InsufficientStockError: test',
        currency: 'EUR',
        totalMinor: 1250,
        workflowId: orderWorkflowId(id),
        createdAt: new Date(Date.now() - 60_000),
        lines: { create: [{ id: randomUUID(), lineNo: 1, sku: 'SKU-MUG', quantity: 1, unitPriceMinor: 1250 }] },
      },
    });
    const result = await reconciler().reconcileOnce();
    expect(result.started).toBe(0);
    await expect(suite.temporal.workflow.getHandle(orderWorkflowId(id)).describe()).rejects.toThrow(/not found/i);
    const row = await suite.db.prisma.order.findUniqueOrThrow({ where: { id } });
    expect([row.status, row.workflowStartedAt]).toEqual(['failed', null]);
  });

  it('leaves running workflows alone and flags an order whose workflow was terminated mid-way', async () => {
    const id = await placeOrder();
    await setStatus(id, 'inventory_reserved', 10);
    await age(id);
    const stockBefore = await suite.db.prisma.product.findUniqueOrThrow({ where: { sku: 'SKU-MUG' } });

    const first = await reconciler().sweepOnce();
    expect(first.running).toBeGreaterThanOrEqual(1);
    expect((await suite.db.prisma.order.findUniqueOrThrow({ where: { id } })).status).toBe('inventory_reserved');

    await suite.temporal.workflow.getHandle(orderWorkflowId(id)).terminate('test: killed mid-way');
    const second = await reconciler().sweepOnce();
    expect(second.flagged).toBeGreaterThanOrEqual(1);
    const row = await suite.db.prisma.order.findUniqueOrThrow({ where: { id } });
    expect(row.status).toBe('attention_required');
    expect(row.statusStep).toBe(15); // waiting at createInvoice: rank of invoiced (20) - 5
    expect(row.failureReason).toBe(
      `workflow order-${id} closed (terminated) while the order was inventory_reserved; an operator resumes it with ` +
        `\`temporal workflow reset --workflow-id order-${id} --type LastWorkflowTask --reason '<why>'\`, then ` +
        'retries, resolves or cancels as usual',
    );
    // Nothing else moved: no stock, movements or invoices.
    expect(await suite.db.prisma.product.findUniqueOrThrow({ where: { sku: 'SKU-MUG' } })).toEqual(stockBefore);
    expect(await suite.db.prisma.inventoryMovement.count({ where: { orderId: id } })).toBe(0);
    expect(await suite.db.prisma.invoice.count({ where: { orderId: id } })).toBe(0);

    // Flagged now means freshly updated: the next pass does not look at it again.
    await reconciler().sweepOnce();
    expect((await suite.db.prisma.order.findUniqueOrThrow({ where: { id } })).failureReason).toBe(row.failureReason);
  });

  it('flags an order whose workflow does not exist, and ignores fresh and final orders', async () => {
    const missing = randomUUID();
    await suite.db.prisma.order.create({
      data: {
        id: missing,
        customerEmail: 'ada@example.com',
        clientId: testKeys().shop.client,
        status: 'invoiced',
        statusStep: 20,
        currency: 'EUR',
        totalMinor: 1250,
        workflowId: orderWorkflowId(missing),
        workflowStartedAt: new Date(Date.now() - 3_600_000),
        lines: { create: [{ id: randomUUID(), lineNo: 1, sku: 'SKU-MUG', quantity: 1, unitPriceMinor: 1250 }] },
      },
    });
    await age(missing);
    const fresh = await placeOrder();
    await waitForWorkflowStart(suite.db, fresh); // the dispatcher starts it right after the 202
    await suite.temporal.workflow.getHandle(orderWorkflowId(fresh)).terminate('test');
    const final = await placeOrder();
    await waitForWorkflowStart(suite.db, final);
    await setStatus(final, 'completed', 50);
    await age(final);
    await suite.temporal.workflow.getHandle(orderWorkflowId(final)).terminate('test');

    await reconciler().sweepOnce();
    const rows = await suite.db.prisma.order.findMany({ where: { id: { in: [missing, fresh, final] } } });
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(missing)).toMatchObject({
      status: 'attention_required',
      statusStep: 25,
      failureReason:
        `workflow order-${missing} closed (not found) while the order was invoiced; its history is gone, so an ` +
        'operator settles its stock and invoice by hand',
    });
    expect(byId.get(fresh)?.status).toBe('received');
    expect(byId.get(final)?.status).toBe('completed');
  });
});

describe('OpenAPI', () => {
  it('documents the action routes, their statuses and problem types', async () => {
    const res = await http().get('/docs-json').expect(200);
    const cancel = res.body.paths['/orders/{id}/cancel'].post;
    // 413, 415 and 422 (`card-number-refused`): every operation with a body; 401/403/429: authentication (their
    // definitions' `appliesTo`).
    expect(Object.keys(cancel.responses).sort()).toEqual([
      '200',
      '202',
      '400',
      '401',
      '403',
      '404',
      '409',
      '413',
      '415',
      '422',
      '429',
      '503',
    ]);
    expect(cancel.responses['202'].headers).toHaveProperty('Location');
    expect(cancel.responses['503'].headers).toHaveProperty('Retry-After');
    expect(Object.keys(cancel.responses['409'].content)).toEqual(['application/problem+json']);
    expect(JSON.stringify(cancel.requestBody)).toContain('CancelOrderRequest');
    expect(cancel.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false })]),
    );
    const retry = res.body.paths['/orders/{id}/retry'].post;
    expect(Object.keys(retry.responses).sort()).toEqual([
      '202',
      '400',
      '401',
      '403',
      '404',
      '409',
      '413',
      '415',
      '422',
      '429',
      '503',
    ]);
    expect(JSON.stringify(retry.responses['202'])).toContain('RetryStarted');
    expect(retry.requestBody.required).toBe(false);
    expect(res.body.paths).not.toHaveProperty('/orders/{id}/accounting-sync/retry');
  });
});
