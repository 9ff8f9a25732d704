/**
 * E2E: authentication, scopes, order ownership, per-client idempotency and rate limits (issue 7), over HTTP against
 * the Nest app with a real PostgreSQL and the Temporal dev server (no worker: workflows stay pending).
 * Keys: the `shop`, `otherShop` and `operator` test keys (test/helpers/api-keys.ts), plus keys made here.
 */
import { randomUUID } from 'node:crypto';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKeyStore } from '../../src/auth/api-key.store.js';
import { CLIENT_SCOPES } from '../../src/auth/scopes.js';
import type { OrderView } from '../../src/orders/order-response.dto.js';
import { api, ApiSuite, bearer, PROBLEM_JSON, startApiApp, testKeys } from '../helpers/api-app.js';

const PROBLEMS = 'https://order-fulfilment.dev/problems/';
const suite = new ApiSuite(`auth-e2e-${randomUUID()}`);
let app: NestExpressApplication;

beforeAll(async () => {
  await suite.open([
    { sku: 'SKU-MUG', name: 'Mug', priceMinor: 1250, onHand: 100 },
    { sku: 'SKU-TEE', name: 'T-shirt', priceMinor: 1999, onHand: 100 },
  ]);
  app = suite.app;
});
afterAll(() => suite.close());

const keys = () => testKeys();
const shop = () => api(app, keys().shop.key);
const otherShop = () => api(app, keys().otherShop.key);
const operator = () => api(app, keys().operator.key);

/** The same order body every client sends here. */
const sameOrder = (email: string) => ({
  customer: { email, name: 'Ada Lovelace' },
  lines: [{ sku: 'SKU-MUG', quantity: 1 }],
});

describe('401 without valid credentials', () => {
  it.each([
    ['POST', '/orders'],
    ['GET', '/orders'],
    ['GET', `/orders/${randomUUID()}`],
    ['POST', `/orders/${randomUUID()}/cancel`],
    ['GET', '/inventory'],
    ['PUT', '/inventory/SKU-MUG'],
  ])('%s %s without a key → 401 problem+json with a Bearer challenge', async (method, path) => {
    const res = await api(app)
      [method.toLowerCase() as 'get' | 'post' | 'put'](path)
      .unset('Authorization')
      .send(method === 'GET' ? undefined : {});
    expect(res.status).toBe(401);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.headers['www-authenticate']).toBe('Bearer realm="order-fulfilment"');
    expect(res.body).toMatchObject({ type: `${PROBLEMS}unauthorized`, status: 401, instance: path });
  });

  it('another scheme → 401 without an error code; an unknown or a revoked key → 401 invalid_token', async () => {
    const store = new ApiKeyStore(suite.db.prisma);
    const revoked = await store.createKey({ clientId: 'revoked-shop', scopes: CLIENT_SCOPES });
    expect((await api(app, revoked.key).get('/orders')).status).toBe(200);
    await store.revokeKey(revoked.id);

    const fake = keys().shop.key.slice(0, -4) + 'AAAA';
    // RFC 6750 §3.1: "attempted using an unsupported authentication method" → no error code.
    const basic = await api(app).get('/orders').set('Authorization', 'Basic dXNlcjpwYXNz');
    expect(basic.status).toBe(401);
    expect(basic.headers['www-authenticate']).toBe('Bearer realm="order-fulfilment"');
    expect(basic.body.type).toBe(`${PROBLEMS}unauthorized`);
    for (const authorization of ['Bearer not-a-key', bearer(fake), bearer(revoked.key)]) {
      const res = await api(app).get('/orders').set('Authorization', authorization);
      expect(res.status, authorization).toBe(401);
      expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
      expect(res.headers['www-authenticate']).toContain('error="invalid_token"');
      expect(res.body.type).toBe(`${PROBLEMS}unauthorized`);
    }
  });

  it('a malformed bearer header or two Authorization headers → 400 invalid_request (RFC 6750 §3.1)', async () => {
    for (const authorization of ['Bearer', 'Bearer two tokens', 'Bearer ä-not-b64']) {
      const res = await api(app).get('/orders').set('Authorization', authorization);
      expect(res.status, authorization).toBe(400);
      expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
      expect(res.headers['www-authenticate']).toContain('error="invalid_request"');
      expect(res.body.type).toBe(`${PROBLEMS}invalid-authorization`);
    }
    // Two header lines (Node sends one line per array element).
    const twice = await api(app)
      .get('/orders')
      .set('Authorization', [bearer(keys().shop.key), bearer(keys().shop.key)] as unknown as string);
    expect([twice.status, twice.body.type]).toEqual([400, `${PROBLEMS}invalid-authorization`]);
    // Nothing changed: the same key alone still works.
    expect((await api(app, keys().shop.key).get('/orders')).status).toBe(200);
  });

  it('records when a key was last used', async () => {
    const store = new ApiKeyStore(suite.db.prisma);
    const fresh = await store.createKey({ clientId: 'used-shop', scopes: CLIENT_SCOPES });
    expect(fresh.lastUsedAt).toBeNull();
    expect((await api(app, fresh.key).get('/orders')).status).toBe(200);
    const deadline = Date.now() + 5_000;
    let row = await suite.db.prisma.apiKey.findUniqueOrThrow({ where: { id: fresh.id } });
    while (row.lastUsedAt === null && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      row = await suite.db.prisma.apiKey.findUniqueOrThrow({ where: { id: fresh.id } });
    }
    expect(row.lastUsedAt).toBeInstanceOf(Date);
    expect(row.secretHash).not.toContain(fresh.key.slice(8));
  });
});

describe('403 without the scope', () => {
  it('a client key cannot write inventory, read the ledger or retry; the operator can', async () => {
    const put = await otherShop().put('/inventory/SKU-MUG').send({ onHand: 5 });
    expect(put.status).toBe(403);
    expect(put.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(put.headers['www-authenticate']).toContain('error="insufficient_scope"');
    expect(put.body).toMatchObject({ type: `${PROBLEMS}forbidden`, status: 403, requiredScope: 'inventory:write' });
    expect((await otherShop().get('/inventory/SKU-MUG/movements')).status).toBe(403);
    expect((await shop().post(`/orders/${randomUUID()}/retry`)).body).toMatchObject({ requiredScope: 'operator' });

    expect((await operator().put('/inventory/SKU-TEE').send({ onHand: 100 })).status).toBe(200);
    expect((await operator().get('/inventory/SKU-TEE/movements')).status).toBe(200);
    expect((await operator().post(`/orders/${randomUUID()}/retry`)).status).toBe(404);
  });

  it('any valid key reads the catalogue; /health and /docs-json need none', async () => {
    expect((await otherShop().get('/inventory')).status).toBe(200);
    expect((await api(app).get('/health').unset('Authorization')).status).toBe(200);
    expect((await api(app).get('/docs-json').unset('Authorization')).status).toBe(200);
  });
});

describe('orders belong to the client that placed them', () => {
  it("a client reads, lists and cancels only its own (404 for others'); the operator sees all", async () => {
    const mine: OrderView = (await shop().post('/orders').send(sameOrder('own@example.com')).expect(202)).body;
    const theirs: OrderView = (await otherShop().post('/orders').send(sameOrder('own@example.com')).expect(202)).body;
    expect(mine.clientId).toBe(keys().shop.client);
    expect(theirs.clientId).toBe(keys().otherShop.client);

    expect((await shop().get(`/orders/${mine.id}`)).status).toBe(200);
    const foreign = await shop().get(`/orders/${theirs.id}`);
    expect(foreign.status).toBe(404);
    expect(foreign.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(foreign.body.type).toBe(`${PROBLEMS}not-found`);
    expect((await otherShop().get(`/orders/${mine.id}`)).status).toBe(404);
    expect((await otherShop().post(`/orders/${mine.id}/cancel`).send({ reason: 'not mine' })).status).toBe(404);

    const listed = async (agent: ReturnType<typeof api>) =>
      ((await agent.get('/orders').query({ limit: 100 }).expect(200)).body.items as OrderView[]).map((o) => o.id);
    expect(await listed(shop())).toContain(mine.id);
    expect(await listed(shop())).not.toContain(theirs.id);
    expect(await listed(otherShop())).toContain(theirs.id);
    expect(await listed(otherShop())).not.toContain(mine.id);
    expect(await listed(operator())).toEqual(expect.arrayContaining([mine.id, theirs.id]));
    for (const item of (await shop().get('/orders').query({ limit: 100 })).body.items as OrderView[]) {
      expect(item.clientId).toBe(keys().shop.client);
    }

    expect((await operator().get(`/orders/${theirs.id}`)).body.clientId).toBe(keys().otherShop.client);
  });
});

describe('Idempotency-Key is scoped per client (issue 7, input 1)', () => {
  it('two clients, one key, the same body → two different orders, neither readable by the other', async () => {
    const key = randomUUID();
    const a = await shop().post('/orders').set('Idempotency-Key', key).send(sameOrder('shared-key@example.com'));
    const b = await otherShop()
      .post('/orders')
      .set('Idempotency-Key', key)
      .send({ ...sameOrder('shared-key@example.com'), customer: { email: 'b@example.com', name: 'Grace Hopper' } });
    const bSame = await otherShop()
      .post('/orders')
      .set('Idempotency-Key', `${key}-same`)
      .send(sameOrder('shared-key@example.com'));
    expect([a.status, b.status, bSame.status]).toEqual([202, 202, 202]);
    expect(b.headers['idempotent-replayed']).toBeUndefined();
    expect(b.body.id).not.toBe(a.body.id);
    expect(b.body.customer).toEqual({ email: 'b@example.com', name: 'Grace Hopper' });

    // The same key and the same body as the first client's: still the second client's own new order.
    const key2 = randomUUID();
    const first = await shop().post('/orders').set('Idempotency-Key', key2).send(sameOrder('same@example.com'));
    const second = await otherShop().post('/orders').set('Idempotency-Key', key2).send(sameOrder('same@example.com'));
    expect([first.status, second.status]).toEqual([202, 202]);
    expect(second.headers['idempotent-replayed']).toBeUndefined();
    expect(second.body.id).not.toBe(first.body.id);
    expect(second.body.clientId).toBe(keys().otherShop.client);
    expect((await otherShop().get(`/orders/${first.body.id}`)).status).toBe(404);
    expect((await shop().get(`/orders/${second.body.id}`)).status).toBe(404);

    // Each client's retry replays its own order.
    const replayA = await shop().post('/orders').set('Idempotency-Key', key2).send(sameOrder('same@example.com'));
    const replayB = await otherShop().post('/orders').set('Idempotency-Key', key2).send(sameOrder('same@example.com'));
    expect(replayA.headers['idempotent-replayed']).toBe('true');
    expect(replayA.body.id).toBe(first.body.id);
    expect(replayB.headers['idempotent-replayed']).toBe('true');
    expect(replayB.body.id).toBe(second.body.id);
    expect(
      await suite.db.prisma.idempotencyRecord.findMany({ where: { key: key2 }, orderBy: { clientId: 'asc' } }),
    ).toEqual([
      expect.objectContaining({ clientId: keys().otherShop.client, resourceId: second.body.id }),
      expect.objectContaining({ clientId: keys().shop.client, resourceId: first.body.id }),
    ]);
  });
});

describe('two Idempotency-Key headers (issue 7, input 3)', () => {
  it('→ 400 saying to send exactly one, nothing stored', async () => {
    const res = await shop()
      .post('/orders')
      .set('Idempotency-Key', ['a1', 'b2'] as unknown as string)
      .send(sameOrder('two-headers@example.com'));
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: `${PROBLEMS}validation-error`,
      errors: [{ path: 'headers.idempotency-key', message: 'Send exactly one Idempotency-Key header (got 2)' }],
    });
    expect(await suite.db.prisma.order.count({ where: { customerEmail: 'two-headers@example.com' } })).toBe(0);
  });
});

describe('rate limits per client', () => {
  it('over the limit → 429 problem+json with Retry-After; other clients and public routes are not affected', async () => {
    const limited = await startApiApp(suite.config({ RATE_LIMIT_MAX: '3', RATE_LIMIT_WINDOW_MS: '60000' }));
    suite.extraApps.push(limited);
    const a = () => api(limited, keys().shop.key);
    for (let i = 0; i < 3; i++) {
      const ok = await a().get('/inventory');
      expect(ok.status).toBe(200);
      expect(ok.headers['x-ratelimit-remaining']).toBe(String(2 - i));
    }
    const res = await a().get('/orders');
    expect(res.status).toBe(429);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(res.body).toMatchObject({
      type: `${PROBLEMS}rate-limited`,
      status: 429,
      limit: 3,
      windowSeconds: 60,
      detail: expect.stringContaining(keys().shop.client),
    });

    expect((await api(limited, keys().otherShop.key).get('/inventory')).status).toBe(200);
    expect((await api(limited).get('/health').unset('Authorization')).status).toBe(200);
  });
});
