/**
 * The order's workflow, seen from the API: the {@link OrderWorkflowStarter}, the {@link OrderStartDispatcher}
 * (starts the workflows of accepted orders), the {@link OrderWorkflowActions} (cancel, retry, resolve, close through
 * the workflow's Updates) and the {@link OrderWorkflowReconciler} loop (with its sweeper). Requires APP_CONFIG,
 * PRISMA and the Temporal client of the global TemporalModule (src/temporal/).
 */
import { Module } from '@nestjs/common';
import { OrderStartDispatcher } from './order-start-dispatcher.service.js';
import { OrderWorkflowActions } from './order-workflow-actions.service.js';
import { OrderWorkflowReconciler } from './order-workflow-reconciler.service.js';
import { OrderWorkflowStarter } from './order-workflow-starter.service.js';

@Module({
  providers: [OrderWorkflowStarter, OrderStartDispatcher, OrderWorkflowActions, OrderWorkflowReconciler],
  exports: [OrderWorkflowStarter, OrderStartDispatcher, OrderWorkflowActions, OrderWorkflowReconciler],
})
export class OrderWorkflowModule {}
