/**
 * The whole order path in one test process, with real parts: the Nest API (supertest), a Temporal
 * Worker on its own task queue of the shared dev server, a fresh PostgreSQL database, and the three provider
 * simulators (email, accounting, carrier) over real HTTP on free ports.
 */
import { isTerminalStatus } from '../../workflows/order-fulfilment.contract.js';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { inject } from 'vitest';
import { createActivities } from '../../activities/index.js';
import { startAccountingSimulator } from '../../simulators/accounting/accounting-simulator.js';
import { startCarrierSimulator } from '../../simulators/carrier/carrier-simulator.js';
import { startEmailSimulator } from '../../simulators/email/email-simulator.js';
import type { RunningSimulator } from '../../simulators/shared/idempotent-simulator.js';
import { IdempotencyService } from '../../src/idempotency/idempotency.service.js';
import { createApiApp } from '../../src/bootstrap.js';
import { loadConfig, type AppConfig } from '../../src/config/config.js';
import { HttpAccountingProvider } from '../../src/providers/http-accounting-provider.js';
import { HttpCarrierProvider } from '../../src/providers/http-carrier-provider.js';
import { HttpEmailProvider } from '../../src/providers/http-email-provider.js';
import { createOrderWorker } from '../../src/worker/order-worker.js';
import { api as authedApi, testKeys } from './api-keys.js';
import { seedTestCatalogue } from './fixtures.js';
import { createTestDatabase, type TestDatabase } from './postgres.js';

/**
 * A running stack. `http` is a supertest agent on the API with the `shop` test key, `ops` one with the operator key,
 * `as(key)` one with any key (see test/helpers/api-keys.ts).
 */
export interface TestStack {
  config: AppConfig;
  db: TestDatabase;
  email: RunningSimulator;
  accounting: RunningSimulator;
  carrier: RunningSimulator;
  api: NestExpressApplication;
  http: ReturnType<typeof authedApi>;
  /** An agent with the `operator` test key (operator retries, any client's order). */
  ops: ReturnType<typeof authedApi>;
  as(key: string): ReturnType<typeof authedApi>;
  client: Client;
  /** Polls GET /orders/:id (with the operator key) until the status is terminal; returns the last body. */
  waitForOrder(id: string, timeoutMs?: number): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/** Options of startTestStack. */
export interface TestStackOptions {
  /** Configuration overrides (e.g. RECONCILE_INTERVAL_MS), as environment strings. */
  overrides?: Partial<Record<keyof AppConfig, string>>;
  /** Run a Worker in this process (default true). Fault tests run theirs as child processes. */
  worker?: boolean;
}

/** Starts the stack. */
export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const overrides = options.overrides ?? {};
  const db = await createTestDatabase();
  await seedTestCatalogue(db.prisma);
  const email = await startEmailSimulator({ apiKey: 'test-email-key' });
  const accounting = await startAccountingSimulator({ apiKey: 'test-accounting-key' });
  const carrier = await startCarrierSimulator({ apiKey: 'test-carrier-key' });
  const config = loadConfig({
    ...process.env,
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: `e2e-${randomUUID()}`,
    EMAIL_PROVIDER_URL: email.url,
    EMAIL_PROVIDER_API_KEY: 'test-email-key',
    ACCOUNTING_PROVIDER_URL: accounting.url,
    ACCOUNTING_PROVIDER_API_KEY: 'test-accounting-key',
    CARRIER_PROVIDER_URL: carrier.url,
    CARRIER_PROVIDER_API_KEY: 'test-carrier-key',
    PROVIDER_TIMEOUT_MS: '2000',
    RECONCILE_INTERVAL_MS: '0',
    LOG_LEVEL: 'warn',
    ...overrides,
  });

  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
  const worker: Worker | undefined =
    options.worker === false
      ? undefined
      : await createOrderWorker({
          connection,
          namespace: config.TEMPORAL_NAMESPACE,
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          activities: createActivities({
            db: db.sql,
            email: new HttpEmailProvider({
              baseUrl: email.url,
              apiKey: 'test-email-key',
              timeoutMs: config.PROVIDER_TIMEOUT_MS,
            }),
            accounting: new HttpAccountingProvider({
              baseUrl: accounting.url,
              apiKey: 'test-accounting-key',
              timeoutMs: config.PROVIDER_TIMEOUT_MS,
            }),
            carrier: new HttpCarrierProvider({
              baseUrl: carrier.url,
              apiKey: 'test-carrier-key',
              timeoutMs: config.PROVIDER_TIMEOUT_MS,
            }),
            idempotencyRecords: new IdempotencyService(db.prisma, config),
            settings: { claimLeaseMs: config.CLAIM_LEASE_MS },
          }),
        });
  const running = worker?.run();

  const api = await createApiApp({ config, shutdownHooks: false });
  await api.init();
  const http = authedApi(api);
  const operator = authedApi(api, testKeys().operator.key);
  const client = new Client({ connection: await Connection.connect({ address: config.TEMPORAL_ADDRESS }) });

  return {
    config,
    db,
    email,
    accounting,
    carrier,
    api,
    http,
    ops: operator,
    as: (key) => authedApi(api, key),
    client,
    async waitForOrder(id, timeoutMs = 45_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const res = await operator.get(`/orders/${id}`);
        if (res.status !== 200) throw new Error(`GET /orders/${id} answered ${res.status}: ${res.text}`);
        if (isTerminalStatus(res.body.status as string)) return res.body;
        if (Date.now() > deadline) throw new Error(`order ${id} still ${res.body.status} after ${timeoutMs} ms`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async close() {
      await api.close();
      worker?.shutdown();
      await running;
      await connection.close();
      await client.connection.close();
      await email.close();
      await accounting.close();
      await carrier.close();
      await db.drop();
    },
  };
}
