/**
 * Orders feature: `POST /orders` (with optional `Idempotency-Key`), `GET /orders/:id`, `GET /orders`.
 * Needs PRISMA, APP_CONFIG and TemporalModule; imports the IdempotencyModule.
 */
import { Module } from '@nestjs/common';
import { IdempotencyModule } from '../idempotency/idempotency.module.js';
import { OrderIdempotency, OrdersController } from './orders.controller.js';
import { OrdersService } from './orders.service.js';

@Module({
  imports: [IdempotencyModule],
  controllers: [OrdersController],
  providers: [OrdersService, OrderIdempotency],
  exports: [OrdersService],
})
export class OrdersModule {}
