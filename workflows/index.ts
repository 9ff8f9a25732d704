/**
 * Workflow bundle entry: named re-exports of every workflow the worker registers.
 * See https://docs.temporal.io/develop/typescript/core-application#workflow-bundling
 */
export { orderFulfilment } from './order-fulfilment.workflow.js';
export { purgeIdempotencyRecords } from './idempotency-retention.workflow.js';
export { orderReturn } from './order-return.workflow.js';
