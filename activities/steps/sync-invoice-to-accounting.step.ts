/**
 * Sync the invoice to accounting: an upsert by external id (the invoice number, PUT semantics) with key
 * `accounting-invoice:<orderId>`, recorded in `accounting_syncs`. A void invoice is never synced.
 */
import { accounting } from '../../providers/accounting.provider.js';
import { defineProviderStep, StepPhase } from '../kit/define.js';
import { notFound } from '../kit/failures.js';
import { halted } from '../kit/order-guards.js';
import { formatMinor } from '../kit/text.js';

/** The idempotency key of an order's accounting sync. */
export function accountingInvoiceKey(orderId: string): string {
  return `accounting-invoice:${orderId}`;
}

export const syncInvoiceToAccounting = defineProviderStep({
  name: 'syncInvoiceToAccounting',
  phase: StepPhase.AfterPivot,
  status: 'accounting_synced',
  label: 'Synced to accounting',
  description: 'Upserts the invoice in the accounting system by its number and records the accounting id.',
  provider: accounting,
  operation: 'upsertInvoice',
  key: accountingInvoiceKey,
  summary: (order) => `invoice of ${formatMinor(order.totalMinor, order.currency)} to accounting`,
  /**
   * The invoice from the stored order and invoice only (every attempt sends the identical body).
   * @throws ApplicationFailure `RecordNotFoundError` (order or invoice missing), `OrderHaltedError` (the invoice is void).
   */
  async request({ orderId, db }) {
    const [order] = await db.$queryRaw<
      Array<{
        customer_email: string;
        number: string | null;
        status: string | null;
        currency: string | null;
        total_minor: number | null;
        issued_at: Date | null;
        lines: Array<{ sku: string; quantity: number; unitPriceMinor: number }> | null;
      }>
    >`
      SELECT o.customer_email, i.number, i.status, i.currency, i.total_minor, i.issued_at,
             (SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity,
                                                'unitPriceMinor', l.unit_price_minor) ORDER BY l.line_no)
              FROM order_lines l WHERE l.order_id = o.id) AS lines
      FROM orders o LEFT JOIN invoices i ON i.order_id = o.id
      WHERE o.id = ${orderId}::uuid`;
    if (!order) throw notFound('order', orderId);
    if (order.number === null) throw notFound('invoice of order', orderId);
    if (order.status === 'void') throw halted(orderId, 'syncInvoiceToAccounting', `invoice ${order.number} is void`);
    return {
      externalId: order.number,
      orderId,
      customerEmail: order.customer_email,
      currency: order.currency!,
      totalMinor: order.total_minor!,
      issuedAt: order.issued_at!.toISOString(),
      lines: order.lines ?? [],
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
