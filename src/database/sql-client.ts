/**
 * The activities' database port (activities/ports.ts `Db`) on node-postgres: each `$queryRaw` / `$executeRaw` is
 * one parameterised statement on the pool, each `$transaction` one checked-out connection between `BEGIN` and
 * `COMMIT`. The worker uses it instead of the Prisma client for the activities' raw SQL: Prisma 6 compiles every
 * query (its Wasm query compiler, no plan cache) and adds a transaction manager, which cost the worker about 5 ms of
 * CPU per order (issue 9, bench/README.md). Statements and results are the same: `Prisma.sql` renders the text with
 * `$1…$n` placeholders and its values, and the schema has no bigint or numeric columns whose JavaScript types
 * would differ between the two drivers.
 */
import type pg from 'pg';
import { Prisma } from '../../prisma/generated/client.js';
import type { Db, SqlQueries } from '../../activities/ports.js';
import { settlesWithin } from '../common/settles-within.js';
import { createPgPool } from '../prisma/prisma.js';

type Query = TemplateStringsArray | Prisma.Sql;

/** The statement of a tagged-template call or a `Prisma.sql` fragment, as node-postgres takes it. */
function statement(query: Query, values: unknown[]): pg.QueryConfig {
  const sql = query instanceof Prisma.Sql ? query : Prisma.sql(query, ...values);
  return { text: sql.text, values: sql.values };
}

/** Queries on a pool or on one checked-out connection. */
class Queries implements SqlQueries {
  constructor(protected readonly runner: pg.Pool | pg.PoolClient) {}

  async $queryRaw<T = unknown>(query: Query, ...values: unknown[]): Promise<T> {
    const result = await this.runner.query(statement(query, values));
    return result.rows as T;
  }

  async $executeRaw(query: Query, ...values: unknown[]): Promise<number> {
    const result = await this.runner.query(statement(query, values));
    return result.rowCount ?? 0;
  }
}

/** The `Db` port on a `pg.Pool` (see the module comment). The pool stays the caller's to end. */
export class PgSqlClient extends Queries implements Db {
  constructor(private readonly pool: pg.Pool) {
    super(pool);
  }

  /**
   * Runs `fn` between `BEGIN` and `COMMIT` on one connection; on an error, `ROLLBACK` and rethrow. A connection
   * whose `ROLLBACK` fails (it broke mid-transaction) is destroyed instead of going back to the pool.
   */
  async $transaction<T>(fn: (tx: SqlQueries) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let broken: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await fn(new Queries(client));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      try {
        await client.query('ROLLBACK');
      } catch (rollbackError) {
        broken = rollbackError as Error;
      }
      throw err;
    } finally {
      client.release(broken);
    }
  }
}

/** Nest injection token of the worker's {@link PgSqlClient}. */
export const SQL_CLIENT = Symbol('SQL_CLIENT');

/**
 * A {@link PgSqlClient} on its own pool of `poolSize` connections (default 10; built by the Prisma module's
 * `createPgPool`, so every connection has an error listener and a connect timeout), and `close`, which ends the
 * pool but gives up after `closeTimeoutMs` (a connection lost in an outage can stay checked out).
 */
export function createSqlClient(
  databaseUrl: string,
  onError: (err: Error) => void,
  poolSize = 10,
): { client: PgSqlClient; close(closeTimeoutMs?: number): Promise<boolean> } {
  const pool = createPgPool(databaseUrl, poolSize, onError);
  return {
    client: new PgSqlClient(pool),
    close: (closeTimeoutMs = 5000) => settlesWithin(pool.end(), closeTimeoutMs),
  };
}
