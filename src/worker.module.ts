/**
 * The worker's Nest module: configuration, the activities' database client (node-postgres), Prisma (for the
 * idempotency store), a client for every provider of providers/index.ts, assembled into the `ActivityDeps` that
 * `createActivities` needs. No HTTP server.
 */
import { type DynamicModule, Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import type { ActivityDeps } from '../activities/ports.js';
import { APP_CONFIG, type AppConfig } from './config/config.js';
import { ConfigModule } from './config/config.module.js';
import { IdempotencyModule } from './idempotency/idempotency.module.js';
import { IdempotencyService } from './idempotency/idempotency.service.js';
import { createSqlClient, SQL_CLIENT } from './database/sql-client.js';
import { PrismaModule } from './prisma/prisma.module.js';
import { createProviderClients } from './worker/provider-clients.js';
import { loadWorkerConfig, type WorkerConfig } from './worker/worker-config.js';

/** Injection token of the worker's ActivityDeps. */
export const ACTIVITY_DEPS = Symbol('ACTIVITY_DEPS');

/** The activities' database client (src/database/sql-client.ts) and the pool behind it. */
type SqlClient = ReturnType<typeof createSqlClient>;

@Module({})
export class WorkerModule implements OnApplicationShutdown {
  constructor(@Inject(SQL_CLIENT) private readonly sql: SqlClient) {}

  /** Ends the activities' pool (after the worker drained); gives up after 5 s with a warning. */
  async onApplicationShutdown(): Promise<void> {
    if (!(await this.sql.close(5000))) {
      new Logger('Database').warn(
        'the activities’ database pool did not close within 5000 ms; shutting down without it',
      );
    }
  }

  /**
   * @param config validated configuration; default {@link loadWorkerConfig} over `process.env` (under
   *   `NODE_ENV=production` every provider URL and key must be set).
   */
  static forRoot(config: WorkerConfig = loadWorkerConfig()): DynamicModule {
    return {
      module: WorkerModule,
      imports: [ConfigModule.forRoot(config), PrismaModule, IdempotencyModule],
      providers: [
        {
          provide: SQL_CLIENT,
          inject: [APP_CONFIG],
          useFactory: (config: AppConfig): SqlClient => {
            const logger = new Logger('Database');
            return createSqlClient(config.DATABASE_URL, (err) =>
              logger.warn(`database connection error outside a query: ${err.message}`),
            );
          },
        },
        {
          provide: ACTIVITY_DEPS,
          inject: [SQL_CLIENT, IdempotencyService],
          useFactory: (sql: SqlClient, idempotency: IdempotencyService): ActivityDeps => ({
            db: sql.client,
            // One HTTP client per provider of providers/index.ts, configured from its variables.
            providers: createProviderClients(config),
            // The API's own purge (one SQL statement, kept in IdempotencyService), run by the retention Schedule.
            idempotencyRecords: { purgeExpired: (now) => idempotency.purgeExpired(now) },
            settings: { claimLeaseMs: config.CLAIM_LEASE_MS },
          }),
        },
      ],
      exports: [ACTIVITY_DEPS],
    };
  }
}
