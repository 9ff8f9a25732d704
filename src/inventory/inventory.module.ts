/** Inventory feature: `GET /inventory`, `PUT /inventory/:sku`, `GET /inventory/:sku/movements`. Needs PRISMA. */
import { Module } from '@nestjs/common';
import { InventoryController, InventoryIdempotency } from './inventory.controller.js';
import { InventoryService } from './inventory.service.js';

@Module({
  controllers: [InventoryController],
  providers: [InventoryService, InventoryIdempotency],
  exports: [InventoryService],
})
export class InventoryModule {}
