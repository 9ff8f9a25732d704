/**
 * The activities' node-postgres client (src/database/sql-client.ts) on a real PostgreSQL: bind parameters from
 * tagged templates and nested `Prisma.sql` fragments, the JavaScript types of results, and transactions that
 * commit, roll back, and never return a broken connection to the pool.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Prisma } from '../../../prisma/generated/client.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.js';

let tdb: TestDatabase;

beforeAll(async () => {
  tdb = await createTestDatabase();
  await tdb.sql.$executeRaw`CREATE TABLE sql_client_probe (id text PRIMARY KEY, n integer NOT NULL)`;
});
afterAll(async () => tdb?.drop());

describe('PgSqlClient', () => {
  it('binds every value as a parameter, also inside nested Prisma.sql fragments and arrays', async () => {
    const evil = "x'); DROP TABLE sql_client_probe; --";
    const extra = Prisma.sql`AND ${'b'} = ANY(${['a', 'b']})`;
    const rows = await tdb.sql.$queryRaw<Array<{ echoed: string; n: number; at: Date; doc: { a: number } }>>`
      SELECT ${evil}::text AS echoed, ${41}::int + 1 AS n, now() AS at, json_build_object('a', 1) AS doc
      WHERE TRUE ${extra}`;
    expect(rows).toEqual([{ echoed: evil, n: 42, at: expect.any(Date), doc: { a: 1 } }]);
    expect(await tdb.sql.$queryRaw`SELECT 1 WHERE FALSE ${extra}`).toEqual([]);
  });

  it('returns the number of changed rows from $executeRaw', async () => {
    expect(await tdb.sql.$executeRaw`INSERT INTO sql_client_probe VALUES ('a', 1), ('b', 2)`).toBe(2);
    expect(await tdb.sql.$executeRaw`UPDATE sql_client_probe SET n = n + 1 WHERE id = ${'zzz'}`).toBe(0);
  });

  it('commits a transaction whose function resolves, and rolls back one that throws', async () => {
    const result = await tdb.sql.$transaction(async (tx) => {
      await tx.$executeRaw`INSERT INTO sql_client_probe VALUES ('c', 3)`;
      return 'done';
    });
    expect(result).toBe('done');
    const boom = new Error('boom');
    await expect(
      tdb.sql.$transaction(async (tx) => {
        await tx.$executeRaw`INSERT INTO sql_client_probe VALUES ('d', 4)`;
        throw boom;
      }),
    ).rejects.toBe(boom);
    const ids = await tdb.sql.$queryRaw<Array<{ id: string }>>`SELECT id FROM sql_client_probe ORDER BY id`;
    expect(ids.map((r) => r.id)).toEqual(['a', 'b', 'c']);
  });

  it('rethrows the database error of a failed statement unchanged and rolls the transaction back', async () => {
    const err = await tdb.sql
      .$transaction(async (tx) => {
        await tx.$executeRaw`INSERT INTO sql_client_probe VALUES ('e', 5)`;
        await tx.$executeRaw`INSERT INTO sql_client_probe VALUES ('a', 1)`;
      })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: '23505' });
    expect(await tdb.sql.$queryRaw`SELECT 1 FROM sql_client_probe WHERE id = 'e'`).toEqual([]);
  });

  it('does not return a connection that broke mid-transaction to the pool', async () => {
    const killed = await tdb.sql
      .$transaction(async (tx) => {
        await tx.$queryRaw`SELECT pg_terminate_backend(pg_backend_pid())`;
      })
      .catch((e: unknown) => e);
    expect(killed).toBeInstanceOf(Error);
    // Every later statement gets a working connection.
    for (let i = 0; i < 6; i++) {
      expect(await tdb.sql.$queryRaw`SELECT ${i}::int AS i`).toEqual([{ i }]);
    }
  });
});
