/**
 * The worker's Nest module: configuration, Prisma and the provider clients, assembled into the
 * `ActivityDeps` that `createActivities` needs. No HTTP server.
 */
import { Module } from '@nestjs/common';
import type { ActivityDeps } from '../activities/ports.js';
import { APP_CONFIG, type AppConfig } from './config/config.js';
import { ConfigModule } from './config/config.module.js';
import { PrismaModule, PRISMA } from './prisma/prisma.module.js';
import type { PrismaClient } from './prisma/prisma.js';
import { HttpAccountingProvider } from './providers/http-accounting-provider.js';
import { HttpCarrierProvider } from './providers/http-carrier-provider.js';
import { HttpEmailProvider } from './providers/http-email-provider.js';

/** Injection token of the worker's ActivityDeps. */
export const ACTIVITY_DEPS = Symbol('ACTIVITY_DEPS');

@Module({
  imports: [ConfigModule, PrismaModule],
  providers: [
    {
      provide: ACTIVITY_DEPS,
      inject: [APP_CONFIG, PRISMA],
      useFactory: (config: AppConfig, db: PrismaClient): ActivityDeps => ({
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
        settings: { claimLeaseMs: config.CLAIM_LEASE_MS },
      }),
    },
  ],
  exports: [ACTIVITY_DEPS],
})
export class WorkerModule {}
