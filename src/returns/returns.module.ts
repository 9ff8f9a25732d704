/**
 * Returns feature (issue 24): `POST /orders/:id/returns` (with optional `Idempotency-Key`), `GET /orders/:id/returns`,
 * `GET /returns/:id` and the return actions (`received`, `withdraw`, `retry`), the return workflow's starts and
 * Updates ({@link ReturnWorkflows}) and the {@link ReturnWorkflowSweeper}. Needs PRISMA, APP_CONFIG, the global
 * TemporalModule and the global guards of AuthModule; imports the IdempotencyModule.
 */
import { Module } from '@nestjs/common';
import { IdempotencyModule } from '../idempotency/idempotency.module.js';
import { ReturnActionsService } from './return-actions.service.js';
import { ReturnWorkflowSweeper } from './return-workflow-sweeper.service.js';
import { ReturnWorkflows } from './return-workflows.service.js';
import { OrderReturnsController, ReturnIdempotency, ReturnsController } from './returns.controller.js';
import { ReturnsService } from './returns.service.js';

@Module({
  imports: [IdempotencyModule],
  controllers: [OrderReturnsController, ReturnsController],
  providers: [ReturnsService, ReturnActionsService, ReturnWorkflows, ReturnWorkflowSweeper, ReturnIdempotency],
  exports: [ReturnsService],
})
export class ReturnsModule {}
