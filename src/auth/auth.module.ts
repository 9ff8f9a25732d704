/**
 * Authentication, authorisation and rate limits of the HTTP API:
 * - {@link ApiKeyStore} over Prisma (API clients and hashed keys);
 * - the global guards, in this order: {@link ApiKeyAuthGuard} (401/403, sets `req.apiClient`), then
 *   {@link ClientThrottlerGuard} (429 per client, `RATE_LIMIT_MAX` per `RATE_LIMIT_WINDOW_MS`; 0 disables).
 * Requires PRISMA and APP_CONFIG. The worker does not import it.
 */
import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import { ApiKeyStore } from './api-key.store.js';
import { ApiKeyAuthGuard } from './auth.guard.js';
import { ClientThrottlerGuard } from './client-throttler.guard.js';

@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        throttlers: [{ name: 'default', ttl: config.RATE_LIMIT_WINDOW_MS, limit: config.RATE_LIMIT_MAX }],
        skipIf: () => config.RATE_LIMIT_MAX === 0,
      }),
    }),
  ],
  providers: [
    { provide: ApiKeyStore, inject: [PRISMA], useFactory: (prisma: PrismaClient) => new ApiKeyStore(prisma) },
    { provide: APP_GUARD, useClass: ApiKeyAuthGuard },
    { provide: APP_GUARD, useClass: ClientThrottlerGuard },
  ],
  exports: [ApiKeyStore],
})
export class AuthModule {}
