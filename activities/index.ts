/**
 * All activities of the order fulfilment workflow, built over their ports.
 * Activities are plain functions closed over their dependencies (no `this`), so they run alone under
 * `MockActivityEnvironment` and register as they are with a Temporal Worker.
 */
import { createAccountingActivities } from './accounting.activities.js';
import { createConfirmationActivities } from './confirmation.activities.js';
import { createInventoryActivities } from './inventory.activities.js';
import { createInvoiceActivities } from './invoice.activities.js';
import { createOrderStatusActivities } from './order-status.activities.js';
import { createRetentionActivities } from './retention.activities.js';
import type { ActivityDeps } from './ports.js';
import { createShippingActivities } from './shipping.activities.js';

/**
 * Merges the activity factories: reserveInventory, releaseInventory, createInvoice, voidInvoice,
 * sendOrderConfirmation, syncInvoiceToAccounting, setOrderStatus, and purgeExpiredIdempotencyRecords (the retention
 * Schedule's workflow).
 */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createInventoryActivities(deps.db),
    ...createInvoiceActivities(deps.db),
    ...createConfirmationActivities(deps.db, deps.email, deps.settings),
    ...createShippingActivities(deps.db, deps.carrier, deps.settings),
    ...createAccountingActivities(deps.db, deps.accounting),
    ...createOrderStatusActivities(deps.db),
    ...createRetentionActivities(deps.idempotencyRecords),
  };
}

/** The activity interface the workflow proxies (`proxyActivities<OrderActivities>`). */
export type OrderActivities = ReturnType<typeof createActivities>;

export * from './ports.js';
export * from './provider-error.js';
export type * from './inventory.activities.js';
export type * from './invoice.activities.js';
export type * from './confirmation.activities.js';
export type * from './shipping.activities.js';
export type * from './accounting.activities.js';
export type * from './order-status.activities.js';
export type * from './retention.activities.js';
