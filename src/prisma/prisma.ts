/**
 * Creates the Prisma client used by the API, the worker, scripts and tests.
 * Prisma 6.19 with `engineType = "client"` talks to PostgreSQL through the `pg` driver adapter
 * (`@prisma/adapter-pg`), so no Rust query engine is downloaded. The adapter gets a `pg.Pool` of ours, so that
 * every connection has an `'error'` listener for its whole life: PostgreSQL ending a connection (a restart, a
 * failover, `pg_terminate_backend`: SQLSTATE 57P01) otherwise raises an unhandled `'error'` on a `pg.Client` that
 * is checked out between queries and crashes the process (prisma/orm#27641). The request that used the
 * connection still fails (503 from the API, a retried activity in the worker); the process lives on.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';
import { PrismaClient } from '../../prisma/generated/client.js';

/** Wait for a new connection at most this long (ms) before the query fails (instead of hanging on a frozen server). */
export const PG_CONNECT_TIMEOUT_MS = 10_000;

/**
 * Bounds of every session of the service's pools (the API's Prisma client, the activities' node-postgres client),
 * set as connection options (`-c name=value`, no extra round trip). See
 * https://www.postgresql.org/docs/current/runtime-config-client.html
 * - `lock_timeout`: a statement waits at most this long (ms) for a row or table lock (an order row held by a long
 *   report, a stuck migration, an operator's open psql session), then fails with SQLSTATE 55P03; the activity
 *   attempt fails and is retried after its backoff, its connection goes back to the pool, and no waiter piles up.
 * - `statement_timeout`: a statement runs at most this long (ms), then PostgreSQL cancels it (57014): below the 10 s
 *   start-to-close of the database steps, so an attempt that times out in Temporal has no query left running.
 * - `idle_in_transaction_session_timeout`: a session idle inside a transaction this long (ms) (its process froze
 *   mid-transaction) is ended by PostgreSQL, releasing its locks.
 */
export const PG_SESSION_LIMITS = {
  lockTimeoutMs: 2_000,
  statementTimeoutMs: 8_000,
  idleInTransactionTimeoutMs: 30_000,
} as const;

/** {@link PG_SESSION_LIMITS} as a libpq `options` string. */
export function sessionOptions(limits: typeof PG_SESSION_LIMITS = PG_SESSION_LIMITS): string {
  return [
    `-c lock_timeout=${limits.lockTimeoutMs}`,
    `-c statement_timeout=${limits.statementTimeoutMs}`,
    `-c idle_in_transaction_session_timeout=${limits.idleInTransactionTimeoutMs}`,
  ].join(' ');
}

/** Options of {@link createPrismaClient}. */
export interface PrismaClientOptions {
  /** Called with every error a connection or the pool reports outside a query (default: ignored). */
  onConnectionError?: (err: Error) => void;
}

/**
 * @param databaseUrl PostgreSQL connection string, e.g. `postgresql://postgres@127.0.0.1:5432/orders`.
 * @param poolSize maximum pool connections (default 10).
 * @param options see {@link PrismaClientOptions}.
 */
export function createPrismaClient(
  databaseUrl: string,
  poolSize = 10,
  options: PrismaClientOptions = {},
): PrismaClient {
  const onError = options.onConnectionError ?? (() => undefined);
  return prismaOnPool(createPgPool(databaseUrl, poolSize, onError), onError);
}

/**
 * A PrismaClient on `pool` (a pool from {@link createPgPool}), which it ends on `$disconnect()`; `onError` hears the
 * pool's and its connections' errors outside a query. Lets the API share one pool between Prisma and the
 * node-postgres client of its hot path (src/prisma/prisma.module.ts).
 */
export function prismaOnPool(pool: pg.Pool, onError: (err: Error) => void): PrismaClient {
  return new PrismaClient({
    adapter: new PrismaPg(pool, { disposeExternalPool: true, onPoolError: onError, onConnectionError: onError }),
  });
}

/**
 * The `pg.Pool` behind {@link createPrismaClient}: `poolSize` connections at most, {@link PG_CONNECT_TIMEOUT_MS} to
 * connect, every session bounded by {@link PG_SESSION_LIMITS}, and `onError` listening on the pool and on every
 * connection it opens, checked out or idle.
 */
export function createPgPool(databaseUrl: string, poolSize: number, onError: (err: Error) => void): pg.Pool {
  const pool = new pg.Pool({
    connectionString: databaseUrl,
    max: poolSize,
    connectionTimeoutMillis: PG_CONNECT_TIMEOUT_MS,
    options: sessionOptions(),
  });
  pool.on('error', onError);
  pool.on('connect', (client) => client.on('error', onError));
  return pool;
}

export { PrismaClient };
