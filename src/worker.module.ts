/**
 * The worker's Nest module: configuration, Prisma, the provider clients and the idempotency store, assembled into
 * the `ActivityDeps` that `createActivities` needs. No HTTP server.
 */
import { type DynamicModule, Module } from '@nestjs/common';
import type { ActivityDeps } from '../activities/ports.js';
import { APP_CONFIG, type AppConfig, loadConfig } from './config/config.js';
import { ConfigModule } from './config/config.module.js';
import { IdempotencyModule } from './idempotency/idempotency.module.js';
import { IdempotencyService } from './idempotency/idempotency.service.js';
import { PrismaModule, PRISMA } from './prisma/prisma.module.js';
import type { PrismaClient } from './prisma/prisma.js';
import { HttpAccountingProvider } from './providers/http-accounting-provider.js';
import { HttpCarrierProvider } from './providers/http-carrier-provider.js';
import { HttpEmailProvider } from './providers/http-email-provider.js';

/** Injection token of the worker's ActivityDeps. */
export const ACTIVITY_DEPS = Symbol('ACTIVITY_DEPS');

@Module({})
export class WorkerModule {
  /**
   * @param config validated configuration; default {@link loadConfig} over `process.env` for the `worker` role
   *   (under `NODE_ENV=production` every provider URL and key must be set).
   */
  static forRoot(config: AppConfig = loadConfig(process.env, 'worker')): DynamicModule {
    return {
      module: WorkerModule,
      imports: [ConfigModule.forRoot(config), PrismaModule, IdempotencyModule],
      providers: [
        {
          provide: ACTIVITY_DEPS,
          inject: [APP_CONFIG, PRISMA, IdempotencyService],
          useFactory: (config: AppConfig, db: PrismaClient, idempotency: IdempotencyService): ActivityDeps => ({
            db,
            email: new HttpEmailProvider({
              baseUrl: config.EMAIL_PROVIDER_URL,
              apiKey: config.EMAIL_PROVIDER_API_KEY,
              timeoutMs: config.PROVIDER_TIMEOUT_MS,
              from: config.EMAIL_FROM,
            }),
            accounting: new HttpAccountingProvider({
              baseUrl: config.ACCOUNTING_PROVIDER_URL,
              apiKey: config.ACCOUNTING_PROVIDER_API_KEY,
              timeoutMs: config.PROVIDER_TIMEOUT_MS,
            }),
            carrier: new HttpCarrierProvider({
              baseUrl: config.CARRIER_PROVIDER_URL,
              apiKey: config.CARRIER_PROVIDER_API_KEY,
              timeoutMs: config.PROVIDER_TIMEOUT_MS,
            }),
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
