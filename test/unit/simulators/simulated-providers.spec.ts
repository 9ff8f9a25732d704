/**
 * What each simulated provider does (the `simulate` of its definition, served by startSimulators over PROVIDER_LIST
 * in-process on port 0), over raw HTTP: the email provider queues messages (202 `msg_…`), the carrier creates
 * shipments (201 `shp_<24 hex>`, tracking `1Z` + 16 of [0-9A-Z]), the accounting system upserts invoices by external
 * id (201 then 200 with a new version, one id per external id, path and body must agree); each serves its records
 * back (404 for unknown ids) and refuses invalid requests with 422 and no effect. The shared protocol:
 * simulators.spec.ts.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PROVIDER_LIST } from '../../../providers/index.js';
import { startSimulators, type RunningSimulators } from '../../../simulators/shared/simulator-server.js';
import { testProviderApiKeys } from '../../../scripts/lib/stack-definition.js';
import { expectProblem, simCall } from '../../helpers/sim-http.js';

const API_KEYS = testProviderApiKeys(PROVIDER_LIST);
let sims: RunningSimulators;

beforeAll(async () => {
  sims = await startSimulators(PROVIDER_LIST, { apiKeys: API_KEYS });
});
afterAll(() => sims?.close());
beforeEach(() => sims.reset());

/** `method /<provider><path>` with the provider's token. */
function providerCall(provider: string, method: string, path: string, opts: { body?: unknown; key?: string } = {}) {
  return simCall(method, `${sims.url}/${provider}${path}`, { token: API_KEYS[provider]!, ...opts });
}

describe('email', () => {
  const message = { to: 'ada@example.com', subject: 'Hello', text: 'Hi there', metadata: { orderId: '42' } };
  const send = (key: string, body: unknown = message) => providerCall('email', 'POST', '/v1/messages', { body, key });

  it('queues a message (202 msg_…), one email.sent effect, and serves it at GET /v1/messages/:id', async () => {
    const sent = await send('e1', { ...message, from: 'orders@shop.example' });
    expect(sent.status).toBe(202);
    expect(sent.body).toEqual({
      id: expect.stringMatching(/^msg_[0-9a-f]{24}$/),
      status: 'queued',
      to: message.to,
      idempotencyKey: 'e1',
    });
    expect(
      sims
        .provider('email')
        .ledger.effects()
        .map((e) => [e.key, e.kind]),
    ).toEqual([['e1', 'email.sent']]);

    const read = await providerCall('email', 'GET', `/v1/messages/${sent.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({
      ...message,
      from: 'orders@shop.example',
      id: sent.body.id,
      status: 'queued',
      idempotencyKey: 'e1',
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
  });

  it('gives each new key its own message', async () => {
    const a = await send('e2');
    const b = await send('e3');
    expect(b.body.id).not.toBe(a.body.id);
    expect(sims.provider('email').state().size).toBe(2);
  });

  it('answers 404 for an unknown message, and 401 for a read without the token', async () => {
    expectProblem(await providerCall('email', 'GET', '/v1/messages/msg_missing'), 404, 'not-found');
    const sent = await send('e4');
    expectProblem(await simCall('GET', `${sims.url}/email/v1/messages/${sent.body.id}`, { token: null }), 401);
  });

  it.each([
    ['a bad recipient', { ...message, to: 'nope' }],
    ['a bad sender', { ...message, from: 'nope' }],
    ['an empty subject', { ...message, subject: '' }],
    ['no text', { to: message.to, subject: message.subject }],
    ['non-string metadata', { ...message, metadata: { orderId: 42 } }],
  ])('answers 422 problem+json for %s, with no effect', async (_name, body) => {
    const answer = await send('bad', body);
    expectProblem(answer, 422, 'validation-failed');
    expect(answer.body.errors).toEqual(expect.any(Array));
    expect(sims.provider('email').ledger.effects()).toHaveLength(0);
  });
});

describe('carrier', () => {
  const shipment = {
    reference: 'ord_42',
    recipient: { email: 'ada@example.com', name: 'Ada Lovelace' },
    items: [
      { sku: 'TEE-BLK-M', quantity: 2 },
      { sku: 'MUG-WHT', quantity: 1 },
    ],
  };
  const create = (key: string, body: unknown = shipment) =>
    providerCall('carrier', 'POST', '/v1/shipments', { body, key });

  it('creates a shipment (201) with an id and a tracking number, one shipment.created effect, readable', async () => {
    const created = await create('shipment:ord_42');
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^shp_[0-9a-f]{24}$/),
      trackingNumber: expect.stringMatching(/^1Z[0-9A-Z]{16}$/),
      status: 'label_created',
      reference: 'ord_42',
      idempotencyKey: 'shipment:ord_42',
    });
    expect(
      sims
        .provider('carrier')
        .ledger.effects()
        .map((e) => [e.key, e.kind]),
    ).toEqual([['shipment:ord_42', 'shipment.created']]);

    const read = await providerCall('carrier', 'GET', `/v1/shipments/${created.body.id}`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({
      ...shipment,
      id: created.body.id,
      trackingNumber: created.body.trackingNumber,
      status: 'label_created',
      idempotencyKey: 'shipment:ord_42',
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    expect(sims.provider('carrier').state().size).toBe(1);
  });

  it('gives each new key its own shipment and tracking number, always 1Z + 16 upper-case alphanumerics', async () => {
    const answers = [];
    for (let i = 0; i < 20; i++) answers.push(await create(`k${i}`));
    for (const a of answers) expect(a.body.trackingNumber).toMatch(/^1Z[0-9A-Z]{16}$/);
    expect(new Set(answers.map((a) => a.body.id)).size).toBe(20);
    expect(new Set(answers.map((a) => a.body.trackingNumber)).size).toBe(20);
  });

  it('answers 404 problem+json for an unknown shipment', async () => {
    expectProblem(await providerCall('carrier', 'GET', '/v1/shipments/shp_missing'), 404, 'not-found');
  });

  it.each([
    ['no items', { ...shipment, items: [] }],
    ['a zero quantity', { ...shipment, items: [{ sku: 'TEE-BLK-M', quantity: 0 }] }],
    ['a fractional quantity', { ...shipment, items: [{ sku: 'TEE-BLK-M', quantity: 1.5 }] }],
    ['a bad recipient email', { ...shipment, recipient: { email: 'nope' } }],
    ['no reference', { recipient: shipment.recipient, items: shipment.items }],
  ])('answers 422 problem+json for %s, with no effect', async (_name, body) => {
    const answer = await create('bad', body);
    expectProblem(answer, 422, 'validation-failed');
    expect(answer.body.errors).toEqual(expect.any(Array));
    expect(sims.provider('carrier').ledger.effects()).toHaveLength(0);
  });
});

describe('accounting', () => {
  const invoice = {
    externalId: 'INV-000042',
    orderId: 'ord_42',
    customerEmail: 'ada@example.com',
    currency: 'EUR',
    totalMinor: 2_598,
    issuedAt: '2026-11-29T10:00:00.000Z',
    lines: [{ sku: 'SKU-1', quantity: 2, unitPriceMinor: 1_299 }],
  };
  const put = (key: string, body: Record<string, unknown> = invoice, externalId = String(body.externalId)) =>
    providerCall('accounting', 'PUT', `/v1/invoices/${encodeURIComponent(externalId)}`, { body, key });

  it('creates (201) then replaces (200) by externalId with a stable id and version 2', async () => {
    const created = await put('k1');
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^acc_inv_[0-9a-f]{24}$/),
      externalId: 'INV-000042',
      version: 1,
    });

    const replaced = await put('k2', {
      ...invoice,
      totalMinor: 1_299,
      lines: [{ sku: 'SKU-1', quantity: 1, unitPriceMinor: 1_299 }],
    });
    expect(replaced.status).toBe(200);
    expect(replaced.body).toEqual({ id: created.body.id, externalId: 'INV-000042', version: 2 });
    expect(
      sims
        .provider('accounting')
        .ledger.effects()
        .map((e) => [e.key, e.kind]),
    ).toEqual([
      ['k1', 'invoice.created'],
      ['k2', 'invoice.updated'],
    ]);

    const read = await providerCall('accounting', 'GET', '/v1/invoices/INV-000042');
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: created.body.id, version: 2, totalMinor: 1_299 });
  });

  it('gives one id per external id', async () => {
    const a = await put('k3');
    const b = await put('k4', { ...invoice, externalId: 'INV-000043' });
    const a2 = await put('k5');
    expect(b.body.id).not.toBe(a.body.id);
    expect(a2.body.id).toBe(a.body.id);
    expect(sims.provider('accounting').state().size).toBe(2);
  });

  it('replays the same key with the original status and no new version', async () => {
    const first = await put('k6');
    const again = await put('k6');
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((sims.provider('accounting').state().get('INV-000042') as { version: number }).version).toBe(1);
  });

  it("answers 422 when the body's externalId differs from the path's, with no effect; the key stays usable", async () => {
    const mismatch = await put('k7', { ...invoice, externalId: 'INV-OTHER' }, 'INV-000042');
    expectProblem(mismatch, 422, 'external-id-mismatch');
    expect(mismatch.body.detail).toContain('INV-OTHER');
    expect(sims.provider('accounting').ledger.effects()).toHaveLength(0);
    expect(sims.provider('accounting').state().size).toBe(0);
    expect((await put('k7')).status).toBe(201);
  });

  it('decodes a percent-encoded external id in the path', async () => {
    const odd = { ...invoice, externalId: 'INV/2026 #4' };
    expect((await put('k8', odd)).status).toBe(201);
    expect(sims.provider('accounting').state().has('INV/2026 #4')).toBe(true);
    expect((await providerCall('accounting', 'GET', `/v1/invoices/${encodeURIComponent('INV/2026 #4')}`)).status).toBe(
      200,
    );
  });

  it('answers 404 problem+json for an unknown invoice', async () => {
    expectProblem(await providerCall('accounting', 'GET', '/v1/invoices/INV-MISSING'), 404, 'not-found');
  });

  it.each([
    ['a float amount', { ...invoice, totalMinor: 25.98 }],
    ['a negative amount', { ...invoice, totalMinor: -1 }],
    ['a bad currency', { ...invoice, currency: 'EURO' }],
    ['a zero quantity', { ...invoice, lines: [{ sku: 'SKU-1', quantity: 0, unitPriceMinor: 1 }] }],
    ['a non-ISO issuedAt', { ...invoice, issuedAt: 'yesterday' }],
  ])('answers 422 problem+json for %s, with no effect', async (_name, body) => {
    const answer = await put('bad', body);
    expectProblem(answer, 422, 'validation-failed');
    expect(sims.provider('accounting').ledger.effects()).toHaveLength(0);
  });
});

describe('POST /<provider>/_sim/settings', () => {
  it('answers the overrides only, never the process environment, and no key or secret in clear', async () => {
    const served = await startSimulators(PROVIDER_LIST, {
      apiKeys: API_KEYS,
      settings: { HOME: '/root', EMAIL_PROVIDER_API_KEY: 'of_secret_env', WAREHOUSE_PACK_DELAY_MS: '3000' },
    });
    try {
      const answer = await simCall('POST', `${served.url}/warehouse/_sim/settings`, {
        body: { WAREHOUSE_PACK_DELAY_MS: '50', WAREHOUSE_CALLBACK_API_KEY: 'of_dev_warehouse_secret' },
      });
      expect(answer.status).toBe(200);
      expect(answer.body).toEqual({
        settings: { WAREHOUSE_PACK_DELAY_MS: '50', WAREHOUSE_CALLBACK_API_KEY: '[redacted]' },
      });
      expect(JSON.stringify(answer.body)).not.toMatch(/of_secret_env|of_dev_warehouse_secret|\/root/);
    } finally {
      await served.close();
    }
  });
});

describe('warehouse: the packed report (the simulator calling our API back)', () => {
  /** A callback server answering each report with the next of `statuses` (then 200), recording every request. */
  async function callbackServer(statuses: number[]) {
    const requests: Array<{ url: string; key: string | undefined; auth: string | undefined }> = [];
    const server = createServer((req, res) => {
      requests.push({ url: req.url!, key: req.headers['idempotency-key'] as string, auth: req.headers.authorization });
      req.resume();
      res.writeHead(statuses.shift() ?? 200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests, server };
  }

  it('retries a 503, a 429 and a 409 (in progress) with the same key until one is accepted; never after a 422', async () => {
    const api = await callbackServer([503, 429, 409]);
    try {
      sims.provider('warehouse').configure({
        WAREHOUSE_CALLBACK_URL: api.url,
        WAREHOUSE_CALLBACK_API_KEY: 'of_test_warehouse',
        WAREHOUSE_PACK_DELAY_MS: '10',
      });
      const pick = await providerCall('warehouse', 'POST', '/v1/picks', {
        body: { reference: 'ord_42', lines: [{ sku: 'TEE-BLK-M', quantity: 1 }] },
        key: 'pick:ord_42',
      });
      expect(pick.status).toBe(201);
      // Waits of 1, 2 and 4 s between the four attempts.
      const deadline = Date.now() + 15_000;
      while (api.requests.length < 4 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      expect(api.requests).toHaveLength(4);
      expect(new Set(api.requests.map((r) => `${r.url} ${r.key} ${r.auth}`))).toEqual(
        new Set([`/orders/ord_42/packed packed:${pick.body.id} Bearer of_test_warehouse`]),
      );

      // A definite refusal (the order does not wait for packing) is never sent again.
      const refusing = await callbackServer([422]);
      sims.provider('warehouse').configure({ WAREHOUSE_CALLBACK_URL: refusing.url });
      await providerCall('warehouse', 'POST', '/v1/picks', {
        body: { reference: 'ord_43', lines: [{ sku: 'TEE-BLK-M', quantity: 1 }] },
        key: 'pick:ord_43',
      });
      await new Promise((r) => setTimeout(r, 2_500));
      expect(refusing.requests).toHaveLength(1);
      refusing.server.close();
    } finally {
      api.server.close();
      sims.provider('warehouse').configure({ WAREHOUSE_CALLBACK_URL: '', WAREHOUSE_CALLBACK_API_KEY: '' });
    }
  }, 30_000);
});
