/**
 * Invoice activities: create the order's invoice once, and void it (the compensation).
 *
 * The order id is the natural key (`invoices.order_id` is unique). Creation locks the order row, returns
 * the existing invoice if there is one, and otherwise allocates the next number from the gap-free
 * `invoice_counters` row in the same transaction, so a re-run or a concurrent run returns the same
 * invoice and number and never burns a number.
 */
import { randomUUID } from 'node:crypto';
import { OrderStatus, statusRank } from '../workflows/order-fulfilment.contract.js';
import { notFound } from './failures.js';
import { halted, lockOrder, lockOrderForForwardStep, markHalted, writeOrderStatus } from './order-guards.js';
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
     * Creates the invoice for the order, or returns the one that exists, and sets the order's status to
     * `invoiced` in the same transaction. `issued_at` comes from the database clock. A void invoice is never
     * "already done": the step refuses it.
     * @throws ApplicationFailure `NotFoundError` (order missing), `OrderClosedError` (order already final),
     *   `OrderHaltedError` (halted, or its invoice voided); all non-retryable.
     */
    async createInvoice(input: CreateInvoiceInput): Promise<CreateInvoiceResult> {
      const { orderId } = input;
      return db.$transaction(async (tx) => {
        await lockOrderForForwardStep(tx, orderId, 'createInvoice');
        const orders = await tx.$queryRaw<Array<{ currency: string; total_minor: number }>>`
          SELECT currency, total_minor FROM orders WHERE id = ${orderId}::uuid`;
        const order = orders[0];
        if (!order) throw notFound('order', orderId);
        const existing = await tx.invoice.findUnique({ where: { orderId } });
        if (existing?.status === 'void') throw halted(orderId, 'createInvoice', `invoice ${existing.number} is void`);
        await writeOrderStatus(tx, orderId, OrderStatus.Invoiced, statusRank(OrderStatus.Invoiced));
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
        const id = randomUUID();
        const number = formatInvoiceNumber('INV', Number(counter.n));
        const [created] = await tx.$queryRaw<Array<{ issued_at: Date }>>`
          INSERT INTO invoices (id, order_id, number, status, currency, total_minor)
          VALUES (${id}::uuid, ${orderId}::uuid, ${number}, 'issued', ${order.currency}, ${order.total_minor})
          RETURNING issued_at`;
        return {
          invoiceId: id,
          invoiceNumber: number,
          currency: order.currency,
          totalMinor: order.total_minor,
          issuedAt: created!.issued_at.toISOString(),
          created: true,
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
        const invoice = await tx.invoice.findUnique({ where: { orderId } });
        if (!invoice) return { invoiceNumber: null, voided: false };
        const updated = await tx.$executeRaw`
          UPDATE invoices SET status = 'void', voided_at = now() WHERE order_id = ${orderId}::uuid AND status = 'issued'`;
        return { invoiceNumber: invoice.number, voided: updated === 1 };
      });
    },
  };
}
