/**
 * PostgreSQL for tests: the server named by TEST_DATABASE_URL, or an embedded PostgreSQL, plus
 * per-suite databases cloned from the migrated template.
 */
import { randomBytes } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import getPort from 'get-port';
import pg from 'pg';
import { inject } from 'vitest';
import { preparePostgres, waitForPostgres } from '../../scripts/lib/embedded-pg.js';
import { spawnChild, stop } from '../../scripts/lib/processes.js';
import { createSqlClient, type PgSqlClient } from '../../src/database/sql-client.js';
import { createPrismaClient, type PrismaClient } from '../../src/prisma/prisma.js';

/** Replaces the database name of a PostgreSQL URL. */
export function databaseUrl(adminUrl: string, database: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** Runs one statement on a fresh connection (CREATE/DROP DATABASE cannot run in a pool transaction). */
export async function adminQuery(adminUrl: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** Starts (or adopts) the PostgreSQL server the tests use. */
export async function startTestPostgres(): Promise<{ adminUrl: string; stop(): Promise<void> }> {
  if (process.env.TEST_DATABASE_URL) {
    return { adminUrl: process.env.TEST_DATABASE_URL, stop: async () => {} };
  }
  // Started as `npm start` starts its own (scripts/lib/embedded-pg.ts): as the `postgres` OS user when we are root,
  // with its binaries and, for a checkout that user cannot enter (root in a 0700 home), its data under /var/tmp.
  // One fixed folder per checkout, emptied at each start, so no run leaves a cluster behind for long.
  const port = await getPort();
  const dir = path.resolve('.data', 'test-postgres');
  await mkdir(path.dirname(dir), { recursive: true });
  const cmd = await preparePostgres({
    ...{ dataDir: dir, checkout: dir, port, user: 'postgres', password: 'postgres' },
    ...{ log: () => {}, fresh: true },
  });
  const child = spawnChild(cmd.file, cmd.args, { ...cmd.runAs, env: cmd.env });
  const stopServer = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT'); // a fast shutdown
    await stop(child);
  };
  await waitForPostgres(cmd, 60_000, child).catch(async (error: unknown) => {
    await stopServer();
    throw error;
  });
  return {
    adminUrl: `postgresql://postgres:postgres@127.0.0.1:${port}/postgres`,
    stop: stopServer,
  };
}

/** A database of one suite: cloned from the template, dropped at the end. */
export interface TestDatabase {
  url: string;
  /** For the tests' own setup and assertions. */
  prisma: PrismaClient;
  /** The activities' database port as the worker wires it (node-postgres, src/database/sql-client.ts). */
  sql: PgSqlClient;
  drop(): Promise<void>;
}

/** Creates a fresh, fully migrated database for the calling suite. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const adminUrl = inject('pgAdminUrl');
  const name = `of_test_${randomBytes(5).toString('hex')}`;
  await adminQuery(adminUrl, `CREATE DATABASE "${name}" TEMPLATE "${inject('templateDatabase')}"`);
  const url = databaseUrl(adminUrl, name);
  const prisma = createPrismaClient(url);
  const sql = createSqlClient(url, () => undefined, 4);
  return {
    url,
    prisma,
    sql: sql.client,
    async drop() {
      await prisma.$disconnect();
      await sql.close();
      await adminQuery(adminUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    },
  };
}
