/**
 * Global module that provides, on one connection pool from `AppConfig.DATABASE_URL` ({@link createPgPool}), the
 * PrismaClient under the {@link PRISMA} token and a node-postgres client under {@link SQL} (the API's hot path:
 * `POST /orders`, its idempotency record and the workflow start, without Prisma's query compiler; issue 27), and
 * disconnects them on application shutdown. Requires {@link APP_CONFIG} (ConfigModule).
 */
import { Global, Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import type pg from 'pg';
import { settlesWithin } from '../common/settles-within.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { PgSqlClient } from '../database/sql-client.js';
import { createPgPool, prismaOnPool, type PrismaClient } from './prisma.js';

/** Nest injection token of the PrismaClient: `@Inject(PRISMA) private readonly prisma: PrismaClient`. */
export const PRISMA = Symbol('PRISMA');
/**
 * Nest injection token of the {@link PgSqlClient} on the PrismaClient's own pool: `@Inject(SQL) sql: PgSqlClient`.
 * Its `$queryRaw`/`$executeRaw`/`$transaction` take the same tagged templates as Prisma's raw queries, and send them
 * straight to node-postgres (one statement each, no query compiler).
 */
export const SQL = Symbol('SQL');
/** The pool both share (internal). */
const POOL = Symbol('PG_POOL');

/**
 * How long shutdown waits for the pool to close, ms. After a PostgreSQL outage a connection that died while checked
 * out can stay checked out of `pg`'s pool (seen with @prisma/adapter-pg 7.10: `$disconnect()` then never resolves,
 * test/e2e/database-outage.e2e-spec.ts), and the process would never exit on SIGTERM.
 */
export const PRISMA_DISCONNECT_TIMEOUT_MS = 5000;

const onConnectionError = (err: Error): void =>
  new Logger('Prisma').warn(`database connection error outside a query: ${err.message}`);

@Global()
@Module({
  providers: [
    {
      provide: POOL,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => createPgPool(config.DATABASE_URL, 10, onConnectionError),
    },
    {
      provide: PRISMA,
      inject: [POOL],
      useFactory: (pool: pg.Pool): PrismaClient => prismaOnPool(pool, onConnectionError),
    },
    { provide: SQL, inject: [POOL], useFactory: (pool: pg.Pool) => new PgSqlClient(pool) },
  ],
  exports: [PRISMA, SQL],
})
export class PrismaModule implements OnApplicationShutdown {
  constructor(@Inject(PRISMA) private readonly prisma: PrismaClient) {}

  private readonly logger = new Logger('Prisma');

  /**
   * Closes the connection pool (after the HTTP server stopped taking requests); gives up after
   * {@link PRISMA_DISCONNECT_TIMEOUT_MS} ms with a warning, so a connection lost in an outage cannot hold the
   * process open (the exiting process closes its sockets anyway).
   */
  async onApplicationShutdown(): Promise<void> {
    if (!(await settlesWithin(this.prisma.$disconnect(), PRISMA_DISCONNECT_TIMEOUT_MS))) {
      this.logger.warn(
        `the database pool did not close within ${PRISMA_DISCONNECT_TIMEOUT_MS} ms (a connection lost in an outage ` +
          'is still checked out); shutting down without it',
      );
    }
  }
}
