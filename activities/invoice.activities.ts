/**
 * Invoice activities: create the order's invoice once, and void it (the compensation).
 *
 * The order id is the natural key (`invoices.order_id` is unique). Creation locks the order row, returns
 * the existing invoice if there is one, and otherwise allocates the next number from the gap-free
 * `invoice_counters` row in the same transaction, so a re-run or a concurrent run returns the same
 * invoice and number and never burns a number.
 */
import { randomUUID } from 'node:crypto';
import { notFound } from './failures.js';
import type { Db } from './ports.js';

/** Input of createInvoice / voidInvoice. */
export interface CreateInvoiceInput {
  orderId: string;
}
export type VoidInvoiceInput = CreateInvoiceInput;

/** The order's invoice. Amounts in integer minor units. */
export interface CreateInvoiceResult {
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

/** Result of voidInvoice: whether this run changed the status to `void`. */
export interface VoidInvoiceResult {
  invoiceNumber: string | null;
  voided: boolean;
}

/** Invoice numbers look like `INV-000042` (series + 6 digits, wider past 999999). */
export function formatInvoiceNumber(series: string, n: number): string {
  return `${series}-${String(n).padStart(6, '0')}`;
}

/** Builds the invoice activities over the database port. */
export function createInvoiceActivities(db: Db) {
  return {
    /**
     * Creates the invoice for the order, or returns the one that exists.
     * @throws ApplicationFailure `NotFoundError` (non-retryable) when the order does not exist.
     */
    async createInvoice(input: CreateInvoiceInput): Promise<CreateInvoiceResult> {
      const { orderId } = input;
      return db.$transaction(async (tx) => {
        const orders = await tx.$queryRaw<Array<{ currency: string; total_minor: number }>>`
          SELECT currency, total_minor FROM orders WHERE id = ${orderId}::uuid FOR UPDATE`;
        const order = orders[0];
        if (!order) throw notFound('order', orderId);
        const existing = await tx.invoice.findUnique({ where: { orderId } });
        if (existing) {
          return {
            invoiceId: existing.id,
            invoiceNumber: existing.number,
            currency: existing.currency,
            totalMinor: existing.totalMinor,
            issuedAt: existing.issuedAt.toISOString(),
            created: false,
          };
        }
        const [counter] = await tx.$queryRaw<Array<{ n: number }>>`
          UPDATE invoice_counters SET next = next + 1 WHERE series = 'INV' RETURNING next - 1 AS n`;
        if (!counter) throw new Error('invoice counter row INV is missing (run the migrations)');
        const invoice = await tx.invoice.create({
          data: {
            id: randomUUID(),
            orderId,
            number: formatInvoiceNumber('INV', Number(counter.n)),
            status: 'issued',
            currency: order.currency,
            totalMinor: order.total_minor,
          },
        });
        return {
          invoiceId: invoice.id,
          invoiceNumber: invoice.number,
          currency: invoice.currency,
          totalMinor: invoice.totalMinor,
          issuedAt: invoice.issuedAt.toISOString(),
          created: true,
        };
      });
    },

    /**
     * Compensation of createInvoice: sets the invoice's status to `void` (an absolute value; the number
     * stays allocated, as invoice series must not be reused). No invoice → nothing to do.
     */
    async voidInvoice(input: VoidInvoiceInput): Promise<VoidInvoiceResult> {
      const invoice = await db.invoice.findUnique({ where: { orderId: input.orderId } });
      if (!invoice) return { invoiceNumber: null, voided: false };
      const updated = await db.invoice.updateMany({
        where: { orderId: input.orderId, status: 'issued' },
        data: { status: 'void', voidedAt: new Date() },
      });
      return { invoiceNumber: invoice.number, voided: updated.count === 1 };
    },
  };
}
