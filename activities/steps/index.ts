/**
 * The step registry: the ordered steps of an order, defined once. Everything that lists steps or statuses derives
 * from it: the plan each new order runs (and so the workflow's sequence), the worker's activity registration, the
 * reconciler, the page's step track (through the API), the progress output, the generated docs tables and the
 * metric labels. `npm run new:step -- <activityName> [--provider <name>] [--before|--after <step>]` adds a step
 * here: an import above the first marker, and its line above the second (or next to the step it names).
 * See docs/extending.md.
 */
import { validateSteps } from '../kit/define.js';
import { authorizePayment } from './authorize-payment.step.js';
import { awaitPacking } from './await-packing.step.js';
import { capturePayment } from './capture-payment.step.js';
import { createInvoice } from './create-invoice.step.js';
import { requestPick } from './request-pick.step.js';
import { reserveInventory } from './reserve-inventory.step.js';
import { sendOrderConfirmation } from './send-order-confirmation.step.js';
import { shipOrder } from './ship-order.step.js';
import { syncInvoiceToAccounting } from './sync-invoice-to-accounting.step.js';
// new:step inserts imports above this line.

/** Every step, in the order an order runs them. */
export const STEPS = validateSteps([
  authorizePayment,
  reserveInventory,
  createInvoice,
  sendOrderConfirmation,
  requestPick,
  awaitPacking,
  shipOrder,
  capturePayment,
  syncInvoiceToAccounting,
  // new:step inserts steps above this line (or next to the step of --before/--after).
]);
