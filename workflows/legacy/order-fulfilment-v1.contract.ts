/**
 * FROZEN: the `status` query shape of the first workflow version (see order-fulfilment-v1.workflow.ts).
 */
import { defineQuery } from '@temporalio/workflow';
import type { OrderStatus } from '../order-fulfilment.contract.js';

/** What the v1 `status` query returns. */
export interface OrderFulfilmentStateV1 {
  orderId: string;
  status: OrderStatus;
  currentStep: string | null;
  completedSteps: string[];
  invoiceNumber: string | null;
  failureReason: string | null;
}

/** The v1 `status` query (same wire name as the current one). */
export const orderStatusQueryV1 = defineQuery<OrderFulfilmentStateV1>('status');
