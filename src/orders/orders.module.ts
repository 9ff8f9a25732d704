/**
 * Orders feature: `POST /orders` (with optional `Idempotency-Key`), `GET /orders/:id`, `GET /orders`, the order
 * actions, and `GET /steps` (the step registry). Needs PRISMA, APP_CONFIG, TemporalModule and the global guards of
 * AuthModule; imports the IdempotencyModule and the OrderWorkflowModule (./workflow/: the order's workflow start,
 * actions and reconciler).
 */
import { Module } from '@nestjs/common';
import { IdempotencyModule } from '../idempotency/idempotency.module.js';
import { OrderIdempotency, OrdersController } from './orders.controller.js';
import { OrderActionsService } from './order-actions.service.js';
import { OrderPackingController } from './order-packing.controller.js';
import { OrderPackingService } from './order-packing.service.js';
import { OrdersService } from './orders.service.js';
import { StepsController } from './steps.controller.js';
import { OrderWorkflowModule } from './workflow/order-workflow.module.js';

@Module({
  imports: [IdempotencyModule, OrderWorkflowModule],
  controllers: [OrdersController, OrderPackingController, StepsController],
  providers: [OrdersService, OrderActionsService, OrderPackingService, OrderIdempotency],
  exports: [OrdersService],
})
export class OrdersModule {}
