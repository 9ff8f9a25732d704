/**
 * Global module that provides one PrismaClient under the {@link PRISMA} token, built by
 * {@link createPrismaClient} from `AppConfig.DATABASE_URL`, and disconnects it on application shutdown.
 * Requires {@link APP_CONFIG} (ConfigModule).
 */
import { Global, Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { settlesWithin } from '../common/settles-within.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { createPrismaClient, type PrismaClient } from './prisma.js';

/** Nest injection token of the PrismaClient: `@Inject(PRISMA) private readonly prisma: PrismaClient`. */
export const PRISMA = Symbol('PRISMA');

/**
 * How long shutdown waits for the pool to close, ms. After a PostgreSQL outage a connection that died while checked
 * out can stay checked out of `pg`'s pool (seen with @prisma/adapter-pg 7.10: `$disconnect()` then never resolves,
 * test/e2e/database-outage.e2e-spec.ts), and the process would never exit on SIGTERM.
 */
export const PRISMA_DISCONNECT_TIMEOUT_MS = 5000;

@Global()
@Module({
  providers: [
    {
      provide: PRISMA,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): PrismaClient => {
        const logger = new Logger('Prisma');
        return createPrismaClient(config.DATABASE_URL, undefined, {
          onConnectionError: (err) => logger.warn(`database connection error outside a query: ${err.message}`),
        });
      },
    },
  ],
  exports: [PRISMA],
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
