/**
 * E2E: the API while PostgreSQL cannot be reached. The app talks to its database through a TCP proxy that the test
 * cuts and restores, a real outage for the app (connections reset, new ones refused). While it is cut, requests get
 * 503 `service-unavailable` problem+json with `Retry-After` (not 500), and change nothing; once it is back, the same
 * request with the same Idempotency-Key is accepted once.
 */
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import type { NestExpressApplication } from '@nestjs/platform-express';
import getPort from 'get-port';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { api, apiTestConfig, PROBLEM_JSON, startApiApp } from '../helpers/api-app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

/** A TCP proxy to PostgreSQL that can be cut (every connection reset, the port closed) and restored. */
class CuttableProxy {
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();

  constructor(
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  async up(): Promise<void> {
    const server = net.createServer((client) => {
      const upstream = net.connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => undefined);
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', resolve);
    });
    this.server = server;
  }

  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const s of this.sockets) s.resetAndDestroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}

const order = { customer: { email: 'outage@example.com' }, lines: [{ sku: 'SKU-MUG', quantity: 1 }] };
let db: TestDatabase;
let app: NestExpressApplication;
let proxy: CuttableProxy;

beforeAll(async () => {
  db = await createTestDatabase();
  await db.prisma.product.create({
    data: { sku: 'SKU-MUG', name: 'Mug', priceMinor: 1250, currency: 'EUR', onHand: 100 },
  });
  const direct = new URL(db.url);
  proxy = new CuttableProxy(await getPort(), { host: direct.hostname, port: Number(direct.port || 5432) });
  await proxy.up();
  const viaProxy = new URL(db.url);
  viaProxy.hostname = '127.0.0.1';
  viaProxy.port = String(proxy.port);
  app = await startApiApp(apiTestConfig(viaProxy.toString(), `db-outage-${randomUUID()}`));
});

afterAll(async () => {
  // Bounded even when the pool keeps a connection lost in the outage (PRISMA_DISCONNECT_TIMEOUT_MS).
  await app?.close();
  await proxy?.cut();
  await db?.drop();
});

describe('a PostgreSQL outage', () => {
  it('answers 503 problem+json with Retry-After, changes nothing, and accepts the same request once it is back', async () => {
    const before = await api(app).post('/orders').set('Idempotency-Key', randomUUID()).send(order);
    expect(before.status).toBe(202);

    await proxy.cut();
    const key = randomUUID();
    const during = await api(app).post('/orders').set('Idempotency-Key', key).send(order);
    expect(during.status).toBe(503);
    expect(during.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(during.headers['retry-after']).toBe('5');
    expect(during.body).toMatchObject({
      type: 'https://order-fulfilment.dev/problems/service-unavailable',
      status: 503,
      instance: '/orders',
    });
    expect(during.body.detail).toMatch(/database is unavailable/);
    const read = await api(app).get(`/orders/${before.body.id as string}`);
    expect(read.status).toBe(503);
    expect(read.headers['retry-after']).toBe('5');

    await proxy.up();
    // The pool may still hold connections that died with the proxy: a client repeats with the same key.
    let after = await api(app).post('/orders').set('Idempotency-Key', key).send(order);
    for (let i = 0; i < 5 && after.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 200));
      after = await api(app).post('/orders').set('Idempotency-Key', key).send(order);
    }
    expect(after.status).toBe(202);
    const again = await api(app).post('/orders').set('Idempotency-Key', key).send(order);
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(after.body.id);
    // The first order and the one accepted after the outage: the 503 left nothing behind.
    expect(await db.prisma.order.count()).toBe(2);
  });
});
