/**
 * Sync of the invoice to the accounting system: an upsert by external id (PUT semantics, the invoice
 * number), sent with `Idempotency-Key: accounting-invoice:<orderId>`, whose result is recorded in
 * `accounting_syncs`. The upsert is idempotent by nature; the key makes retries replays at the provider.
 */
import { notFound, rethrowProviderError } from './failures.js';
import type { AccountingInvoice, AccountingProvider, Db } from './ports.js';

/** Input of syncInvoiceToAccounting. */
export interface SyncInvoiceToAccountingInput {
  orderId: string;
}

/** Result of syncInvoiceToAccounting. */
export interface SyncInvoiceToAccountingResult {
  /** The accounting system's id for the invoice. */
  accountingId: string;
  /** The invoice number, our external id at the accounting system. */
  externalId: string;
  /** `accounting-invoice:<orderId>`. */
  idempotencyKey: string;
  /** False when an earlier run had already synced it (nothing was called this time). */
  syncedNow: boolean;
}

/** The idempotency key of an order's accounting sync. */
export function accountingInvoiceKey(orderId: string): string {
  return `accounting-invoice:${orderId}`;
}

/** Builds the accounting activity over the database and accounting ports. */
export function createAccountingActivities(db: Db, accounting: AccountingProvider) {
  return {
    /**
     * Upserts the order's invoice in the accounting system and records its id.
     * @throws ApplicationFailure `NotFoundError` (order or invoice missing), `ProviderRejectedError` or
     *   `UnauthorizedError` (permanent), `ProviderUnavailableError` (transient, retried).
     */
    async syncInvoiceToAccounting(input: SyncInvoiceToAccountingInput): Promise<SyncInvoiceToAccountingResult> {
      const { orderId } = input;
      const key = accountingInvoiceKey(orderId);
      const order = await db.order.findUnique({
        where: { id: orderId },
        include: { lines: { orderBy: { lineNo: 'asc' } }, invoice: true, accountingSync: true },
      });
      if (!order) throw notFound('order', orderId);
      if (!order.invoice) throw notFound('invoice of order', orderId);
      const externalId = order.invoice.number;
      if (order.accountingSync?.externalId === externalId) {
        return { accountingId: order.accountingSync.accountingId, externalId, idempotencyKey: key, syncedNow: false };
      }
      // Built only from stored, immutable fields: every attempt sends the identical body for the key.
      const invoice: AccountingInvoice = {
        externalId,
        orderId,
        customerEmail: order.customerEmail,
        currency: order.invoice.currency,
        totalMinor: order.invoice.totalMinor,
        issuedAt: order.invoice.issuedAt.toISOString(),
        lines: order.lines.map((l) => ({ sku: l.sku, quantity: l.quantity, unitPriceMinor: l.unitPriceMinor })),
      };
      let accountingId: string;
      try {
        ({ accountingId } = await accounting.upsertInvoice(invoice, key));
      } catch (err) {
        rethrowProviderError(err, 'accounting system');
      }
      await db.accountingSync.upsert({
        where: { orderId },
        create: { orderId, externalId, accountingId, syncedAt: new Date() },
        update: { externalId, accountingId, syncedAt: new Date() },
      });
      return { accountingId, externalId, idempotencyKey: key, syncedNow: true };
    },
  };
}
