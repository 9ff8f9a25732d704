/**
 * E2E: `Idempotency-Key` on `POST /orders` (draft-ietf-httpapi-idempotency-key-header) with the Nest app from
 * createApiApp + supertest, a fresh PostgreSQL database and the real Temporal dev server of the global setup.
 * No worker polls this suite's task queue, so started workflows stay pending; the suite counts orders,
 * idempotency records and the workflows on its own queue.
 */
import { randomUUID } from 'node:crypto';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Prisma } from '../../prisma/generated/client.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestFingerprint } from '../../src/idempotency/idempotency-protocol.js';
import { IdempotencyService } from '../../src/idempotency/idempotency.service.js';
import type { OrderView } from '../../src/orders/order-response.dto.js';
import { orderWorkflowId } from '../../workflows/order-fulfilment.contract.js';
import { api, ApiSuite, testKeys, PROBLEM_JSON } from '../helpers/api-app.js';
import { until } from '../helpers/poll.js';
import type { TestDatabase } from '../helpers/postgres.js';

const PROBLEMS = 'https://order-fulfilment.dev/problems/';
/** The client of the default test key (test/helpers/api-keys.ts), which every request here uses. */
const SHOP = () => testKeys().shop.client;
const DAY_MS = 24 * 60 * 60 * 1000;

let db: TestDatabase;
let app: NestExpressApplication;
const taskQueue = `orders-idempotency-e2e-${randomUUID()}`;
const suite = new ApiSuite(taskQueue);

const workflowsOnQueue = () => suite.workflowsOnQueue();

/** Waits until visibility lists `expected` on the queue (it is eventually consistent), then returns the list. */
async function workflowsOnQueueIncluding(expected: string): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  let ids = await workflowsOnQueue();
  while (!ids.includes(expected) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    ids = await workflowsOnQueue();
  }
  return ids;
}

/** A valid order; `email` tells this test's orders apart from the others'. */
const order = (email: string, quantity = 1) => ({
  customer: { email, name: 'Ada Lovelace' },
  lines: [
    { sku: 'SKU-MUG', quantity },
    { sku: 'SKU-TEE', quantity: 1 },
  ],
});

const post = (body: unknown, key?: string | string[]) => {
  const req = api(app).post('/orders');
  // An array sends one header line per key (superagent passes it to Node's setHeader).
  if (key !== undefined) req.set('Idempotency-Key', key as string);
  return req.send(body as object);
};

const ordersOf = (email: string) => db.prisma.order.count({ where: { customerEmail: email } });
const record = (key: string) =>
  db.prisma.idempotencyRecord.findUnique({ where: { clientId_key: { clientId: SHOP(), key } } });

beforeAll(async () => {
  await suite.open([
    { sku: 'SKU-MUG', name: 'Mug', priceMinor: 1250, currency: 'EUR', onHand: 100 },
    { sku: 'SKU-TEE', name: 'T-shirt', priceMinor: 1999, currency: 'EUR', onHand: 50 },
  ]);
  ({ db, app } = suite);
});

afterAll(() => suite.close());

describe('POST /orders with an Idempotency-Key', () => {
  it('replays the first response byte for byte: one order, one workflow', async () => {
    const key = randomUUID();
    const first = await post(order('replay@example.com'), key);
    expect(first.status).toBe(202);
    expect(first.headers['idempotent-replayed']).toBeUndefined();
    const created: OrderView = first.body;
    expect(first.headers.location).toBe(`/orders/${created.id}`);

    // The same body with its keys in another order, and the key in Structured-Field string form.
    const same = {
      lines: [
        { quantity: 1, sku: 'SKU-MUG' },
        { quantity: 1, sku: 'SKU-TEE' },
      ],
      customer: { name: 'Ada Lovelace', email: 'replay@example.com' },
    };
    for (const sentKey of [key, `"${key}"`]) {
      const again = await post(same, sentKey);
      expect(again.status).toBe(202);
      expect(again.headers['idempotent-replayed']).toBe('true');
      expect(again.headers.location).toBe(first.headers.location);
      expect(again.headers['content-type']).toBe(first.headers['content-type']);
      expect(again.text).toBe(first.text);
    }

    expect(await ordersOf('replay@example.com')).toBe(1);
    expect(await workflowsOnQueueIncluding(orderWorkflowId(created.id))).toEqual([orderWorkflowId(created.id)]);

    const row = await record(key);
    expect(row).toMatchObject({
      clientId: SHOP(),
      status: 'completed',
      fingerprint: requestFingerprint({ method: 'POST', target: '/orders', body: order('replay@example.com') }),
      responseStatus: 202,
      responseHeaders: { Location: `/orders/${created.id}` },
      resourceId: created.id,
      completedAt: expect.any(Date),
    });
    expect(row!.responseBody).toEqual(created);
    // Retention counts from completion.
    expect(row!.expiresAt!.getTime() - row!.completedAt!.getTime()).toBe(DAY_MS);
  });

  it('the same key with a different body → 422 idempotency-key-reused, still one order', async () => {
    const key = randomUUID();
    expect((await post(order('reuse@example.com'), key)).status).toBe(202);

    const res = await post(order('reuse@example.com', 5), key);
    expect(res.status).toBe(422);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: `${PROBLEMS}idempotency-key-reused`,
      title: expect.any(String),
      status: 422,
      detail: expect.stringContaining(key),
      instance: '/orders',
    });
    expect(await ordersOf('reuse@example.com')).toBe(1);
  });

  it('10 concurrent identical requests → exactly one order; every answer is the 202 or a 409', async () => {
    const key = randomUUID();
    // Visibility is eventually consistent (on a cluster it lags by up to a second or so): an earlier test's
    // workflow may not be listed yet. Every earlier workflow belongs to an order row, so count those too.
    const earlierOrders = await db.prisma.order.findMany({ select: { id: true } });
    const before = [...(await workflowsOnQueue()), ...earlierOrders.map((o) => orderWorkflowId(o.id))];
    const responses = await Promise.all(Array.from({ length: 10 }, () => post(order('race@example.com'), key)));

    expect(await ordersOf('race@example.com')).toBe(1);
    const { id } = await db.prisma.order.findFirstOrThrow({ where: { customerEmail: 'race@example.com' } });

    const statuses = responses.map((r) => r.status);
    expect(
      statuses.every((s) => s === 202 || s === 409),
      statuses.join(','),
    ).toBe(true);
    const originals = responses.filter((r) => r.status === 202 && r.headers['idempotent-replayed'] === undefined);
    expect(originals).toHaveLength(1);
    for (const res of responses) {
      if (res.status === 202) {
        expect(res.body.id).toBe(id);
        expect(res.headers.location).toBe(`/orders/${id}`);
        if (res !== originals[0]) expect(res.headers['idempotent-replayed']).toBe('true');
      } else {
        expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
        expect(res.headers['retry-after']).toBe('1');
        expect(res.body).toMatchObject({ type: `${PROBLEMS}idempotency-key-in-use`, status: 409 });
      }
    }

    const after = await workflowsOnQueueIncluding(orderWorkflowId(id));
    expect(after.filter((w) => !before.includes(w))).toEqual([orderWorkflowId(id)]);

    const retry = await post(order('race@example.com'), key);
    expect(retry.status).toBe(202);
    expect(retry.headers['idempotent-replayed']).toBe('true');
    expect(retry.text).toBe(originals[0]!.text);
  });

  it.each([
    { name: 'empty', key: '' },
    { name: '256 characters', key: 'k'.repeat(256) },
    { name: 'a space', key: 'two words' },
    { name: 'non-ASCII', key: 'caf\u00e9' },
    { name: 'an unterminated quoted string', key: '"abc' },
    { name: 'a quoted string with parameters', key: '"abc";p=1' },
    { name: 'a quoted string with a bad escape', key: '"a\\bc"' },
    { name: 'an empty quoted string', key: '""' },
    { name: 'two keys', key: ['key-a', 'key-b'] },
  ])('a key with $name → 400 validation problem, nothing stored', async ({ key }) => {
    const email = `invalid-${randomUUID()}@example.com`;
    const res = await post(order(email), key);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: `${PROBLEMS}validation-error`,
      status: 400,
      detail: expect.stringContaining('Idempotency-Key'),
      instance: '/orders',
      errors: [{ path: 'headers.idempotency-key', message: expect.any(String) }],
    });
    expect(await ordersOf(email)).toBe(0);
  });

  it('accepts a 255-character key and a quoted key with escapes', async () => {
    const long = 'k'.repeat(255);
    expect((await post(order('long-key@example.com'), long)).status).toBe(202);
    expect(await record(long)).toMatchObject({ status: 'completed' });

    const res = await post(order('escaped-key@example.com'), '"a\\"b\\\\c"');
    expect(res.status).toBe(202);
    expect(await record('a"b\\c')).toMatchObject({ status: 'completed', resourceId: res.body.id });
  });

  it('an expired record counts as absent: a new order, and the record is replaced', async () => {
    const key = randomUUID();
    const first = await post(order('expired@example.com'), key);
    expect(first.status).toBe(202);
    const past = new Date(Date.now() - 2 * DAY_MS);
    await db.prisma.idempotencyRecord.update({
      where: { clientId_key: { clientId: SHOP(), key } },
      data: { createdAt: past, completedAt: past, expiresAt: new Date(past.getTime() + DAY_MS) },
    });

    const second = await post(order('expired@example.com'), key);
    expect(second.status).toBe(202);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    expect(second.body.id).not.toBe(first.body.id);
    expect(await ordersOf('expired@example.com')).toBe(2);
    const row = await record(key);
    expect(row).toMatchObject({ status: 'completed', resourceId: second.body.id });
    expect(row!.expiresAt!.getTime()).toBeGreaterThan(Date.now());
  });

  it('a processing record → 409 with Retry-After; once stale and its order exists → completed and replayed', async () => {
    const key = randomUUID();
    const first = await post(order('crash@example.com'), key);
    expect(first.status).toBe(202);
    const id: string = first.body.id;
    // Its workflow start is recorded first (the dispatcher's own write), so the replay and the GET below read the same
    // row: under load the start landed between them and the two differed in workflowStartedAt.
    const started = await until(
      async () => (await api(app).get(`/orders/${id}`)).body as OrderView,
      (o) => o.workflowStartedAt !== null,
      15_000,
    );
    expect(started.workflowStartedAt).not.toBeNull();
    // A crash after the order committed but before the record was completed.
    await db.prisma.idempotencyRecord.update({
      where: { clientId_key: { clientId: SHOP(), key } },
      data: {
        status: 'processing',
        responseStatus: null,
        responseBody: Prisma.DbNull,
        responseHeaders: Prisma.DbNull,
        completedAt: null,
        expiresAt: null,
        createdAt: new Date(),
      },
    });

    const busy = await post(order('crash@example.com'), key);
    expect(busy.status).toBe(409);
    expect(busy.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(busy.headers['retry-after']).toBe('1');
    expect(busy.body).toMatchObject({ type: `${PROBLEMS}idempotency-key-in-use`, status: 409, instance: '/orders' });

    await db.prisma.idempotencyRecord.update({
      where: { clientId_key: { clientId: SHOP(), key } },
      data: { createdAt: new Date(Date.now() - 61_000) },
    });
    const recovered = await post(order('crash@example.com'), key);
    expect(recovered.status).toBe(202);
    expect(recovered.headers['idempotent-replayed']).toBe('true');
    expect(recovered.headers.location).toBe(`/orders/${id}`);
    const current = await api(app).get(`/orders/${id}`);
    expect(recovered.body).toEqual(current.body);
    expect(await ordersOf('crash@example.com')).toBe(1);
    expect(await record(key)).toMatchObject({
      status: 'completed',
      responseStatus: 202,
      responseHeaders: { Location: `/orders/${id}` },
      completedAt: expect.any(Date),
    });

    const replay = await post(order('crash@example.com'), key);
    expect(replay.status).toBe(202);
    expect(replay.text).toBe(recovered.text);
  });

  it('unknown SKU → 400 and no record; the corrected request with the same key → 202', async () => {
    const key = randomUUID();
    const bad = {
      customer: { email: 'fixed@example.com' },
      lines: [{ sku: 'SKU-NOPE', quantity: 1 }],
    };
    const res = await post(bad, key);
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: `${PROBLEMS}unknown-sku`, skus: ['SKU-NOPE'] });
    expect(await record(key)).toBeNull();
    expect(await ordersOf('fixed@example.com')).toBe(0);

    const fixed = await post(order('fixed@example.com'), key);
    expect(fixed.status).toBe(202);
    expect(fixed.headers['idempotent-replayed']).toBeUndefined();
    expect(await record(key)).toMatchObject({ status: 'completed', resourceId: fixed.body.id });
    expect(await ordersOf('fixed@example.com')).toBe(1);
  });

  it('without the header every request places a new order (the behaviour before the header)', async () => {
    const [a, b] = [await post(order('nokey@example.com')), await post(order('nokey@example.com'))];
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(a.body.id).not.toBe(b.body.id);
    expect(a.headers['idempotent-replayed']).toBeUndefined();
    expect(await ordersOf('nokey@example.com')).toBe(2);
  });
});

/** A completed record of the test client, claimed and completed at `at`. */
function completedRecord(key: string, at: Date) {
  return {
    clientId: SHOP(),
    key,
    claimId: randomUUID(),
    fingerprint: 'f'.repeat(64),
    status: 'completed',
    responseStatus: 202,
    responseBody: {},
    createdAt: at,
    completedAt: at,
  };
}

describe('retention', () => {
  it('purgeExpired deletes expired records in batches and keeps the rest, processing ones included', async () => {
    const now = new Date();
    const expired = Array.from({ length: 2_345 }, (_, i) => ({
      ...completedRecord(`purge-old-${i}`, new Date(now.getTime() - 2 * DAY_MS)),
      expiresAt: new Date(now.getTime() - DAY_MS - i),
    }));
    await db.prisma.idempotencyRecord.createMany({ data: expired });
    await db.prisma.idempotencyRecord.create({
      data: { ...completedRecord('purge-fresh', now), expiresAt: new Date(now.getTime() + DAY_MS) },
    });
    // Claimed two days ago and still processing: never purged, whatever its age.
    await db.prisma.idempotencyRecord.create({
      data: {
        clientId: SHOP(),
        key: 'purge-processing',
        claimId: randomUUID(),
        fingerprint: 'f'.repeat(64),
        status: 'processing',
        createdAt: new Date(now.getTime() - 2 * DAY_MS),
      },
    });
    const kept = await db.prisma.idempotencyRecord.count({
      where: { OR: [{ expiresAt: { gte: now } }, { expiresAt: null }] },
    });

    expect(await app.get(IdempotencyService).purgeExpired(now)).toBe(2_345);
    expect(await db.prisma.idempotencyRecord.count({ where: { key: { startsWith: 'purge-old-' } } })).toBe(0);
    expect(await db.prisma.idempotencyRecord.count()).toBe(kept);
    expect(await record('purge-processing')).toMatchObject({ status: 'processing' });
    expect(await app.get(IdempotencyService).purgeExpired(now)).toBe(0);
  });
  // The periodic purge is the retention Schedule's (test/e2e/retention-schedule.e2e-spec.ts), not the API's.
});

describe('OpenAPI', () => {
  it('documents the optional header and the 409 and 422 responses', async () => {
    const res = await api(app).get('/docs-json');
    expect(res.status).toBe(200);
    const post = res.body.paths['/orders'].post;
    expect(post.parameters).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'Idempotency-Key', in: 'header', required: false })]),
    );
    expect(post.responses['202'].headers).toHaveProperty('Idempotent-Replayed');
    expect(post.responses['409'].headers).toHaveProperty('Retry-After');
    expect(Object.keys(post.responses['409'].content)).toEqual(['application/problem+json']);
    expect(Object.keys(post.responses['422'].content)).toEqual(['application/problem+json']);
  });
});
