/**
 * E2E: the inventory API (Nest app from createApiApp + supertest) on a fresh PostgreSQL database:
 * listing, absolute on-hand adjustments with their ledger movement, Idempotency-Key replays, and the
 * reserved-stock invariant.
 */
import { randomUUID } from 'node:crypto';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { afterAll, beforeAll, beforeEach, describe, expect, inject, it } from 'vitest';
import { createApiApp } from '../../src/bootstrap.js';
import { loadConfig } from '../../src/config/config.js';
import { api, PROBLEM_JSON, testKeys } from '../helpers/api-app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

let db: TestDatabase;
let app: NestExpressApplication;

beforeAll(async () => {
  db = await createTestDatabase();
  app = await createApiApp({
    shutdownHooks: false,
    config: loadConfig({
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      TEMPORAL_TASK_QUEUE: `inventory-api-e2e-${randomUUID()}`,
      RECONCILE_INTERVAL_MS: '0',
      LOG_LEVEL: 'silent',
    }),
  });
  await app.init();
});

afterAll(async () => {
  await app?.close();
  await db?.drop();
});

beforeEach(async () => {
  await db.prisma.inventoryMovement.deleteMany();
  await db.prisma.product.deleteMany();
  await db.prisma.product.createMany({
    data: [
      { sku: 'SKU-TEE', name: 'T-shirt', priceMinor: 1999, currency: 'EUR', onHand: 5, reserved: 3 },
      { sku: 'SKU-MUG', name: 'Mug', priceMinor: 1250, currency: 'EUR', onHand: 10, reserved: 0 },
      { sku: 'SKU-CAP', name: 'Cap', priceMinor: 900, currency: 'USD', onHand: 0, reserved: 0 },
    ],
  });
});

/** The client of the default test key. */
const SHOP = () => testKeys().shop.client;

const put = (sku: string, body: unknown, idempotencyKey?: string) => {
  const req = api(app).put(`/inventory/${encodeURIComponent(sku)}`);
  if (idempotencyKey !== undefined) req.set('Idempotency-Key', idempotencyKey);
  return req.send(body as object);
};

describe('GET /inventory', () => {
  it('lists products ordered by SKU with available = onHand - reserved', async () => {
    const res = await api(app).get('/inventory');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { sku: 'SKU-CAP', name: 'Cap', priceMinor: 900, currency: 'USD', onHand: 0, reserved: 0, available: 0 },
      { sku: 'SKU-MUG', name: 'Mug', priceMinor: 1250, currency: 'EUR', onHand: 10, reserved: 0, available: 10 },
      { sku: 'SKU-TEE', name: 'T-shirt', priceMinor: 1999, currency: 'EUR', onHand: 5, reserved: 3, available: 2 },
    ]);
  });
});

describe('PUT /inventory/:sku', () => {
  it('sets the ABSOLUTE on-hand value and records an adjustment movement', async () => {
    const res = await put('SKU-MUG', { onHand: 25 }, 'key-1');
    expect(res.status).toBe(200);
    expect(res.headers['idempotent-replayed']).toBeUndefined();
    expect(res.body).toEqual({
      sku: 'SKU-MUG',
      name: 'Mug',
      priceMinor: 1250,
      currency: 'EUR',
      onHand: 25,
      reserved: 0,
      available: 25,
    });
    expect(await db.prisma.product.findUniqueOrThrow({ where: { sku: 'SKU-MUG' } })).toMatchObject({ onHand: 25 });
    expect(await db.prisma.inventoryMovement.findMany()).toEqual([
      expect.objectContaining({
        // The key is the client's: the movement is named by client and key.
        id: `adjust:SKU-MUG:${SHOP()}:key-1`,
        sku: 'SKU-MUG',
        orderId: null,
        reason: 'adjustment',
        onHandDelta: 15,
        reservedDelta: 0,
      }),
    ]);

    // Absolute, not additive: setting 25 again is a zero delta; setting 7 is -18.
    const lower = await put('SKU-MUG', { onHand: 7 });
    expect(lower.status).toBe(200);
    expect(lower.body).toMatchObject({ onHand: 7, available: 7 });

    const movements = await api(app).get('/inventory/SKU-MUG/movements');
    expect(movements.status).toBe(200);
    expect(movements.body).toHaveLength(2);
    // Newest first; without an Idempotency-Key the request id is a fresh UUID.
    expect(movements.body[0]).toMatchObject({
      sku: 'SKU-MUG',
      reason: 'adjustment',
      onHandDelta: -18,
      reservedDelta: 0,
    });
    expect(movements.body[0].id).toMatch(/^adjust:SKU-MUG:[0-9a-f-]{36}$/);
    expect(movements.body[1]).toMatchObject({
      id: `adjust:SKU-MUG:${SHOP()}:key-1`,
      onHandDelta: 15,
      onHandAfter: 25,
      orderId: null,
    });
    expect(new Date(movements.body[1].createdAt).toISOString()).toBe(movements.body[1].createdAt);
  });

  it('a replay with the same Idempotency-Key changes nothing and returns the first response', async () => {
    const first = await put('SKU-MUG', { onHand: 25 }, 'replay-key');
    expect(first.status).toBe(200);
    const reused = await put('SKU-MUG', { onHand: 40 }, 'replay-key');
    expect(reused.status).toBe(422);
    expect(reused.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(reused.body.type).toBe('https://order-fulfilment.dev/problems/idempotency-key-reused');
    const replay = await put('SKU-MUG', { onHand: 25 }, 'replay-key');
    expect(replay.status).toBe(200);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    expect(replay.text).toBe(first.text);
    expect(await db.prisma.product.findUniqueOrThrow({ where: { sku: 'SKU-MUG' } })).toMatchObject({ onHand: 25 });
    expect(await db.prisma.inventoryMovement.count()).toBe(1);

    // A key names one request: the same key on another product is another request → 422.
    const other = await put('SKU-CAP', { onHand: 4 }, 'replay-key');
    expect(other.status).toBe(422);
    expect(await db.prisma.inventoryMovement.count()).toBe(1);

    // Another client's same key is its own request.
    const otherClient = await api(app, testKeys().operator.key)
      .put('/inventory/SKU-MUG')
      .set('Idempotency-Key', 'replay-key')
      .send({ onHand: 26 });
    expect(otherClient.status).toBe(200);
    expect(otherClient.headers['idempotent-replayed']).toBeUndefined();
    expect(otherClient.body).toMatchObject({ onHand: 26 });
    expect(await db.prisma.inventoryMovement.count()).toBe(2);
  });

  it('concurrent requests with one Idempotency-Key apply once: the first 200, the others 409 or its replay', async () => {
    const results = await Promise.all(Array.from({ length: 6 }, () => put('SKU-MUG', { onHand: 30 }, 'race-key')));
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 409)).toBe(true);
    expect(results.filter((r) => r.status === 200 && r.headers['idempotent-replayed'] === undefined)).toHaveLength(1);
    for (const busy of results.filter((r) => r.status === 409)) {
      expect(busy.headers['retry-after']).toBe('1');
      expect(busy.body.type).toBe('https://order-fulfilment.dev/problems/idempotency-key-in-use');
    }
    const movements = await db.prisma.inventoryMovement.findMany();
    expect(movements).toEqual([expect.objectContaining({ id: `adjust:SKU-MUG:${SHOP()}:race-key`, onHandDelta: 20 })]);
  });

  it('below the reserved quantity → 409 problem, nothing changed', async () => {
    const res = await put('SKU-TEE', { onHand: 2 }, 'too-low');
    expect(res.status).toBe(409);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: 'https://order-fulfilment.dev/problems/stock-below-reserved',
      title: expect.any(String),
      status: 409,
      detail: expect.stringContaining('3 units are reserved'),
      instance: '/inventory/SKU-TEE',
    });
    expect(await db.prisma.product.findUniqueOrThrow({ where: { sku: 'SKU-TEE' } })).toMatchObject({
      onHand: 5,
      reserved: 3,
    });
    expect(await db.prisma.inventoryMovement.count()).toBe(0);

    // Exactly the reserved quantity is allowed.
    const equal = await put('SKU-TEE', { onHand: 3 });
    expect(equal.status).toBe(200);
    expect(equal.body).toMatchObject({ onHand: 3, reserved: 3, available: 0 });
  });

  it('unknown SKU → 404 problem', async () => {
    const res = await put('SKU-NOPE', { onHand: 1 });
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: 'https://order-fulfilment.dev/problems/not-found',
      status: 404,
      instance: '/inventory/SKU-NOPE',
    });
    const movements = await api(app).get('/inventory/SKU-NOPE/movements');
    expect(movements.status).toBe(404);
    expect(movements.headers['content-type']).toMatch(PROBLEM_JSON);
  });

  it.each([
    { name: 'negative', body: { onHand: -1 }, path: 'onHand' },
    { name: 'fractional', body: { onHand: 1.5 }, path: 'onHand' },
    { name: 'string', body: { onHand: '5' }, path: 'onHand' },
    { name: 'missing', body: {}, path: 'onHand' },
    { name: 'extra key', body: { onHand: 5, reserved: 0 }, path: '' },
  ])('$name body → 400 problem naming $path', async ({ body, path }) => {
    const res = await put('SKU-MUG', body);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: 'https://order-fulfilment.dev/problems/validation-error',
      status: 400,
      instance: '/inventory/SKU-MUG',
      errors: [expect.objectContaining({ path })],
    });
    expect(await db.prisma.inventoryMovement.count()).toBe(0);
  });

  it('an invalid Idempotency-Key → 400 problem', async () => {
    const res = await put('SKU-MUG', { onHand: 5 }, 'x'.repeat(300));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body.errors).toEqual([expect.objectContaining({ path: 'headers.idempotency-key' })]);
    expect(await db.prisma.inventoryMovement.count()).toBe(0);
  });
});
