/**
 * Sync the invoice to accounting: an upsert by external id (the invoice number, PUT semantics) with key
 * `accounting-invoice:<orderId>`, recorded in `accounting_syncs`. A void invoice is never synced.
 */
import { accounting } from '../../providers/accounting.provider.js';
import { syncInvoiceToAccounting as entry } from '../catalogue/steps.js';
import { defineProviderStep } from '../kit/define.js';
import { notFound } from '../kit/failures.js';
import { halted } from '../kit/order-guards.js';

/** The idempotency key of an order's accounting sync (its catalogue entry's). */
export const accountingInvoiceKey = entry.key;

/** The sync (its metadata: the catalogue entry), and what it does. */
export const syncInvoiceToAccounting = defineProviderStep({
  ...entry,
  provider: accounting,
  operation: 'upsertInvoice',
  /**
   * The invoice from the stored order and invoice only (every attempt sends the identical body).
   * @throws ApplicationFailure `RecordNotFoundError` (order or invoice missing), `OrderHaltedError` (the invoice is void).
   */
  request: ({ orderId, order }) => {
    const { invoice } = order;
    if (invoice === null) throw notFound('invoice of order', orderId);
    if (invoice.status === 'void')
      throw halted(orderId, 'syncInvoiceToAccounting', `invoice ${invoice.number} is void`);
    return {
      externalId: invoice.number,
      orderId,
      customerEmail: order.customerEmail,
      currency: invoice.currency,
      totalMinor: invoice.totalMinor,
      issuedAt: invoice.issuedAt,
      lines: order.lines.map((l) => ({ sku: l.sku, quantity: l.quantity, unitPriceMinor: l.unitPriceMinor })),
    };
  },
  /** The accounting system's id of the invoice, in `accounting_syncs`. */
  async record({ orderId, tx, request, answer }) {
    await tx.$executeRaw`
      INSERT INTO accounting_syncs (order_id, external_id, accounting_id, synced_at)
      VALUES (${orderId}::uuid, ${request.externalId}, ${answer.response.id}, now())
      ON CONFLICT (order_id) DO UPDATE
        SET external_id = EXCLUDED.external_id, accounting_id = EXCLUDED.accounting_id, synced_at = now()`;
  },
});
