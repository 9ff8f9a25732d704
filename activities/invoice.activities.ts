/**
 * Invoice activities: create the order's invoice once, and void it (the compensation).
 *
 * The order id is the natural key (`invoices.order_id` is unique). Creation locks the order row, returns
 * the existing invoice if there is one, and otherwise allocates the next number from the gap-free
 * `invoice_counters` row in the same transaction, so a re-run or a concurrent run returns the same
 * invoice and number and never burns a number.
 */
import { randomUUID } from 'node:crypto';
import { Prisma } from '../prisma/generated/client.js';
import { OrderStatus, statusRank } from '../workflows/order-fulfilment.contract.js';
import { notFound } from './failures.js';
import {
  halted,
  lockOrder,
  lockOrderForForwardStep,
  markHalted,
  writeOrderStatus,
  writeStatusOfOpenOrder,
} from './order-guards.js';
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

/** The series of invoice numbers (the `invoice_counters` row). */
const INVOICE_SERIES = 'INV';

/** An invoice row as createInvoice reads or inserts it. */
interface InvoiceRow {
  id: string;
  number: string;
  status: string;
  currency: string;
  total_minor: number;
  issued_at: Date;
  created: boolean;
}

/** Builds the invoice activities over the database port. */
export function createInvoiceActivities(db: Db) {
  return {
    /**
     * Creates the invoice for the order, or returns the one that exists, and sets the order's status to
     * `invoiced` in the same transaction. `issued_at` comes from the database clock. A void invoice is never
     * "already done": the step refuses it.
     * @throws ApplicationFailure `NotFoundError` (order missing), `OrderClosedError` (order already final),
     *   `OrderHaltedError` (halted, or its invoice voided); all non-retryable.
     */
    async createInvoice(input: CreateInvoiceInput): Promise<CreateInvoiceResult> {
      const { orderId } = input;
      const status = OrderStatus.Invoiced;
      const rank = statusRank(status);
      return db.$transaction(async (tx) => {
        // Fast path: lock, check and status write in one statement (undone with the rest if the invoice is void).
        let order = await writeStatusOfOpenOrder<{ currency: string; total_minor: number }>(
          tx,
          orderId,
          status,
          rank,
          Prisma.sql`currency, total_minor`,
        );
        if (!order) {
          await lockOrderForForwardStep(tx, orderId, 'createInvoice');
          const orders = await tx.$queryRaw<Array<{ currency: string; total_minor: number }>>`
            SELECT currency, total_minor FROM orders WHERE id = ${orderId}::uuid`;
          order = orders[0];
          if (!order) throw notFound('order', orderId);
          await writeOrderStatus(tx, orderId, status, rank);
        }
        // Under the order-row lock, in a statement of its own (so its snapshot sees an invoice committed by a run
        // that held the lock before): the existing invoice, or a new one with the next number of the series. The
        // counter moves only when there is no invoice, so no number is burnt.
        const id = randomUUID();
        const [row] = await tx.$queryRaw<InvoiceRow[]>`
          WITH existing AS (
            SELECT id, number, status, currency, total_minor, issued_at FROM invoices WHERE order_id = ${orderId}::uuid),
          counter AS (
            UPDATE invoice_counters SET next = next + 1
            WHERE series = ${INVOICE_SERIES} AND NOT EXISTS (SELECT 1 FROM existing)
            RETURNING next - 1 AS n),
          created AS (
            INSERT INTO invoices (id, order_id, number, status, currency, total_minor)
            SELECT ${id}::uuid, ${orderId}::uuid,
                   ${INVOICE_SERIES}::text || '-' || CASE WHEN n < 1000000 THEN lpad(n::text, 6, '0') ELSE n::text END,
                   'issued', ${order.currency}, ${order.total_minor}
            FROM counter
            RETURNING id, number, status, currency, total_minor, issued_at)
          SELECT id::text, number, status, currency, total_minor, issued_at, false AS created FROM existing
          UNION ALL
          SELECT id::text, number, status, currency, total_minor, issued_at, true AS created FROM created`;
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
      });
    },

    /**
     * Compensation of createInvoice: sets the invoice's status to `void` (an absolute value; the number
     * stays allocated, as invoice series must not be reused; `voided_at` from the database clock). Sets the
     * order's tombstone first under the order-row lock, so a late createInvoice attempt cannot issue one
     * after this ran. No invoice → nothing to void.
     * @throws ApplicationFailure `NotFoundError` when the order does not exist.
     */
    async voidInvoice(input: VoidInvoiceInput): Promise<VoidInvoiceResult> {
      const { orderId } = input;
      return db.$transaction(async (tx) => {
        await lockOrder(tx, orderId);
        await markHalted(tx, orderId, 'compensating');
        const [invoice] = await tx.$queryRaw<Array<{ number: string }>>`
          SELECT number FROM invoices WHERE order_id = ${orderId}::uuid`;
        if (!invoice) return { invoiceNumber: null, voided: false };
        const updated = await tx.$executeRaw`
          UPDATE invoices SET status = 'void', voided_at = now() WHERE order_id = ${orderId}::uuid AND status = 'issued'`;
        return { invoiceNumber: invoice.number, voided: updated === 1 };
      });
    },
  };
}
