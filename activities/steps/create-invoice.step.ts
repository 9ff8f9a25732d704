/**
 * Create the invoice: once per order (`invoices.order_id` is unique), its number allocated in the same transaction
 * from the gap-free `invoice_counters` row. Its compensation, voidInvoice, sets the invoice `void` (an absolute
 * value; the number stays allocated, as invoice series must not be reused).
 *
 * Idempotent by nature: the order id is the invoice's natural key; a re-run finds the invoice and returns it, and
 * the counter moves only when there is none, so no number is burnt.
 */
import { randomUUID } from 'node:crypto';
import { createInvoice as entry } from '../catalogue/steps.js';
import { defineDatabaseStep } from '../kit/define.js';
import { halted } from '../kit/order-guards.js';

/** The series of invoice numbers (the `invoice_counters` row). */
const INVOICE_SERIES = 'INV';

/** Invoice numbers look like `INV-000042` (series + 6 digits, wider past 999999). */
export function formatInvoiceNumber(series: string, n: number): string {
  return `${series}-${String(n).padStart(6, '0')}`;
}

/** The order's invoice. Amounts in integer minor units. */
export interface InvoiceData {
  invoiceId: string;
  /** e.g. `INV-000042`. */
  invoiceNumber: string;
  currency: string;
  totalMinor: number;
  /** ISO 8601. */
  issuedAt: string;
  /** True when this run created it; false when it found it. */
  created: boolean;
}

/** The invoice step (its metadata: the catalogue entry), and what it does. */
export const createInvoice = defineDatabaseStep({
  ...entry,
  idempotency: { byNature: 'the order id is the invoice’s natural key (`invoices.order_id` is unique)' },
  /**
   * `issued_at` comes from the database clock. A void invoice is never "already done": the step refuses it.
   * @throws ApplicationFailure `OrderHaltedError` (its invoice is void).
   */
  async run({ orderId, tx }): Promise<InvoiceData> {
    // Under the order-row lock, in a statement of its own (so its snapshot sees an invoice committed by a run that
    // held the lock before): the existing invoice, or a new one with the next number of the series.
    const id = randomUUID();
    const [row] = await tx.$queryRaw<
      Array<{
        id: string;
        number: string;
        status: string;
        currency: string;
        total_minor: number;
        issued_at: Date;
        created: boolean;
      }>
    >`
      WITH o AS (SELECT currency, total_minor FROM orders WHERE id = ${orderId}::uuid),
      existing AS (
        SELECT id, number, status, currency, total_minor, issued_at FROM invoices WHERE order_id = ${orderId}::uuid),
      counter AS (
        UPDATE invoice_counters SET next = next + 1
        WHERE series = ${INVOICE_SERIES} AND NOT EXISTS (SELECT 1 FROM existing) AND EXISTS (SELECT 1 FROM o)
        RETURNING next - 1 AS n),
      created AS (
        INSERT INTO invoices (id, order_id, number, status, currency, total_minor)
        SELECT ${id}::uuid, ${orderId}::uuid,
               ${INVOICE_SERIES}::text || '-' || CASE WHEN n < 1000000 THEN lpad(n::text, 6, '0') ELSE n::text END,
               'issued', o.currency, o.total_minor
        FROM counter, o
        RETURNING id, number, status, currency, total_minor, issued_at)
      SELECT id::text, number, status, currency, total_minor, issued_at, false AS created FROM existing
      UNION ALL
      SELECT id::text, number, status, currency, total_minor, issued_at, true AS created FROM created`;
    // The kit locked the order row, so the order exists: no row means the counter row is missing.
    if (!row) throw new Error(`invoice counter row ${INVOICE_SERIES} is missing (run the migrations)`);
    if (row.status === 'void') throw halted(orderId, 'createInvoice', `invoice ${row.number} is void`);
    return {
      invoiceId: row.id,
      invoiceNumber: row.number,
      currency: row.currency,
      totalMinor: row.total_minor,
      issuedAt: row.issued_at.toISOString(),
      created: row.created,
    };
  },
  compensation: {
    ...entry.compensation,
    async run({ orderId, tx }) {
      const [invoice] = await tx.$queryRaw<Array<{ number: string; voided: boolean }>>`
        WITH voided AS (
          UPDATE invoices SET status = 'void', voided_at = now()
          WHERE order_id = ${orderId}::uuid AND status = 'issued'
          RETURNING 1)
        SELECT number, EXISTS (SELECT 1 FROM voided) AS voided FROM invoices WHERE order_id = ${orderId}::uuid`;
      return { invoiceNumber: invoice?.number ?? null, voided: invoice?.voided ?? false };
    },
  },
});
