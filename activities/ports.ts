/**
 * The ports activities depend on: the database and the providers' clients. Activities never import Nest or the app;
 * the worker wires real implementations in (src/worker.module.ts), tests wire fakes.
 */
import type { Prisma } from '../prisma/generated/client.js';
import type { ProviderClients } from '../providers/kit/define.js';

/**
 * Raw SQL on PostgreSQL, called as a tagged template (`` db.$queryRaw`SELECT ... WHERE id = ${id}::uuid` ``) or
 * with a `Prisma.sql` fragment; every `${value}` becomes a bind parameter, never text in the statement. The method
 * names and shapes are those of the Prisma client, so `PrismaClient` satisfies this port too; the worker wires
 * src/database/sql-client.ts (node-postgres, no query compilation per call).
 */
export interface SqlQueries {
  /**
   * Runs a statement and returns its rows (`T` is the row array type; columns by their SQL names). Values as
   * node-postgres maps them: integer and text columns as number and string, timestamptz as Date, json as parsed.
   * @throws the driver's error (e.g. a unique violation, SQLSTATE 23505; a lost connection) unchanged.
   */
  $queryRaw<T = unknown>(query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]): Promise<T>;
  /** Runs a statement and returns the number of rows it changed. @throws as {@link SqlQueries.$queryRaw}. */
  $executeRaw(query: TemplateStringsArray | Prisma.Sql, ...values: unknown[]): Promise<number>;
}

/** The database port: {@link SqlQueries} and transactions. */
export interface Db extends SqlQueries {
  /**
   * Runs `fn` in one transaction (READ COMMITTED) on one connection: committed when `fn` resolves, rolled back
   * when it throws (the error is rethrown unchanged).
   */
  $transaction<T>(fn: (tx: SqlQueries) => Promise<T>): Promise<T>;
}

/** Tunables of the activities. */
export interface ActivitySettings {
  /**
   * How long a `claimed` or `sending` claim protects its owner, in ms. A claim older than this whose owner is not
   * the current activity is reclaimed by a conditional UPDATE. Must exceed the provider profile's
   * start-to-close timeout (30 s) so a live attempt is never reclaimed. Default 120000.
   */
  claimLeaseMs: number;
}

/**
 * The `Idempotency-Key` store's retention, as the API implements it (the worker passes
 * `IdempotencyService.purgeExpired`, so the one purge statement lives with the store and its rules).
 */
export interface IdempotencyRecords {
  /**
   * Deletes the records whose retention has passed at `now` (never one a running request holds). Idempotent;
   * safe to run from several processes at once.
   * @returns how many records were deleted.
   */
  purgeExpired(now: Date): Promise<number>;
}

/** Everything the activities need. */
export interface ActivityDeps {
  db: Db;
  /** Every provider's client by provider name (providers/index.ts). */
  providers: ProviderClients;
  idempotencyRecords: IdempotencyRecords;
  settings: ActivitySettings;
}
