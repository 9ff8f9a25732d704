/**
 * Global module of the HTTP idempotency layer: provides {@link IdempotencyService} (`Idempotency-Key` on
 * `POST /orders`, draft-ietf-httpapi-idempotency-key-header). Requires PRISMA and APP_CONFIG.
 *
 * Global so that the reconciler loop (TemporalModule) can purge expired records with
 * `IdempotencyService.purgeExpired` wherever the API imports this module; the worker does not import it.
 */
import { Global, Module } from '@nestjs/common';
import { IdempotencyService } from './idempotency.service.js';

@Global()
@Module({
  providers: [IdempotencyService],
  exports: [IdempotencyService],
})
export class IdempotencyModule {}
