/** Orders feature: `POST /orders`, `GET /orders/:id`, `GET /orders`. Needs PRISMA, APP_CONFIG and TemporalModule. */
import { Module } from '@nestjs/common';
import { OrdersController } from './orders.controller.js';
import { OrdersService } from './orders.service.js';

@Module({
  controllers: [OrdersController],
  providers: [OrdersService],
  exports: [OrdersService],
})
export class OrdersModule {}
