/**
 * Sync of the invoice to the accounting system: an upsert by external id (PUT semantics, the invoice
 * number), sent with `Idempotency-Key: accounting-invoice:<orderId>`, whose result is recorded in
 * `accounting_syncs`. The upsert is idempotent by nature; the key makes retries replays at the provider.
 */
import { OrderStatus, statusRank } from '../workflows/order-fulfilment.contract.js';
import { notFound, rethrowProviderError } from './failures.js';
import { halted, withHeartbeats, writeOrderStatus } from './order-guards.js';
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
     * Upserts the order's invoice in the accounting system (heartbeating during the call) and records its id,
     * with the order's status `completed`, in one transaction (`synced_at` from the database clock). A void
     * invoice is never synced.
     * @throws ApplicationFailure `NotFoundError` (order or invoice missing), `OrderHaltedError` (invoice void),
     *   `ProviderRejectedError` or `UnauthorizedError` (permanent), `ProviderUnavailableError` (transient, retried).
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
      if (order.invoice.status === 'void')
        throw halted(orderId, 'syncInvoiceToAccounting', `invoice ${externalId} is void`);
      const rank = statusRank(OrderStatus.Completed);
      if (order.accountingSync?.externalId === externalId) {
        await writeOrderStatus(db, orderId, OrderStatus.Completed, rank);
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
        ({ accountingId } = await withHeartbeats(() => accounting.upsertInvoice(invoice, key)));
      } catch (err) {
        rethrowProviderError(err, 'accounting system');
      }
      await db.$transaction(async (tx) => {
        await tx.$executeRaw`
          INSERT INTO accounting_syncs (order_id, external_id, accounting_id, synced_at)
          VALUES (${orderId}::uuid, ${externalId}, ${accountingId}, now())
          ON CONFLICT (order_id) DO UPDATE
            SET external_id = EXCLUDED.external_id, accounting_id = EXCLUDED.accounting_id, synced_at = now()`;
        await writeOrderStatus(tx, orderId, OrderStatus.Completed, rank);
      });
      return { accountingId, externalId, idempotencyKey: key, syncedNow: true };
    },
  };
}
