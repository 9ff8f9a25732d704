/**
 * The API app for e2e suites that need no worker: configuration for a suite's own database and task
 * queue, an initialised app for supertest, and a free TCP port.
 */
import type { NestExpressApplication } from '@nestjs/platform-express';
import { inject } from 'vitest';
import { createApiApp } from '../../src/bootstrap.js';
import { loadConfig, type AppConfig } from '../../src/config/config.js';

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

export { freePort } from './ports.js';
