/**
 * The carrier simulator's shipment API over raw HTTP: create with a tracking number, read back, validation,
 * idempotency replay and key reuse, and the shared faults on this route.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  newTrackingNumber,
  startCarrierSimulator,
  type RunningCarrierSimulator,
} from '../../../simulators/carrier/carrier-simulator.js';

const API_KEY = 'carrier-key';
const shipment = {
  reference: 'ord_42',
  recipient: { email: 'ada@example.com', name: 'Ada Lovelace' },
  items: [
    { sku: 'TEE-BLK-M', quantity: 2 },
    { sku: 'MUG-WHT', quantity: 1 },
  ],
};

describe('carrier simulator', () => {
  let sim: RunningCarrierSimulator;

  async function post(key: string | undefined, body: unknown, token = API_KEY) {
    const headers: Record<string, string> = { 'content-type': 'application/json', authorization: `Bearer ${token}` };
    if (key !== undefined) headers['idempotency-key'] = key;
    const res = await fetch(`${sim.url}/v1/shipments`, { method: 'POST', headers, body: JSON.stringify(body) });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  }

  beforeAll(async () => {
    sim = await startCarrierSimulator({ apiKey: API_KEY });
  });
  afterAll(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.reset();
  });

  it('creates a shipment (201) with an id and a tracking number, one shipment.created effect', async () => {
    const created = await post('shipment:ord_42', shipment);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^shp_[0-9a-f]{24}$/),
      trackingNumber: expect.stringMatching(/^1Z[0-9A-Z]{16}$/),
      status: 'label_created',
      reference: 'ord_42',
      idempotencyKey: 'shipment:ord_42',
    });
    expect(sim.ledger.effects().map((e) => [e.key, e.kind])).toEqual([['shipment:ord_42', 'shipment.created']]);

    const read = await fetch(`${sim.url}/v1/shipments/${created.body.id}`, {
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    expect(read.status).toBe(200);
    expect(await read.json()).toEqual({
      ...shipment,
      id: created.body.id,
      trackingNumber: created.body.trackingNumber,
      status: 'label_created',
      idempotencyKey: 'shipment:ord_42',
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    });
    expect(sim.shipments()).toHaveLength(1);
  });

  it('answers 404 problem+json for an unknown shipment, and 401 without the bearer token', async () => {
    const missing = await fetch(`${sim.url}/v1/shipments/shp_missing`, {
      headers: { authorization: `Bearer ${API_KEY}` },
    });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect((await post('k-auth', shipment, 'wrong')).status).toBe(401);
    expect(sim.ledger.effects()).toHaveLength(0);
  });

  it('replays the same key with the same id and tracking number, and no second shipment', async () => {
    const first = await post('k1', shipment);
    const again = await post('k1', shipment);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(sim.ledger.count('k1')).toBe(1);
    expect(sim.shipments()).toHaveLength(1);
  });

  it('gives each new key its own shipment and tracking number', async () => {
    const a = await post('k2', shipment);
    const b = await post('k3', shipment);
    expect(b.body.id).not.toBe(a.body.id);
    expect(b.body.trackingNumber).not.toBe(a.body.trackingNumber);
  });

  it('answers 422 for the same key with a different payload, and 400 without a key', async () => {
    await post('k4', shipment);
    const reused = await post('k4', { ...shipment, reference: 'ord_43' });
    expect(reused.status).toBe(422);
    expect(reused.body.type).toContain('idempotency-key-reused');
    expect((await post(undefined, shipment)).status).toBe(400);
    expect(sim.ledger.count('k4')).toBe(1);
  });

  it.each([
    ['no items', { ...shipment, items: [] }],
    ['a zero quantity', { ...shipment, items: [{ sku: 'TEE-BLK-M', quantity: 0 }] }],
    ['a fractional quantity', { ...shipment, items: [{ sku: 'TEE-BLK-M', quantity: 1.5 }] }],
    ['a bad recipient email', { ...shipment, recipient: { email: 'nope' } }],
    ['no reference', { recipient: shipment.recipient, items: shipment.items }],
  ])('answers 422 problem+json for %s, with no effect', async (_name, body) => {
    const answer = await post('bad', body);
    expect(answer.status).toBe(422);
    expect(answer.body).toMatchObject({ status: 422, detail: expect.any(String), errors: expect.any(Array) });
    expect(sim.ledger.effects()).toHaveLength(0);
  });

  it('honours the faults: 503 without an effect, drop-response with one effect replayed on retry', async () => {
    sim.injectFault({ mode: 'unavailable', keyPrefix: 'shipment:' });
    expect((await post('shipment:f1', shipment)).status).toBe(503);
    expect(sim.ledger.count('shipment:f1')).toBe(0);

    sim.injectFault({ mode: 'drop-response' });
    await expect(post('shipment:f1', shipment)).rejects.toThrow();
    expect(sim.ledger.count('shipment:f1')).toBe(1);
    const retry = await post('shipment:f1', shipment);
    expect(retry.status).toBe(201);
    expect(retry.headers.get('idempotent-replayed')).toBe('true');
    expect(retry.body.trackingNumber).toBe(sim.shipments()[0]?.trackingNumber);
    expect(sim.ledger.count('shipment:f1')).toBe(1);
  });

  it('newTrackingNumber yields 1Z + 16 upper-case alphanumerics', () => {
    for (let i = 0; i < 20; i++) expect(newTrackingNumber()).toMatch(/^1Z[0-9A-Z]{16}$/);
  });
});
