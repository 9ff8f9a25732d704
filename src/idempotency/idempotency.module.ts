/**
 * Global module of the HTTP idempotency layer: provides {@link IdempotencyService} (`Idempotency-Key` records of
 * `POST /orders` and `PUT /inventory/:sku`, draft-ietf-httpapi-idempotency-key-header), used by the
 * {@link IdempotencyInterceptor} of routes marked `@Idempotent`. Requires PRISMA and APP_CONFIG.
 *
 * Global so that the reconciler loop (OrderWorkflowModule, src/orders/workflow/) can purge expired records with
 * `IdempotencyService.purgeExpired` wherever the API imports this module; the worker does not import it.
 */
import { Global, Module } from '@nestjs/common';
import { IdempotencyInterceptor } from './idempotency.interceptor.js';
import { IdempotencyService } from './idempotency.service.js';

@Global()
@Module({
  providers: [IdempotencyService, IdempotencyInterceptor],
  exports: [IdempotencyService, IdempotencyInterceptor],
})
export class IdempotencyModule {}
