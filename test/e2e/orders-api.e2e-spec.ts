/**
 * E2E: the orders API (Nest app from createApiApp + supertest) on a fresh PostgreSQL database and the real
 * Temporal dev server of the global setup. No worker polls this suite's task queue, so started workflows stay
 * pending; the suite checks that they exist with the right id, type, queue and search attributes.
 */
import { randomUUID } from 'node:crypto';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Client } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import getPort from 'get-port';
import type { AppConfig } from '../../src/config/config.js';
import type { OrderView } from '../../src/orders/order-response.dto.js';
import { ORDER_WORKFLOW_TYPE, orderWorkflowId, SEARCH_ATTRIBUTES } from '../../workflows/order-fulfilment.contract.js';
import { STEPS } from '../../activities/index.js';
import { api, ApiSuite, testKeys, PROBLEM_JSON, startApiApp, waitForWorkflowStart } from '../helpers/api-app.js';
import type { TestDatabase } from '../helpers/postgres.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let db: TestDatabase;
let app: NestExpressApplication;
let temporal: Client;
const taskQueue = `orders-api-e2e-${randomUUID()}`;
const suite = new ApiSuite(taskQueue);
const extraApps = suite.extraApps;

const suiteConfig = (overrides: Record<string, string> = {}): AppConfig => suite.config(overrides);
const startApp = startApiApp;

const unusedPort = (): Promise<number> => getPort();

const workflowsOnQueue = () => suite.workflowsOnQueue();

const validOrder = () => ({
  customer: { email: 'ada@example.com', name: 'Ada Lovelace' },
  lines: [
    { sku: 'SKU-MUG', quantity: 2 },
    { sku: 'SKU-TEE', quantity: 1 },
  ],
});

beforeAll(async () => {
  await suite.open([
    { sku: 'SKU-MUG', name: 'Mug', priceMinor: 1250, currency: 'EUR', onHand: 100 },
    { sku: 'SKU-TEE', name: 'T-shirt', priceMinor: 1999, currency: 'EUR', onHand: 50 },
    { sku: 'SKU-CAP', name: 'Cap', priceMinor: 900, currency: 'EUR', onHand: 10 },
    { sku: 'SKU-USD', name: 'Import', priceMinor: 500, currency: 'USD', onHand: 10 },
  ]);
  ({ db, app, temporal } = suite);
});

afterAll(() => suite.close());

/** The registry's steps an order placed without `payment` runs (conditional card steps left out). */
const ON_ACCOUNT = STEPS.filter((s) => !s.when);
describe('POST /orders content type', () => {
  it.each([
    ['text/plain', JSON.stringify(validOrder())],
    ['application/x-www-form-urlencoded', 'customer=ada'],
  ])('answers 415 problem+json for a %s body and stores nothing', async (type, body) => {
    const before = await db.prisma.order.count();
    const res = await api(app).post('/orders').set('Content-Type', type).send(body);
    expect(res.status).toBe(415);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body.type).toBe('https://order-fulfilment.dev/problems/unsupported-media-type');
    expect(await db.prisma.order.count()).toBe(before);
  });

  it('lets application/json with a charset through to validation', async () => {
    const res = await api(app).post('/orders').set('Content-Type', 'application/json; charset=utf-8').send('{}');
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('https://order-fulfilment.dev/problems/validation-error');
  });
});

describe('POST /orders validation', () => {
  const cases: Array<{ name: string; body: unknown; path: string; type?: string; message?: RegExp }> = [
    { name: 'missing email', body: { ...validOrder(), customer: { name: 'Ada' } }, path: 'customer.email' },
    { name: 'bad email', body: { ...validOrder(), customer: { email: 'not-an-email' } }, path: 'customer.email' },
    {
      name: 'quantity 0',
      body: { ...validOrder(), lines: [{ sku: 'SKU-MUG', quantity: 0 }] },
      path: 'lines.0.quantity',
    },
    {
      name: 'quantity 1.5',
      body: { ...validOrder(), lines: [{ sku: 'SKU-MUG', quantity: 1.5 }] },
      path: 'lines.0.quantity',
    },
    {
      name: 'quantity 1001',
      body: { ...validOrder(), lines: [{ sku: 'SKU-MUG', quantity: 1001 }] },
      path: 'lines.0.quantity',
    },
    { name: 'empty lines', body: { ...validOrder(), lines: [] }, path: 'lines' },
    {
      name: 'NUL character in the name',
      body: { ...validOrder(), customer: { email: 'ada@example.com', name: 'Zo\u0000e' } },
      path: 'customer.name',
      message: /NUL/,
    },
    {
      name: 'lone surrogate in a SKU',
      body: { ...validOrder(), lines: [{ sku: 'MUG\ud800', quantity: 1 }] },
      path: 'lines.0.sku',
      message: /well-formed Unicode/,
    },
    {
      name: 'duplicate sku',
      body: {
        ...validOrder(),
        lines: [
          { sku: 'SKU-MUG', quantity: 1 },
          { sku: 'SKU-TEE', quantity: 1 },
          { sku: 'SKU-MUG', quantity: 3 },
        ],
      },
      path: 'lines.2.sku',
      message: /SKU-MUG/,
    },
    {
      name: 'unknown sku',
      body: {
        ...validOrder(),
        lines: [
          { sku: 'SKU-MUG', quantity: 1 },
          { sku: 'SKU-NOPE', quantity: 1 },
        ],
      },
      path: 'lines.1.sku',
      type: 'https://order-fulfilment.dev/problems/unknown-sku',
      message: /SKU-NOPE/,
    },
    {
      name: 'mixed currencies',
      body: {
        ...validOrder(),
        lines: [
          { sku: 'SKU-MUG', quantity: 1 },
          { sku: 'SKU-USD', quantity: 1 },
        ],
      },
      path: 'lines.1.sku',
      type: 'https://order-fulfilment.dev/problems/currency-mismatch',
    },
    { name: 'extra top-level key', body: { ...validOrder(), coupon: 'FREE' }, path: '', message: /coupon/ },
    {
      name: 'extra line key',
      body: { ...validOrder(), lines: [{ sku: 'SKU-MUG', quantity: 1, priceMinor: 1 }] },
      path: 'lines.0',
      message: /priceMinor/,
    },
    { name: 'no body', body: undefined, path: '' },
  ];

  it.each(cases)('$name → 400 problem+json naming $path', async ({ body, path, type, message }) => {
    const res = await api(app)
      .post('/orders')
      .send(body as object);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: type ?? 'https://order-fulfilment.dev/problems/validation-error',
      title: expect.any(String),
      status: 400,
      detail: expect.any(String),
      instance: '/orders',
    });
    const error = (res.body.errors as Array<{ path: string; message: string }>).find((e) => e.path === path);
    expect(error, JSON.stringify(res.body.errors)).toBeDefined();
    if (message) expect(error!.message).toMatch(message);
    if (type?.endsWith('unknown-sku')) expect(res.body.skus).toEqual(['SKU-NOPE']);
  });

  it('malformed JSON → 400 problem+json', async () => {
    const res = await api(app)
      .post('/orders')
      .set('Content-Type', 'application/json')
      .send('{"customer": {"email": "ada@example.com"}, "lines": [');
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: 'https://order-fulfilment.dev/problems/malformed-json',
      status: 400,
      instance: '/orders',
      errors: [expect.objectContaining({ path: '' })],
    });
  });

  it('stored nothing and started no workflow', async () => {
    expect(await db.prisma.order.count()).toBe(0);
    expect(await db.prisma.orderLine.count()).toBe(0);
    expect(await workflowsOnQueue()).toEqual([]);
  });
});

describe('POST /orders and GET /orders/:id', () => {
  let created: OrderView;

  it('answers 202 with Location and the order, and the dispatcher starts its workflow right after', async () => {
    const res = await api(app).post('/orders').send(validOrder());
    expect(res.status).toBe(202);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    created = res.body;
    expect(created.id).toMatch(UUID);
    expect(res.headers.location).toBe(`/orders/${created.id}`);
    expect(created).toEqual({
      id: created.id,
      clientId: testKeys().shop.client,
      status: 'received',
      failure: null,
      customer: { email: 'ada@example.com', name: 'Ada Lovelace' },
      currency: 'EUR',
      totalMinor: 2 * 1250 + 1999,
      lines: [
        { lineNo: 1, sku: 'SKU-MUG', quantity: 2, unitPriceMinor: 1250 },
        { lineNo: 2, sku: 'SKU-TEE', quantity: 1, unitPriceMinor: 1999 },
      ],
      invoiceNumber: null,
      accountingId: null,
      workflowId: `order-${created.id}`,
      temporalUiUrl: `http://temporal-ui.test:8233/namespaces/default/workflows/order-${created.id}`,
      // The answer does not wait for Temporal: null, unless the dispatcher was faster than the answer.
      workflowStartedAt: created.workflowStartedAt,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      completedAt: null,
      // The order's plan (the step registry's steps for an order on account: no card steps), each step with where
      // it stands: the first is next.
      steps: ON_ACCOUNT.map((s, i) => ({
        name: s.name,
        label: s.label,
        status: i === ON_ACCOUNT.length - 1 ? 'completed' : s.status,
        phase: s.phase,
        state: i === 0 ? 'current' : 'pending',
      })),
      cancellable: true,
      // Placed without `payment`: paid on account.
      payment: null,
      // No return yet.
      returns: { refundedMinor: 0, items: [] },
    });
    expect(created.workflowStartedAt === null || !Number.isNaN(Date.parse(created.workflowStartedAt))).toBe(true);

    const startedAt = await waitForWorkflowStart(db, created.id);
    const row = await db.prisma.order.findUniqueOrThrow({ where: { id: created.id }, include: { lines: true } });
    expect(row).toMatchObject({ status: 'received', statusStep: 0, totalMinor: 4499, currency: 'EUR' });
    expect(row.workflowStartedAt).toEqual(startedAt);
    expect(row.lines).toHaveLength(2);
    expect(await db.prisma.workflowStartIntent.count({ where: { orderId: created.id } })).toBe(0);

    const description = await temporal.workflow.getHandle(orderWorkflowId(created.id)).describe();
    expect(description.type).toBe(ORDER_WORKFLOW_TYPE);
    expect(description.taskQueue).toBe(taskQueue);
    expect(description.status.name).toBe('RUNNING');
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderId)).toBe(created.id);
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderStatus)).toBe('received');
  });

  it('GET /orders/:id returns the same representation', async () => {
    const res = await api(app).get(`/orders/${created.id}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...created, workflowStartedAt: expect.any(String), updatedAt: expect.any(String) });
    expect(new Date(res.body.workflowStartedAt).toISOString()).toBe(res.body.workflowStartedAt);
  });

  it('GET /orders/:id with a non-UUID id → 400 problem', async () => {
    const res = await api(app).get('/orders/not-a-uuid');
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: 'https://order-fulfilment.dev/problems/validation-error',
      status: 400,
      instance: '/orders/not-a-uuid',
      errors: [expect.objectContaining({ path: 'id' })],
    });
  });

  it('GET /orders/:id for an unknown order → 404 problem', async () => {
    const id = randomUUID();
    const res = await api(app).get(`/orders/${id}`);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: 'https://order-fulfilment.dev/problems/not-found',
      title: expect.any(String),
      status: 404,
      detail: expect.stringContaining(id),
      instance: `/orders/${id}`,
    });
  });

  it('an unknown route → 404 problem', async () => {
    const res = await api(app).get('/no-such-route?x=1');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: 'about:blank',
      title: 'Not Found',
      status: 404,
      instance: '/no-such-route',
    });
  });
});

describe('GET /orders', () => {
  it('pages newest first across 3 pages with an opaque cursor', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await api(app)
        .post('/orders')
        .send({ customer: { email: `c${i}@example.com` }, lines: [{ sku: 'SKU-CAP', quantity: i + 1 }] });
      expect(res.status).toBe(202);
    }
    // Three orders with one identical createdAt: the id breaks the tie.
    const sameTime = new Date(Date.now() - 60_000);
    for (let i = 0; i < 3; i++) {
      const id = randomUUID();
      await db.prisma.order.create({
        data: {
          id,
          customerEmail: `tie${i}@example.com`,
          clientId: testKeys().shop.client,
          status: i === 0 ? 'completed' : 'received',
          currency: 'EUR',
          totalMinor: 900,
          workflowId: orderWorkflowId(id),
          workflowStartedAt: sameTime,
          createdAt: sameTime,
          completedAt: i === 0 ? sameTime : null,
          lines: { create: [{ id: randomUUID(), lineNo: 1, sku: 'SKU-CAP', quantity: 1, unitPriceMinor: 900 }] },
        },
      });
    }

    const expected = (
      await db.prisma.order.findMany({ orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], select: { id: true } })
    ).map((o) => o.id);
    expect(expected.length).toBeGreaterThanOrEqual(7);
    const limit = Math.ceil(expected.length / 3);

    const pages: Array<{ items: Array<Record<string, unknown>>; nextCursor: string | null }> = [];
    let cursor: string | null = null;
    do {
      const res = await api(app)
        .get('/orders')
        .query(cursor ? { limit, cursor } : { limit });
      expect(res.status).toBe(200);
      pages.push(res.body);
      cursor = res.body.nextCursor;
      if (cursor) expect(cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    } while (cursor && pages.length < 10);

    expect(pages).toHaveLength(3);
    expect(pages.map((p) => p.items.length)).toEqual([limit, limit, expected.length - 2 * limit]);
    expect(pages[2]!.nextCursor).toBeNull();
    expect(pages.flatMap((p) => p.items.map((o) => o.id))).toEqual(expected);
    const item = pages[0]!.items[0]!;
    expect(item).not.toHaveProperty('lines');
    expect(item).toMatchObject({ status: 'received', currency: 'EUR', workflowId: `order-${item.id}` });
  });

  it('filters by status', async () => {
    const res = await api(app).get('/orders').query({ status: 'completed' });
    expect(res.status).toBe(200);
    expect(res.body.items).toHaveLength(1);
    expect(res.body.items[0]).toMatchObject({ status: 'completed', completedAt: expect.any(String) });
    expect(res.body.nextCursor).toBeNull();
  });

  it.each([
    { query: { cursor: 'not-a-cursor!' }, path: 'cursor' },
    { query: { cursor: Buffer.from('["yesterday","x"]').toString('base64url') }, path: 'cursor' },
    { query: { limit: 0 }, path: 'limit' },
    { query: { limit: 101 }, path: 'limit' },
    { query: { limit: 'ten' }, path: 'limit' },
    { query: { status: 'lost' }, path: 'status' },
  ])('bad query $query → 400 problem', async ({ query, path }) => {
    const res = await api(app).get('/orders').query(query);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: 'https://order-fulfilment.dev/problems/validation-error',
      instance: '/orders',
      errors: [expect.objectContaining({ path })],
    });
  });
});

describe('Temporal down at POST time', () => {
  it('still answers 202, keeps the order, and the reconciler starts its workflow later', async () => {
    const downApp = await startApp(suiteConfig({ TEMPORAL_ADDRESS: `127.0.0.1:${await unusedPort()}` }));
    extraApps.push(downApp);

    const res = await api(downApp).post('/orders').send(validOrder());
    expect(res.status).toBe(202);
    expect(res.headers.location).toBe(`/orders/${res.body.id}`);
    expect(res.body).toMatchObject({ status: 'received', workflowStartedAt: null });
    const id: string = res.body.id;
    expect((await db.prisma.order.findUniqueOrThrow({ where: { id } })).workflowStartedAt).toBeNull();
    await expect(temporal.workflow.getHandle(orderWorkflowId(id)).describe()).rejects.toThrow();

    const healthStarted = Date.now();
    const health = await api(downApp).get('/health');
    expect(Date.now() - healthStarted).toBeLessThan(1_500);
    expect(health.status).toBe(503);
    expect(health.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(health.headers['retry-after']).toBe('5');
    expect(health.body).toEqual({
      type: 'https://order-fulfilment.dev/problems/service-unavailable',
      title: 'Service unavailable',
      status: 503,
      detail: 'Unavailable: temporal',
      instance: '/health',
      checks: { database: 'up', temporal: 'down' },
    });
    // Without a key: the same up/down, never why; with an operator key, why (the `details` member).
    const anonymous = await api(downApp).get('/health').unset('Authorization');
    expect(anonymous.status).toBe(503);
    expect(anonymous.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(anonymous.body).toEqual(health.body);
    const operator = await api(downApp, testKeys().operator.key).get('/health');
    expect(operator.body.details.temporal).toMatchObject({ state: 'down', error: expect.any(String) });

    // The reconciler leaves orders younger than 5 s to the POST handler; age this one instead of waiting.
    await db.prisma.order.update({ where: { id }, data: { createdAt: new Date(Date.now() - 10_000) } });
    const reconcilingApp = await startApp(suiteConfig({ RECONCILE_INTERVAL_MS: '200' }));
    extraApps.push(reconcilingApp);

    const deadline = Date.now() + 20_000;
    let startedAt: Date | null = null;
    while (!startedAt && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 200));
      startedAt = (await db.prisma.order.findUniqueOrThrow({ where: { id } })).workflowStartedAt;
    }
    expect(startedAt).toBeInstanceOf(Date);

    const description = await temporal.workflow.getHandle(orderWorkflowId(id)).describe();
    expect(description.type).toBe(ORDER_WORKFLOW_TYPE);
    expect(description.taskQueue).toBe(taskQueue);
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderId)).toBe(id);

    const after = await api(reconcilingApp).get(`/orders/${id}`);
    expect(after.body.workflowStartedAt).toBe(startedAt!.toISOString());
  });
});

describe('GET /health and /docs-json', () => {
  it('reports the database and Temporal up: the status to anyone, the details to operators', async () => {
    const res = await api(app, testKeys().operator.key).get('/health');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      status: 'ok',
      checks: { database: 'up', temporal: 'up' },
      details: { database: { state: 'up' }, temporal: { state: 'up' } },
    });
    for (const plain of [await api(app).get('/health'), await api(app).get('/health').unset('Authorization')]) {
      expect(plain.status).toBe(200);
      expect(plain.body).toEqual({ status: 'ok', checks: { database: 'up', temporal: 'up' } });
    }
  });

  it('serves the OpenAPI document with the order schemas', async () => {
    const res = await api(app).get('/docs-json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toMatch(/^3\./);
    expect(Object.keys(res.body.paths)).toEqual(
      expect.arrayContaining(['/orders', '/orders/{id}', '/inventory', '/inventory/{sku}', '/health']),
    );
    const post = res.body.paths['/orders'].post;
    expect(post.responses['202']).toBeDefined();
    expect(JSON.stringify(post.requestBody)).toContain('CreateOrderRequest');
  });
});
