/**
 * isDatabaseUnavailable on the errors Prisma (client engine, adapter-pg) and pg really throw: a closed port and a
 * server that answers are produced here, not described.
 */
import getPort from 'get-port';
import pg from 'pg';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { isDatabaseUnavailable } from '../../../src/common/database-errors.js';
import { createPgPool, createPrismaClient, PG_SESSION_LIMITS } from '../../../src/prisma/prisma.js';

const closed = async () => {
  const port = await getPort();
  return `postgresql://postgres@127.0.0.1:${port}/nothing`;
};
const clients: Array<{ $disconnect(): Promise<void> }> = [];
afterAll(async () => {
  for (const c of clients) await c.$disconnect().catch(() => undefined);
});

async function caught(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => expect.unreachable('the call should have failed'),
    (err: unknown) => err,
  );
}

describe('isDatabaseUnavailable', () => {
  it('is true for Prisma model queries and raw queries against a closed port', async () => {
    const prisma = createPrismaClient(await closed(), 1);
    clients.push(prisma);
    expect(isDatabaseUnavailable(await caught(prisma.order.findFirst()))).toBe(true);
    expect(isDatabaseUnavailable(await caught(prisma.$queryRaw`SELECT 1`))).toBe(true);
    expect(isDatabaseUnavailable(await caught(prisma.$transaction(async (tx) => tx.order.count())))).toBe(true);
  });

  it('is true for pg against a closed port', async () => {
    const refused = new pg.Client({ connectionString: await closed() });
    expect(isDatabaseUnavailable(await caught(refused.connect()))).toBe(true);
  });

  it('is true when no pooled connection is free to start a transaction in time (P2028)', async () => {
    const prisma = createPrismaClient(inject('pgAdminUrl'), 1);
    clients.push(prisma);
    // The pool's only connection is held for 600 ms; a transaction that may wait 100 ms for one gives up.
    const holder = prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT 1`;
      await new Promise((r) => setTimeout(r, 600));
    });
    await new Promise((r) => setTimeout(r, 100));
    const err = await caught(prisma.$transaction(async (tx) => tx.$queryRaw`SELECT 1`, { maxWait: 100 }));
    await holder;
    expect(err).toMatchObject({ code: 'P2028', message: expect.stringMatching(/Unable to start a transaction/) });
    expect(isDatabaseUnavailable(err)).toBe(true);
    // Another P2028 (a transaction that expired half-way) is not an outage.
    const expired = Object.assign(new Error('A commit cannot be executed on an expired transaction'), {
      code: 'P2028',
    });
    expect(isDatabaseUnavailable(expired)).toBe(false);
  });

  it('is false for errors of the request or the schema, and follows causes', () => {
    expect(isDatabaseUnavailable(Object.assign(new Error('unique'), { code: 'P2002' }))).toBe(false);
    expect(isDatabaseUnavailable(new TypeError('x is undefined'))).toBe(false);
    expect(isDatabaseUnavailable(null)).toBe(false);
    const sqlstate = (code: string) => Object.assign(new Error(code), { code });
    expect(isDatabaseUnavailable(sqlstate('42P01'))).toBe(false); // undefined_table
    expect(isDatabaseUnavailable(sqlstate('57P01'))).toBe(true); // admin_shutdown
    expect(isDatabaseUnavailable(sqlstate('08006'))).toBe(true); // connection_failure
    expect(isDatabaseUnavailable(new Error('wrapped', { cause: sqlstate('57P03') }))).toBe(true);
    const notAccepting = 'database "order_fulfilment" is not currently accepting connections';
    expect(isDatabaseUnavailable(Object.assign(new Error(notAccepting), { code: '55000' }))).toBe(true);
    expect(isDatabaseUnavailable(sqlstate('55000'))).toBe(false); // object_not_in_prerequisite_state, in general
    // pg-pool: no connection free (or made) within connectionTimeoutMillis.
    expect(isDatabaseUnavailable(new Error('timeout exceeded when trying to connect'))).toBe(true);
  });

  it('is true for a lock not obtained within lock_timeout and a statement cancelled by statement_timeout', async () => {
    // The service's pools bound every session (src/prisma/prisma.ts PG_SESSION_LIMITS): a real lock wait fails fast.
    const pool = createPgPool(inject('pgAdminUrl'), 2, () => undefined);
    const holder = await pool.connect();
    const waiter = await pool.connect();
    try {
      // An advisory lock: lock_timeout bounds every lock wait, without touching any table of anyone else's.
      await holder.query('BEGIN');
      await holder.query('SELECT pg_advisory_xact_lock(424242)');
      await waiter.query('BEGIN');
      const started = Date.now();
      const err = await waiter.query('SELECT pg_advisory_xact_lock(424242)').catch((e: unknown) => e);
      expect((err as { code?: string }).code).toBe('55P03');
      expect(Date.now() - started).toBeLessThan(PG_SESSION_LIMITS.lockTimeoutMs + 2_000);
      expect(isDatabaseUnavailable(err)).toBe(true);
      await waiter.query('ROLLBACK');
      const slow = await waiter.query('SELECT pg_sleep(30)').catch((e: unknown) => e);
      expect((slow as { code?: string }).code).toBe('57014');
      expect(isDatabaseUnavailable(slow)).toBe(true);
    } finally {
      await holder.query('ROLLBACK').catch(() => undefined);
      holder.release();
      waiter.release();
      await pool.end();
    }
  }, 30_000);

  it('a connection PostgreSQL ends (57P01) while checked out between queries does not crash the process', async () => {
    const errors: Error[] = [];
    const pool = createPgPool(inject('pgAdminUrl'), 1, (err) => errors.push(err));
    const client = await pool.connect();
    const { rows } = await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    const admin = new pg.Client({ connectionString: inject('pgAdminUrl') });
    await admin.connect();
    await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    await admin.end();
    // Without a listener on the checked-out client, pg emits an unhandled 'error' here and the process dies.
    await expect.poll(() => errors.length).toBeGreaterThan(0);
    expect(errors[0]!.message).toMatch(/terminating connection|Connection terminated/);
    const err = await caught(client.query('SELECT 1'));
    expect(isDatabaseUnavailable(err)).toBe(true);
    client.release(err as Error);
    // The pool opens a new connection for the next query.
    expect((await pool.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one).toBe(1);
    await pool.end();
  });
});
