/**
 * The whole order path in one test process, with real parts: the Nest API (supertest), the Temporal workers (the
 * order task queue's and one per provider) on their own task queues of the shared dev server, a fresh PostgreSQL
 * database, and the simulator of every provider of providers/index.ts over real HTTP on a free port. It starts
 * from the stack definition the launchers use (scripts/lib/stack-definition.ts: the same environment).
 */
import { isTerminalStatus } from '../../workflows/order-fulfilment.contract.js';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { inject } from 'vitest';
import { createActivities } from '../../activities/index.js';
import type { StepDefinition } from '../../activities/kit/define.js';
import { PROVIDER_LIST } from '../../providers/index.js';
import {
  startSimulators,
  type RunningSimulator,
  type RunningSimulators,
} from '../../simulators/shared/simulator-server.js';
import { serviceEnvironment, testProviderApiKeys } from '../../scripts/lib/stack-definition.js';
import { createProviderClients } from '../../src/worker/provider-clients.js';
import { loadWorkerConfig, type WorkerConfig } from '../../src/worker/worker-config.js';
import { IdempotencyService } from '../../src/idempotency/idempotency.service.js';
import { createApiApp } from '../../src/bootstrap.js';
import type { AppConfig } from '../../src/config/config.js';
import { createOrderWorkers, type OrderWorkers } from '../../src/worker/order-worker.js';
import { api as authedApi, testKeys } from './api-keys.js';
import { seedTestCatalogue } from './fixtures.js';
import { createTestDatabase, type TestDatabase } from './postgres.js';

/**
 * A running stack. `http` is a supertest agent on the API with the `shop` test key, `ops` one with the operator key,
 * `as(key)` one with any key (see test/helpers/api-keys.ts).
 */
export interface TestStack {
  config: WorkerConfig;
  /**
   * The environment the stack's services read (database, Temporal, task queue, simulator URL, provider keys and the
   * overrides): hand it to a child process (a worker, a fault fixture) to join this stack.
   */
  env: Record<string, string>;
  db: TestDatabase;
  /** The simulator server: every provider under `/<name>`. */
  sims: RunningSimulators;
  /** The email, accounting and carrier simulators (shortcuts for `sims.provider(name)`). */
  email: RunningSimulator;
  accounting: RunningSimulator;
  carrier: RunningSimulator;
  /** The warehouse simulator: it reports picks packed to this stack's API (`configure` its settings). */
  warehouse: RunningSimulator;
  /** The payments simulator (test tokens `pm_card_ok`, `pm_card_declined`, …). */
  payments: RunningSimulator;
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
  /**
   * Run a Worker in this process (default true). Fault tests run theirs as child processes. The simulated warehouse
   * reports every pick packed after 200 ms (`warehouse.configure({ WAREHOUSE_PACK_DELAY_MS: '0' })` turns it off).
   */
  worker?: boolean;
  /** The step registry the worker's activities run (default: the registry); the API plans with the registry. */
  steps?: readonly StepDefinition[];
}

/** Starts the stack. */
export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const overrides = options.overrides ?? {};
  const db = await createTestDatabase();
  await seedTestCatalogue(db.prisma);
  const apiKeys = testProviderApiKeys(PROVIDER_LIST);
  const sims = await startSimulators(PROVIDER_LIST, { apiKeys });
  const env: Record<string, string> = {
    ...serviceEnvironment({
      databaseUrl: db.url,
      temporalAddress: inject('temporalAddress'),
      taskQueue: `e2e-${randomUUID()}`,
      simulatorUrl: sims.url,
      providerApiKeys: apiKeys,
    }),
    PROVIDER_TIMEOUT_MS: '2000',
    RECONCILE_INTERVAL_MS: '0',
    LOG_LEVEL: 'warn',
    ...(overrides as Record<string, string>),
  };
  const config = loadWorkerConfig({ ...process.env, ...env });

  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
  const workers: OrderWorkers | undefined =
    options.worker === false
      ? undefined
      : await createOrderWorkers({
          connection,
          namespace: config.TEMPORAL_NAMESPACE,
          taskQueue: config.TEMPORAL_TASK_QUEUE,
          activities: createActivities(
            {
              db: db.sql,
              providers: createProviderClients(config),
              idempotencyRecords: new IdempotencyService(db.prisma, db.sql, config),
              settings: { claimLeaseMs: config.CLAIM_LEASE_MS },
            },
            options.steps,
          ),
        });
  const running = workers?.run();

  const api = await createApiApp({ config, shutdownHooks: false });
  await api.init();
  // The simulated warehouse reports orders packed over real HTTP: a server of its own on a free port serves the API's
  // app for it (the app's own listen stays free for the suites that call it).
  const callbackServer = createServer(api.getHttpAdapter().getInstance());
  await new Promise<void>((resolve) => callbackServer.listen(0, '127.0.0.1', resolve));
  sims.provider('warehouse').configure({
    WAREHOUSE_CALLBACK_URL: `http://127.0.0.1:${(callbackServer.address() as AddressInfo).port}`,
    WAREHOUSE_CALLBACK_API_KEY: testKeys().warehouse.key,
    WAREHOUSE_PACK_DELAY_MS: '200',
  });
  const http = authedApi(api);
  const operator = authedApi(api, testKeys().operator.key);
  const client = new Client({ connection: await Connection.connect({ address: config.TEMPORAL_ADDRESS }) });

  return {
    config,
    env,
    db,
    sims,
    email: sims.provider('email'),
    accounting: sims.provider('accounting'),
    carrier: sims.provider('carrier'),
    warehouse: sims.provider('warehouse'),
    payments: sims.provider('payments'),
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
      callbackServer.closeAllConnections();
      await new Promise((resolve) => callbackServer.close(resolve));
      await api.close();
      workers?.shutdown();
      await running;
      await connection.close();
      await client.connection.close();
      await sims.close();
      await db.drop();
    },
  };
}

/**
 * Polls `GET /orders/:id` (operator key) every 50 ms until `ok` holds for its body.
 * @throws Error naming the order's last status after `timeoutMs` (default 30 s).
 */
export async function waitForOrderBody(
  stack: Pick<TestStack, 'ops'>,
  id: string,
  ok: (order: Record<string, unknown>) => boolean,
  timeoutMs = 30_000,
): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await stack.ops.get(`/orders/${id}`).expect(200);
    if (ok(res.body)) return res.body;
    if (Date.now() > deadline) throw new Error(`order ${id}: still ${res.body.status} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
