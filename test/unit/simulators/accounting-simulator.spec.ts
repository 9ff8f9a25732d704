/**
 * The accounting simulator's invoice API over raw HTTP: PUT create/replace by externalId, validation,
 * idempotency replay and key reuse.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  startAccountingSimulator,
  type RunningAccountingSimulator,
} from '../../../simulators/accounting/accounting-simulator.js';

const invoice = {
  externalId: 'INV-000042',
  orderId: 'ord_42',
  customerEmail: 'ada@example.com',
  currency: 'EUR',
  totalMinor: 2_598,
  issuedAt: '2026-11-29T10:00:00.000Z',
  lines: [{ sku: 'SKU-1', quantity: 2, unitPriceMinor: 1_299 }],
};

describe('accounting simulator', () => {
  let sim: RunningAccountingSimulator;

  async function put(key: string | undefined, body: unknown, externalId = invoice.externalId) {
    const headers: Record<string, string> = { 'content-type': 'application/json', authorization: 'Bearer t' };
    if (key !== undefined) headers['idempotency-key'] = key;
    const res = await fetch(`${sim.url}/v1/invoices/${encodeURIComponent(externalId)}`, {
      method: 'PUT',
      headers,
      body: JSON.stringify(body),
    });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    return { status: res.status, headers: res.headers, body: (await res.json()) as any };
  }

  beforeAll(async () => {
    sim = await startAccountingSimulator();
  });
  afterAll(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.reset();
  });

  it('creates (201) then replaces (200) by externalId with a stable id and growing version', async () => {
    const created = await put('k1', invoice);
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.stringMatching(/^acc_inv_[0-9a-f]+$/),
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

    expect(sim.ledger.effects().map((e) => [e.key, e.kind])).toEqual([
      ['k1', 'invoice.created'],
      ['k2', 'invoice.updated'],
    ]);

    const read = await fetch(`${sim.url}/v1/invoices/INV-000042`, { headers: { authorization: 'Bearer t' } });
    expect(read.status).toBe(200);
    expect(await read.json()).toMatchObject({ id: created.body.id, version: 2, totalMinor: 1_299 });
  });

  it('replays the same key with the original status and no new version', async () => {
    const first = await put('k3', invoice);
    const again = await put('k3', invoice);
    expect(again.status).toBe(201);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect(sim.invoice('INV-000042')?.version).toBe(1);
  });

  it('answers 422 for the same key with a different payload', async () => {
    await put('k4', invoice);
    const answer = await put('k4', { ...invoice, totalMinor: 1 });
    expect(answer.status).toBe(422);
    expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(sim.ledger.count('k4')).toBe(1);
  });

  it('answers 400 without an Idempotency-Key', async () => {
    const answer = await put(undefined, invoice);
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ status: 400, title: expect.any(String), detail: expect.any(String) });
  });

  it.each([
    ['a float amount', { ...invoice, totalMinor: 25.98 }],
    ['a negative amount', { ...invoice, totalMinor: -1 }],
    ['a bad currency', { ...invoice, currency: 'EURO' }],
    ['a zero quantity', { ...invoice, lines: [{ sku: 'SKU-1', quantity: 0, unitPriceMinor: 1 }] }],
    ['a non-ISO issuedAt', { ...invoice, issuedAt: 'yesterday' }],
    ['a body externalId other than the path', { ...invoice, externalId: 'INV-OTHER' }],
  ])('answers 422 problem+json for %s, with no effect', async (_name, body) => {
    const answer = await put('bad', body);
    expect(answer.status).toBe(422);
    expect(answer.body).toMatchObject({ status: 422, detail: expect.any(String) });
    expect(sim.ledger.effects()).toHaveLength(0);
  });
});
