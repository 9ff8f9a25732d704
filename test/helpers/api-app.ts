/**
 * The API app for e2e suites that need no worker: configuration for a suite's own database and task
 * queue, an initialised app for supertest, and a free TCP port.
 */
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Client, Connection } from '@temporalio/client';
import { inject } from 'vitest';
import { createApiApp } from '../../src/bootstrap.js';
import { loadConfig, type AppConfig } from '../../src/config/config.js';
import { api } from './api-keys.js';
import { createTestDatabase, type TestDatabase } from './postgres.js';

export { api, bearer, testKeys } from './api-keys.js';

/** `problem+json` content types (RFC 9457). */
export const PROBLEM_JSON = /^application\/problem\+json/;

/**
 * Configuration of a suite's API: its database, its task queue, the shared dev server, a fixed UI base URL,
 * no reconciler, silent logs. `overrides` are environment strings.
 */
export function apiTestConfig(
  databaseUrl: string,
  taskQueue: string,
  overrides: Record<string, string> = {},
): AppConfig {
  return loadConfig({
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: inject('temporalAddress'),
    TEMPORAL_TASK_QUEUE: taskQueue,
    TEMPORAL_UI_URL: 'http://temporal-ui.test:8233',
    RECONCILE_INTERVAL_MS: '0',
    LOG_LEVEL: 'silent',
    ...overrides,
  });
}

/** Creates and initialises the API (not listening: use `supertest(app.getHttpServer())`). */
export async function startApiApp(config: AppConfig): Promise<NestExpressApplication> {
  const instance = await createApiApp({ config, shutdownHooks: false });
  await instance.init();
  return instance;
}

/**
 * Waits until the start dispatcher has started the order's workflow (`orders.workflow_started_at` set).
 * @returns the recorded start time.
 * @throws Error when it is not set within `timeoutMs`.
 */
export async function waitForWorkflowStart(db: TestDatabase, orderId: string, timeoutMs = 15_000): Promise<Date> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const row = await db.prisma.order.findUniqueOrThrow({
      where: { id: orderId },
      select: { workflowStartedAt: true },
    });
    if (row.workflowStartedAt) return row.workflowStartedAt;
    if (Date.now() > deadline)
      throw new Error(`the workflow of order ${orderId} was not started within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The products a suite starts with (EUR unless given). */
export type SuiteProduct = { sku: string; name: string; priceMinor: number; onHand: number; currency?: string };

/**
 * One API e2e suite: its own database (seeded with `products`), its own task queue on the shared dev
 * server, the initialised app, a Temporal client, and any extra apps the suite starts (closed with it).
 */
export class ApiSuite {
  db!: TestDatabase;
  app!: NestExpressApplication;
  temporal!: Client;
  readonly extraApps: NestExpressApplication[] = [];

  constructor(readonly taskQueue: string) {}

  async open(products: SuiteProduct[]): Promise<this> {
    this.db = await createTestDatabase();
    await this.db.prisma.product.createMany({ data: products.map((p) => ({ currency: 'EUR', ...p })) });
    this.app = await startApiApp(this.config());
    this.temporal = new Client({ connection: await Connection.connect({ address: inject('temporalAddress') }) });
    return this;
  }

  /** The suite's configuration, with environment-string overrides. */
  config(overrides: Record<string, string> = {}): AppConfig {
    return apiTestConfig(this.db.url, this.taskQueue, overrides);
  }

  /**
   * A supertest agent on the suite's app (or `app`) that sends `key` (default: the `shop` test key) as
   * `Authorization: Bearer`.
   */
  http(key?: string, app: NestExpressApplication = this.app) {
    return api(app, key);
  }

  /** Ids of the workflows on this suite's task queue (dev-server visibility), sorted. */
  async workflowsOnQueue(): Promise<string[]> {
    const ids: string[] = [];
    for await (const wf of this.temporal.workflow.list({ query: `TaskQueue = "${this.taskQueue}"` })) {
      ids.push(wf.workflowId);
    }
    return ids.sort();
  }

  async close(): Promise<void> {
    for (const extra of this.extraApps) await extra.close();
    await this.app?.close();
    await this.temporal?.connection.close();
    await this.db?.drop();
  }
}
