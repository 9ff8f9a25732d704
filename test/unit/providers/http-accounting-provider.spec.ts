/**
 * HttpAccountingProvider against the real accounting simulator over HTTP (in-process, random port).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AccountingInvoice } from '../../../activities/ports.js';
import { providerError } from '../../helpers/provider-error.js';
import { HttpAccountingProvider } from '../../../src/providers/http-accounting-provider.js';
import {
  startAccountingSimulator,
  type RunningAccountingSimulator,
} from '../../../simulators/accounting/accounting-simulator.js';

const API_KEY = 'test-accounting-key';

function invoice(externalId: string, overrides: Partial<AccountingInvoice> = {}): AccountingInvoice {
  return {
    externalId,
    orderId: 'ord_1',
    customerEmail: 'ada@example.com',
    currency: 'EUR',
    totalMinor: 2_598,
    issuedAt: '2026-11-29T10:00:00.000Z',
    lines: [{ sku: 'SKU-1', quantity: 2, unitPriceMinor: 1_299 }],
    ...overrides,
  };
}

describe('HttpAccountingProvider', () => {
  let sim: RunningAccountingSimulator;
  let client: HttpAccountingProvider;

  beforeAll(async () => {
    sim = await startAccountingSimulator({ apiKey: API_KEY });
    client = new HttpAccountingProvider({ baseUrl: `${sim.url}/`, apiKey: API_KEY, timeoutMs: 2_000 });
  });
  afterAll(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.reset();
  });

  it('creates the invoice and records one invoice.created effect', async () => {
    const { accountingId } = await client.upsertInvoice(invoice('INV-000001'), 'invoice-sync:1');

    expect(accountingId).toMatch(/^acc_inv_[0-9a-f]+$/);
    expect(sim.ledger.effects('invoice-sync:1').map((e) => e.kind)).toEqual(['invoice.created']);
    expect(sim.invoice('INV-000001')).toMatchObject({ id: accountingId, version: 1, totalMinor: 2_598 });
  });

  it('replaces by externalId under a new key, keeping the accounting id', async () => {
    const first = await client.upsertInvoice(invoice('INV-000002'), 'invoice-sync:2a');
    const second = await client.upsertInvoice(invoice('INV-000002', { totalMinor: 1_299 }), 'invoice-sync:2b');

    expect(second.accountingId).toBe(first.accountingId);
    expect(sim.ledger.effects('invoice-sync:2b').map((e) => e.kind)).toEqual(['invoice.updated']);
    expect(sim.invoice('INV-000002')).toMatchObject({ version: 2, totalMinor: 1_299 });
  });

  it('replays the same id for the same key without a second effect', async () => {
    const first = await client.upsertInvoice(invoice('INV-000003'), 'invoice-sync:3');
    const second = await client.upsertInvoice(invoice('INV-000003'), 'invoice-sync:3');

    expect(second.accountingId).toBe(first.accountingId);
    expect(sim.ledger.count('invoice-sync:3')).toBe(1);
    expect(sim.invoice('INV-000003')?.version).toBe(1);
  });

  it('encodes the externalId in the path', async () => {
    const { accountingId } = await client.upsertInvoice(invoice('INV/2026 #4'), 'invoice-sync:4');
    expect(sim.invoice('INV/2026 #4')?.id).toBe(accountingId);
  });

  it('maps 503 to unavailable with no effect', async () => {
    sim.injectFault({ mode: 'unavailable' });
    const error = await providerError(() => client.upsertInvoice(invoice('INV-000005'), 'invoice-sync:5'));
    expect(error).toMatchObject({ kind: 'unavailable', status: 503 });
    expect(sim.ledger.count('invoice-sync:5')).toBe(0);
    expect(sim.invoice('INV-000005')).toBeUndefined();
  });

  it('maps 422 (invalid invoice) to rejected with the problem detail', async () => {
    const error = await providerError(() =>
      client.upsertInvoice(invoice('INV-000006', { currency: 'euro' }), 'invoice-sync:6'),
    );
    expect(error).toMatchObject({ kind: 'rejected', status: 422 });
    expect(error.message).toContain('ISO 4217');
    expect(sim.ledger.count('invoice-sync:6')).toBe(0);
  });

  it('maps 401 to unauthorized', async () => {
    const wrongKey = new HttpAccountingProvider({ baseUrl: sim.url, apiKey: 'nope', timeoutMs: 2_000 });
    const error = await providerError(() => wrongKey.upsertInvoice(invoice('INV-000007'), 'invoice-sync:7'));
    expect(error).toMatchObject({ kind: 'unauthorized', status: 401 });
    expect(sim.ledger.count('invoice-sync:7')).toBe(0);
  });

  it('after a dropped response, a retry with the same key returns the same id and exactly one effect', async () => {
    sim.injectFault({ mode: 'drop-response', keyPrefix: 'invoice-sync:8' });

    const error = await providerError(() => client.upsertInvoice(invoice('INV-000008'), 'invoice-sync:8'));
    expect(error.kind).toBe('unavailable');
    expect(sim.ledger.count('invoice-sync:8')).toBe(1);

    const { accountingId } = await client.upsertInvoice(invoice('INV-000008'), 'invoice-sync:8');
    expect(accountingId).toBe(sim.invoice('INV-000008')?.id);
    expect(sim.ledger.count('invoice-sync:8')).toBe(1);
    expect(sim.invoice('INV-000008')?.version).toBe(1);
  });

  it('maps a timeout to unavailable', async () => {
    sim.injectFault({ mode: 'slow', delayMs: 300 });
    const impatient = new HttpAccountingProvider({ baseUrl: sim.url, apiKey: API_KEY, timeoutMs: 50 });

    const error = await providerError(() => impatient.upsertInvoice(invoice('INV-000009'), 'invoice-sync:9'));
    expect(error.kind).toBe('unavailable');
    expect(error.message).toContain('timed out after 50 ms');

    // The provider still performed the write; the retry replays it.
    await expect.poll(() => sim.ledger.count('invoice-sync:9'), { timeout: 2_000 }).toBe(1);
    const { accountingId } = await client.upsertInvoice(invoice('INV-000009'), 'invoice-sync:9');
    expect(accountingId).toBe(sim.invoice('INV-000009')?.id);
    expect(sim.ledger.count('invoice-sync:9')).toBe(1);
  });
});
