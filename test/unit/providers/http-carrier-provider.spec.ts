/**
 * HttpCarrierProvider against the real carrier simulator over HTTP (in-process, random port).
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ShipmentRequest } from '../../../activities/ports.js';
import { providerError } from '../../helpers/provider-error.js';
import { HttpCarrierProvider } from '../../../src/providers/http-carrier-provider.js';
import { startCarrierSimulator, type RunningCarrierSimulator } from '../../../simulators/carrier/carrier-simulator.js';

const API_KEY = 'test-carrier-key';
const request: ShipmentRequest = {
  reference: 'ord_42',
  recipient: { email: 'ada@example.com', name: 'Ada Lovelace' },
  items: [
    { sku: 'TEE-BLK-M', quantity: 2 },
    { sku: 'MUG-WHT', quantity: 1 },
  ],
};

describe('HttpCarrierProvider', () => {
  let sim: RunningCarrierSimulator;
  let client: HttpCarrierProvider;

  beforeAll(async () => {
    sim = await startCarrierSimulator({ apiKey: API_KEY });
    client = new HttpCarrierProvider({ baseUrl: sim.url, apiKey: API_KEY, timeoutMs: 2_000 });
  });
  afterAll(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.reset();
  });

  it('creates a shipment and records one shipment.created effect', async () => {
    const result = await client.createShipment(request, 'shipment:1');

    expect(result).toEqual({
      shipmentId: expect.stringMatching(/^shp_[0-9a-f]+$/),
      trackingNumber: expect.stringMatching(/^1Z[0-9A-Z]{16}$/),
    });
    const effects = sim.ledger.effects('shipment:1');
    expect(effects).toHaveLength(1);
    expect(effects[0]).toMatchObject({ kind: 'shipment.created', key: 'shipment:1', request });
    expect(sim.shipments()).toEqual([
      expect.objectContaining({ id: result.shipmentId, trackingNumber: result.trackingNumber, ...request }),
    ]);
  });

  it('leaves out a recipient name that is not given', async () => {
    await client.createShipment({ ...request, recipient: { email: 'ada@example.com' } }, 'shipment:1b');
    expect(sim.shipments()[0]?.recipient).toEqual({ email: 'ada@example.com' });
  });

  it('replays the same id and tracking number for the same key without a second effect', async () => {
    const first = await client.createShipment(request, 'shipment:2');
    const second = await client.createShipment(request, 'shipment:2');

    expect(second).toEqual(first);
    expect(sim.ledger.count('shipment:2')).toBe(1);
    expect(sim.shipments()).toHaveLength(1);
  });

  it('maps 503 to unavailable that did not act, and succeeds on retry', async () => {
    sim.injectFault({ mode: 'unavailable' });

    const error = await providerError(() => client.createShipment(request, 'shipment:3'));
    expect(error).toMatchObject({ kind: 'unavailable', status: 503, mayHaveActed: false });
    expect(sim.ledger.count('shipment:3')).toBe(0);

    await client.createShipment(request, 'shipment:3');
    expect(sim.ledger.count('shipment:3')).toBe(1);
  });

  it('maps 422 (invalid recipient, or an injected reject) to rejected with the problem detail', async () => {
    const invalid = await providerError(() =>
      client.createShipment({ ...request, recipient: { email: 'not-an-address' } }, 'shipment:4'),
    );
    expect(invalid).toMatchObject({ kind: 'rejected', status: 422, mayHaveActed: false });
    expect(invalid.message).toMatch(/recipient/);

    sim.injectFault({ mode: 'reject' });
    expect(await providerError(() => client.createShipment(request, 'shipment:4'))).toMatchObject({
      kind: 'rejected',
      status: 422,
    });
    expect(sim.ledger.count('shipment:4')).toBe(0);
  });

  it('maps 401 (wrong key, or an injected fault) to unauthorized', async () => {
    const wrongKey = new HttpCarrierProvider({ baseUrl: sim.url, apiKey: 'wrong', timeoutMs: 2_000 });
    const error = await providerError(() => wrongKey.createShipment(request, 'shipment:5'));
    expect(error).toMatchObject({ kind: 'unauthorized', status: 401 });

    sim.injectFault({ mode: 'unauthorized' });
    expect(await providerError(() => client.createShipment(request, 'shipment:5'))).toMatchObject({
      kind: 'unauthorized',
      status: 401,
    });
    expect(sim.ledger.count('shipment:5')).toBe(0);
  });

  it('after a dropped response (may have acted), a retry with the same key returns the same shipment', async () => {
    sim.injectFault({ mode: 'drop-response' });

    const error = await providerError(() => client.createShipment(request, 'shipment:6'));
    expect(error).toMatchObject({ kind: 'unavailable', status: undefined, mayHaveActed: true });
    expect(sim.ledger.count('shipment:6')).toBe(1);

    const result = await client.createShipment(request, 'shipment:6');
    expect(result).toEqual({
      shipmentId: sim.shipments()[0]?.id,
      trackingNumber: sim.shipments()[0]?.trackingNumber,
    });
    expect(sim.ledger.count('shipment:6')).toBe(1);
  });

  it('maps a timeout to unavailable; the in-flight retry is a conflict; a later retry replays', async () => {
    sim.injectFault({ mode: 'slow', delayMs: 400 });
    const impatient = new HttpCarrierProvider({ baseUrl: sim.url, apiKey: API_KEY, timeoutMs: 100 });

    const timeout = await providerError(() => impatient.createShipment(request, 'shipment:7'));
    expect(timeout).toMatchObject({ kind: 'unavailable', mayHaveActed: true });
    expect(timeout.message).toContain('timed out after 100 ms');

    const conflict = await providerError(() => client.createShipment(request, 'shipment:7'));
    expect(conflict).toMatchObject({ kind: 'conflict', status: 409, mayHaveActed: true });

    await expect.poll(() => sim.ledger.count('shipment:7'), { timeout: 2_000 }).toBe(1);
    const { shipmentId } = await client.createShipment(request, 'shipment:7');
    expect(shipmentId).toBe(sim.shipments()[0]?.id);
    expect(sim.ledger.count('shipment:7')).toBe(1);
  });

  it('maps a refused connection to unavailable that did not act', async () => {
    const gone = await startCarrierSimulator();
    const url = gone.url;
    await gone.close();
    const client2 = new HttpCarrierProvider({ baseUrl: url, apiKey: API_KEY, timeoutMs: 2_000 });

    const error = await providerError(() => client2.createShipment(request, 'shipment:8'));
    expect(error).toMatchObject({ kind: 'unavailable', status: undefined, mayHaveActed: false });
  });

  it('treats a 2xx answer without a tracking number as unavailable (may have acted)', async () => {
    const server = createServer((_req, res) => {
      res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 'shp_1' }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as AddressInfo;
      const odd = new HttpCarrierProvider({ baseUrl: `http://127.0.0.1:${port}`, apiKey: API_KEY, timeoutMs: 2_000 });
      const error = await providerError(() => odd.createShipment(request, 'shipment:9'));
      expect(error).toMatchObject({ kind: 'unavailable', status: 201, mayHaveActed: true });
      expect(error.message).toContain('without a shipment id and tracking number');
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
