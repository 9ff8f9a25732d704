/**
 * The step catalogue: every step of an order, in the order an order runs them, as metadata (./define.ts): what the
 * API, the plan, the docs and the worker's registry read. Each step's code is its definition,
 * activities/steps/<kebab-name>.step.ts, which spreads its entry here and adds what the step does; the worker's
 * registry (activities/steps/index.ts) loads one definition per entry, by that file name, and checks it against its
 * entry. `npm run new:step -- <activityName> [--provider <name>] [--before|--after <step>]` adds an entry here (above
 * the first marker) and its line in the list (above the second, or next to the step it names). See
 * docs/extending.md.
 */
import {
  StepPhase,
  validateCatalogue,
  type DatabaseStepEntry,
  type EventStepEntry,
  type ProviderStepEntry,
  type StepEntry,
} from './define.js';
import { formatMinor, maskEmail, plural } from './text.js';

/** A payment-method token as the Temporal UI and the logs may show it: its kind only (`pm_…`), never the token. */
export function maskPaymentMethod(method: string): string {
  return method.startsWith('pm_') ? 'pm_…' : '…';
}

/** Items of an order (the sum of its lines' quantities). */
function itemCount(order: { lines: ReadonlyArray<{ quantity: number }> }): number {
  return order.lines.reduce((n, l) => n + l.quantity, 0);
}

/** Default bound of the wait for the warehouse, ms (4 h; configuration: `WAREHOUSE_PACK_TIMEOUT`). */
export const DEFAULT_PACK_TIMEOUT_MS = 4 * 3_600_000;
/** Default margin before a deadline (e.g. the payment authorization's), ms (configuration: `WAREHOUSE_PACK_DEADLINE_MARGIN`). */
export const DEFAULT_PACK_DEADLINE_MARGIN_MS = 10 * 60_000;

/** The payment authorization of a card order (activities/steps/authorize-payment.step.ts). */
export const authorizePayment = {
  kind: 'provider',
  name: 'authorizePayment',
  phase: StepPhase.BeforePivot,
  status: 'payment_authorized',
  label: 'Payment authorized',
  description:
    'Authorizes (holds) the order’s total on the customer’s card; card orders only. A decline fails the order.',
  when: (order) => Boolean(order.payment),
  provider: 'payments',
  /** `payment-authorization:<orderId>`. */
  key: (orderId) => `payment-authorization:${orderId}`,
  summary: (order) =>
    `authorization of ${formatMinor(order.totalMinor, order.currency)} on card ${maskPaymentMethod(order.payment?.method ?? '')}`,
  refused: {
    problems: ['card-declined'],
    failure: 'payment_declined',
    message: 'The payment was declined',
    reasonMember: 'declineCode',
  },
  compensation: {
    kind: 'provider',
    name: 'voidPayment',
    description: 'Voids the payment authorization (releases the hold); only when it was authorized.',
    provider: 'payments',
  },
} satisfies ProviderStepEntry;

/** The reservation of the order's lines (activities/steps/reserve-inventory.step.ts). */
export const reserveInventory = {
  kind: 'database',
  name: 'reserveInventory',
  phase: StepPhase.BeforePivot,
  status: 'inventory_reserved',
  label: 'Inventory reserved',
  description: 'Reserves every line of the order, all or nothing (`reserve:<orderId>:<sku>` movements).',
  summary: (order) => `reserve ${plural(itemCount(order), 'unit')} of ${plural(order.lines.length, 'SKU')}`,
  compensation: {
    kind: 'database',
    name: 'releaseInventory',
    description: 'Releases what was reserved and not shipped (`release:<orderId>:<sku>` movements).',
  },
} satisfies DatabaseStepEntry;

/** The invoice (activities/steps/create-invoice.step.ts). */
export const createInvoice = {
  kind: 'database',
  name: 'createInvoice',
  phase: StepPhase.BeforePivot,
  status: 'invoiced',
  label: 'Invoiced',
  description: 'Issues the invoice once per order, numbered from a gap-free series (`INV-000042`).',
  summary: (order) => `invoice of ${formatMinor(order.totalMinor, order.currency)}`,
  compensation: {
    kind: 'database',
    name: 'voidInvoice',
    description: 'Voids the invoice (its number stays allocated); nothing when there is none.',
  },
} satisfies DatabaseStepEntry;

/** The confirmation email (activities/steps/send-order-confirmation.step.ts). */
export const sendOrderConfirmation = {
  kind: 'provider',
  name: 'sendOrderConfirmation',
  phase: StepPhase.BeforePivot,
  status: 'confirmation_sent',
  label: 'Confirmation sent',
  description: 'Emails the order confirmation with its invoice number; a cancel later sends a cancellation notice.',
  provider: 'email',
  /** `order-confirmation:<orderId>`. */
  key: (orderId) => `order-confirmation:${orderId}`,
  summary: (order) => `confirmation to ${maskEmail(order.customerEmail)}`,
  compensation: {
    kind: 'provider',
    name: 'sendCancellationNotice',
    description: 'Emails the customer that the confirmed order is cancelled (only when the confirmation went out).',
    provider: 'email',
  },
} satisfies ProviderStepEntry;

/** The warehouse's pick request (activities/steps/request-pick.step.ts). */
export const requestPick = {
  kind: 'provider',
  name: 'requestPick',
  phase: StepPhase.BeforePivot,
  status: 'pick_requested',
  label: 'Pick requested',
  description: 'Asks the warehouse to pick and pack the order; it reports back once packed.',
  provider: 'warehouse',
  /** `pick:<orderId>`. */
  key: (orderId) => `pick:${orderId}`,
  summary: (order) => `pick request of ${itemCount(order)} items`,
  compensation: {
    kind: 'provider',
    name: 'cancelPick',
    description: 'Cancels the pick request (refused once the warehouse started picking).',
    provider: 'warehouse',
  },
} satisfies ProviderStepEntry;

/** The wait for the warehouse's `packed` report (activities/steps/await-packing.step.ts). */
export const awaitPacking = {
  kind: 'event',
  name: 'awaitPacking',
  phase: StepPhase.BeforePivot,
  status: 'packed',
  label: 'Packed',
  description: 'Waits (bounded) for the warehouse to report the order packed; the report is recorded.',
  event: {
    name: 'packed',
    timeoutMs: DEFAULT_PACK_TIMEOUT_MS,
    marginMs: DEFAULT_PACK_DEADLINE_MARGIN_MS,
    timeoutSetting: 'WAREHOUSE_PACK_TIMEOUT',
    cancelFirst: 'requestPick',
  },
  summary: () => 'waits for the warehouse to report the order packed',
  deadlineWhat: 'the payment authorization expires',
} satisfies EventStepEntry;

/** The hand-over to the carrier: the pivot (activities/steps/ship-order.step.ts). */
export const shipOrder = {
  kind: 'provider',
  name: 'shipOrder',
  phase: StepPhase.Pivot,
  status: 'shipped',
  label: 'Shipped',
  description:
    'Asks the carrier for one shipment and consumes the reservation (`ship:<orderId>:<sku>` movements): the point of ' +
    'no return.',
  provider: 'carrier',
  /** `shipment:<orderId>`: the claim key and the carrier's `Idempotency-Key`. */
  key: (orderId) => `shipment:${orderId}`,
  summary: (order) => `shipment of ${plural(itemCount(order), 'item')}`,
  /** A card order ships only on a hold it can still capture (the check: ship-order.step.ts `holdToShip`). */
  precondition: { failure: 'payment_expired', message: 'The payment authorization expired before the order shipped' },
} satisfies ProviderStepEntry;

/** The capture of a card order's payment (activities/steps/capture-payment.step.ts). */
export const capturePayment = {
  kind: 'provider',
  name: 'capturePayment',
  phase: StepPhase.AfterPivot,
  status: 'payment_captured',
  label: 'Payment captured',
  description: 'Captures the authorized amount once the parcel was handed to the carrier; card orders only.',
  when: (order) => Boolean(order.payment),
  provider: 'payments',
  /** `payment-capture:<orderId>`. */
  key: (orderId) => `payment-capture:${orderId}`,
  summary: (order) => `capture of ${formatMinor(order.totalMinor, order.currency)}`,
} satisfies ProviderStepEntry;

/** The invoice's sync to accounting (activities/steps/sync-invoice-to-accounting.step.ts). */
export const syncInvoiceToAccounting = {
  kind: 'provider',
  name: 'syncInvoiceToAccounting',
  phase: StepPhase.AfterPivot,
  status: 'accounting_synced',
  label: 'Synced to accounting',
  description: 'Upserts the invoice in the accounting system by its number and records the accounting id.',
  provider: 'accounting',
  /** `accounting-invoice:<orderId>`. */
  key: (orderId) => `accounting-invoice:${orderId}`,
  summary: (order) => `invoice of ${formatMinor(order.totalMinor, order.currency)} to accounting`,
} satisfies ProviderStepEntry;
// new:step inserts entries above this line.

/** Every step's entry, in the order an order runs them. */
export const STEP_CATALOGUE: readonly StepEntry[] = validateCatalogue([
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
