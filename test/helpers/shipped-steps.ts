/**
 * The steps and providers this repository ships, as a registry of their own. The suites about them (the kit's
 * specs, the workflow's) run on it rather than on activities/steps/index.ts, so adding, moving or removing a step in
 * the registry never fails a test about something else; the suites about whatever the registry holds (the
 * conformance battery, the end-to-end orders, the generic provider specs) read the registry itself.
 */
import { StepPhase, validateSteps } from '../../activities/kit/define.js';
import { createInvoice } from '../../activities/steps/create-invoice.step.js';
import { reserveInventory } from '../../activities/steps/reserve-inventory.step.js';
import { sendOrderConfirmation } from '../../activities/steps/send-order-confirmation.step.js';
import { shipOrder } from '../../activities/steps/ship-order.step.js';
import { syncInvoiceToAccounting } from '../../activities/steps/sync-invoice-to-accounting.step.js';
import { accounting } from '../../providers/accounting.provider.js';
import { carrier } from '../../providers/carrier.provider.js';
import { email } from '../../providers/email.provider.js';
import type { ProviderDefinition } from '../../providers/kit/define.js';

/**
 * The five shipped steps, in their order: reserve, invoice, confirm (compensated by a cancellation notice), ship (the
 * pivot: the hand-over to the carrier), sync to accounting.
 */
export const SHIPPED_STEPS = validateSteps([
  reserveInventory,
  createInvoice,
  sendOrderConfirmation,
  shipOrder,
  syncInvoiceToAccounting,
]);

/** The three shipped providers. */
export const SHIPPED_PROVIDERS: readonly ProviderDefinition[] = [email, carrier, accounting];

/**
 * The shipped steps as 1.0.0 laid them out: the confirmation email the pivot (no compensation), the shipment after
 * it. Orders placed on 1.0.0 keep this plan (the workflow reads the pivot from the order's plan), so the workflow's
 * suites about the pivot's mechanics run on it too: they prove that such an order still refuses a cancel once its
 * confirmation went out.
 */
export const V1_0_0_STEPS = validateSteps([
  reserveInventory,
  createInvoice,
  { ...sendOrderConfirmation, phase: StepPhase.Pivot, compensation: undefined },
  { ...shipOrder, phase: StepPhase.AfterPivot },
  syncInvoiceToAccounting,
]);
