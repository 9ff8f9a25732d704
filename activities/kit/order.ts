/**
 * The order as a step reads it: one typed read per attempt, which the kit hands to a provider step's `request` (and
 * a provider compensation's) as `ctx.order`, and from which `planOrder` takes the facts of a plan's summaries. A
 * step's request is then a mapping of the order (and of earlier steps' answers: ./answers.ts), not a query of its
 * own.
 */
import type { OrderFacts } from '../../workflows/order-plan.js';
import type { SqlQueries } from '../ports.js';
import { notFound } from './failures.js';

/** One line of an order, in line order. Amounts in integer minor units. */
export interface StepOrderLine {
  sku: string;
  quantity: number;
  /** The unit price the order was placed at (minor units). */
  unitPriceMinor: number;
  /** The product's name (the catalogue's current name). */
  name: string;
}

/** The order's invoice, once `createInvoice` issued it. */
export interface StepOrderInvoice {
  id: string;
  /** e.g. `INV-000042`. */
  number: string;
  /** `issued`, or `void` once the compensation voided it. */
  status: 'issued' | 'void';
  currency: string;
  totalMinor: number;
  /** ISO 8601, from the database clock. */
  issuedAt: string;
}

/** The stored order: what a step's request may read (see the module). Extends what a plan's summaries read. */
export interface StepOrder extends OrderFacts {
  customerName: string | null;
  /** ISO 4217 code. */
  currency: string;
  lines: StepOrderLine[];
  /** When the order was placed, ISO 8601. */
  createdAt: string;
  /** Its invoice, or null before `createInvoice` ran. */
  invoice: StepOrderInvoice | null;
  /** The customer's payment method (a card order), or null: paid on account. Never log or show it. */
  payment: { method: string } | null;
}

interface OrderRow {
  customer_email: string;
  customer_name: string | null;
  currency: string;
  total_minor: number;
  payment_method: string | null;
  created_at: Date;
  lines: StepOrderLine[] | null;
  invoice_id: string | null;
  invoice_number: string | null;
  invoice_status: 'issued' | 'void' | null;
  invoice_currency: string | null;
  invoice_total_minor: number | null;
  invoice_issued_at: Date | null;
}

/**
 * Reads the order `orderId` in one statement: the order row, its lines in line order with the products' names, and
 * its invoice.
 * @throws ApplicationFailure `RecordNotFoundError` (non-retryable) when there is no such order.
 */
export async function readOrder(db: SqlQueries, orderId: string): Promise<StepOrder> {
  const [row] = await db.$queryRaw<OrderRow[]>`
    SELECT o.customer_email, o.customer_name, o.currency, o.total_minor, o.payment_method, o.created_at,
           (SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity,
                                              'unitPriceMinor', l.unit_price_minor, 'name', p.name)
                            ORDER BY l.line_no)
            FROM order_lines l JOIN products p ON p.sku = l.sku WHERE l.order_id = o.id) AS lines,
           i.id::text AS invoice_id, i.number AS invoice_number, i.status AS invoice_status,
           i.currency AS invoice_currency, i.total_minor AS invoice_total_minor, i.issued_at AS invoice_issued_at
    FROM orders o LEFT JOIN invoices i ON i.order_id = o.id
    WHERE o.id = ${orderId}::uuid`;
  if (!row) throw notFound('order', orderId);
  return {
    orderId,
    customerEmail: row.customer_email,
    customerName: row.customer_name,
    currency: row.currency,
    totalMinor: row.total_minor,
    payment: row.payment_method === null ? null : { method: row.payment_method },
    createdAt: row.created_at.toISOString(),
    lines: row.lines ?? [],
    invoice:
      row.invoice_id === null
        ? null
        : {
            id: row.invoice_id,
            number: row.invoice_number!,
            status: row.invoice_status!,
            currency: row.invoice_currency!,
            totalMinor: row.invoice_total_minor!,
            issuedAt: row.invoice_issued_at!.toISOString(),
          },
  };
}
