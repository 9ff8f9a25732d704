/**
 * Sync of the invoice to the accounting system: an upsert by external id (PUT semantics, the invoice
 * number), sent with `Idempotency-Key: accounting-invoice:<orderId>`, whose result is recorded in
 * `accounting_syncs`. The upsert is idempotent by nature; the key makes retries replays at the provider.
 */
import { OrderStatus, statusRank } from '../workflows/order-fulfilment.contract.js';
import { notFound, rethrowProviderError } from './failures.js';
import { halted, orderStatusUpdate, withHeartbeats, writeOrderStatus } from './order-guards.js';
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

/** The order as the sync reads it: one statement (lines in line order, the invoice, an earlier sync if any). */
interface AccountingOrderRow {
  customer_email: string;
  invoice_number: string | null;
  invoice_status: string | null;
  invoice_currency: string | null;
  invoice_total_minor: number | null;
  issued_at: Date | null;
  synced_external_id: string | null;
  synced_accounting_id: string | null;
  lines: Array<{ sku: string; quantity: number; unitPriceMinor: number }> | null;
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
      const [order] = await db.$queryRaw<AccountingOrderRow[]>`
        SELECT o.customer_email, i.number AS invoice_number, i.status AS invoice_status,
               i.currency AS invoice_currency, i.total_minor AS invoice_total_minor, i.issued_at,
               a.external_id AS synced_external_id, a.accounting_id AS synced_accounting_id,
               (SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity,
                                                  'unitPriceMinor', l.unit_price_minor) ORDER BY l.line_no)
                FROM order_lines l WHERE l.order_id = o.id) AS lines
        FROM orders o
        LEFT JOIN invoices i ON i.order_id = o.id
        LEFT JOIN accounting_syncs a ON a.order_id = o.id
        WHERE o.id = ${orderId}::uuid`;
      if (!order) throw notFound('order', orderId);
      if (order.invoice_number === null) throw notFound('invoice of order', orderId);
      const externalId = order.invoice_number;
      if (order.invoice_status === 'void')
        throw halted(orderId, 'syncInvoiceToAccounting', `invoice ${externalId} is void`);
      const rank = statusRank(OrderStatus.Completed);
      if (order.synced_external_id === externalId && order.synced_accounting_id !== null) {
        await writeOrderStatus(db, orderId, OrderStatus.Completed, rank);
        return { accountingId: order.synced_accounting_id, externalId, idempotencyKey: key, syncedNow: false };
      }
      // Built only from stored, immutable fields: every attempt sends the identical body for the key.
      const invoice: AccountingInvoice = {
        externalId,
        orderId,
        customerEmail: order.customer_email,
        currency: order.invoice_currency!,
        totalMinor: order.invoice_total_minor!,
        issuedAt: order.issued_at!.toISOString(),
        lines: order.lines ?? [],
      };
      let accountingId: string;
      try {
        ({ accountingId } = await withHeartbeats(() => accounting.upsertInvoice(invoice, key)));
      } catch (err) {
        rethrowProviderError(err, 'accounting system');
      }
      // The sync record and the status in one statement: they commit together.
      await db.$executeRaw`
        WITH synced AS (
          INSERT INTO accounting_syncs (order_id, external_id, accounting_id, synced_at)
          VALUES (${orderId}::uuid, ${externalId}, ${accountingId}, now())
          ON CONFLICT (order_id) DO UPDATE
            SET external_id = EXCLUDED.external_id, accounting_id = EXCLUDED.accounting_id, synced_at = now())
        ${orderStatusUpdate(orderId, OrderStatus.Completed, rank)}`;
      return { accountingId, externalId, idempotencyKey: key, syncedNow: true };
    },
  };
}
