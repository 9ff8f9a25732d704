/**
 * Vitest global setup: one PostgreSQL template database and one Temporal dev server for all suites.
 *
 * PostgreSQL: `TEST_DATABASE_URL` (a URL to any database on the server, e.g.
 * `postgresql://postgres@127.0.0.1:5432/postgres`) when set; otherwise an embedded PostgreSQL in
 * `.data/test-postgres`. A template database gets every migration through `prisma migrate deploy`
 * (the same command production uses) and the test API clients with their keys ({@link TestApiKeys}); suites clone
 * it with `CREATE DATABASE ... TEMPLATE`, so every suite's database knows the same keys.
 *
 * Temporal: `TEMPORAL_ADDRESS` (and `TEMPORAL_UI_URL`) when set; otherwise `TestWorkflowEnvironment.createLocal` on
 * the project's Temporal CLI (TEMPORAL_CLI_PATH, PATH, .tools, or a Go build; see scripts/lib/temporal-cli.ts), with
 * its UI on a free port.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { TestProject } from 'vitest/node';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import getPort from 'get-port';
import { SEARCH_ATTRIBUTES } from '../../workflows/order-fulfilment.contract.js';
import { createTestApiKeys, type TestApiKeys } from './api-keys.js';
import { adminQuery, databaseUrl, startTestPostgres } from './postgres.js';

const run = promisify(execFile);

declare module 'vitest' {
  export interface ProvidedContext {
    /** URL of a maintenance database on the test PostgreSQL server. */
    pgAdminUrl: string;
    /** Name of the migrated template database. */
    templateDatabase: string;
    /** host:port of the Temporal frontend. */
    temporalAddress: string;
    /** The Temporal UI's base URL (the dev server's own UI, or TEMPORAL_UI_URL with TEMPORAL_ADDRESS). */
    temporalUiUrl: string;
    /** The API keys stored in the template database (so in every suite's database). */
    apiKeys: TestApiKeys;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const pg = await startTestPostgres();
  const templateDatabase = `of_template_${process.pid}`;
  await adminQuery(pg.adminUrl, `DROP DATABASE IF EXISTS "${templateDatabase}"`);
  await adminQuery(pg.adminUrl, `CREATE DATABASE "${templateDatabase}"`);
  await run('npx', ['prisma', 'migrate', 'deploy'], {
    env: { ...process.env, DATABASE_URL: databaseUrl(pg.adminUrl, templateDatabase) },
  });
  const apiKeys = await createTestApiKeys(databaseUrl(pg.adminUrl, templateDatabase));

  let env: TestWorkflowEnvironment | undefined;
  let temporalAddress = process.env.TEMPORAL_ADDRESS;
  let temporalUiUrl = process.env.TEMPORAL_UI_URL ?? '';
  if (!temporalAddress) {
    const { temporalServerExecutable } = await import('../../scripts/lib/temporal-cli.js');
    // The dev server's own UI, for the Temporal UI's browser test (test/e2e/temporal-ui.e2e-spec.ts).
    const uiPort = await getPort();
    env = await TestWorkflowEnvironment.createLocal({
      server: {
        executable: await temporalServerExecutable(),
        searchAttributes: Object.values(SEARCH_ATTRIBUTES),
        ui: true,
        uiPort,
        extraArgs: ['--log-level', 'error'],
      },
    });
    temporalAddress = env.address;
    temporalUiUrl = `http://127.0.0.1:${uiPort}`;
  }

  project.provide('pgAdminUrl', pg.adminUrl);
  project.provide('templateDatabase', templateDatabase);
  project.provide('temporalAddress', temporalAddress);
  project.provide('temporalUiUrl', temporalUiUrl);
  project.provide('apiKeys', apiKeys);

  return async () => {
    await env?.teardown();
    await adminQuery(pg.adminUrl, `DROP DATABASE IF EXISTS "${templateDatabase}" WITH (FORCE)`);
    await pg.stop();
  };
}
