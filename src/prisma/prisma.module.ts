/**
 * Global module that provides one PrismaClient under the {@link PRISMA} token, built by
 * {@link createPrismaClient} from `AppConfig.DATABASE_URL`, and disconnects it on application shutdown.
 * Requires {@link APP_CONFIG} (ConfigModule).
 */
import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { createPrismaClient, type PrismaClient } from './prisma.js';

/** Nest injection token of the PrismaClient: `@Inject(PRISMA) private readonly prisma: PrismaClient`. */
export const PRISMA = Symbol('PRISMA');

@Global()
@Module({
  providers: [
    {
      provide: PRISMA,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig): PrismaClient => createPrismaClient(config.DATABASE_URL),
    },
  ],
  exports: [PRISMA],
})
export class PrismaModule implements OnApplicationShutdown {
  constructor(@Inject(PRISMA) private readonly prisma: PrismaClient) {}

  /** Closes the connection pool (after the HTTP server stopped taking requests). */
  async onApplicationShutdown(): Promise<void> {
    await this.prisma.$disconnect();
  }
}
