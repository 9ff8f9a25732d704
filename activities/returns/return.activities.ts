/**
 * The return workflow's activities (workflows/order-return.contract.ts `ReturnActivities`). Provider calls are
 * claim-first under keys from the return's identity (activities/kit/effect.ts), fenced by the return row's lock;
 * database writes are absolute or recorded movements with ids of their own, so every activity is safe to run twice
 * or concurrently.
 *
 * The refund rule (docs/api.md, "Returns"): each received unit that is not damaged is refunded at its order line's
 * unit price; each damaged unit at `damaged_refund_percent` of it (`RETURN_DAMAGED_REFUND_PERCENT` when the return
 * was asked for; default 0), rounded down to the minor unit per line; the sum is capped at what the order's other
 * returns left of its total. Only undamaged units go back to stock.
 */
import { ApplicationFailure } from '@temporalio/common';
import { accounting } from '../../providers/accounting.provider.js';
import { carrier } from '../../providers/carrier.provider.js';
import { email } from '../../providers/email.provider.js';
import { payments } from '../../providers/payments.provider.js';
import { ErrorType } from '../../workflows/errors.js';
import {
  FINAL_RETURN_STATUSES,
  type ReturnStatus,
  type ReturnActivities,
} from '../../workflows/order-return.contract.js';
import { displayText, formatMinor } from '../catalogue/text.js';
import { runProviderEffect } from '../kit/effect.js';
import { notFound } from '../kit/failures.js';
import type { ActivityDeps, SqlQueries } from '../ports.js';

/** A return as its activities read it: the return, its lines, its order's customer, invoice and payment. */
export interface StoredReturn {
  id: string;
  orderId: string;
  status: ReturnStatus;
  rmaNumber: string;
  currency: string;
  damagedRefundPercent: number;
  refundMinor: number | null;
  labelUrl: string | null;
  trackingNumber: string | null;
  customerEmail: string;
  customerName: string | null;
  orderTotalMinor: number;
  invoiceNumber: string | null;
  /** The provider's payment id when the order's payment was captured; else null. */
  capturedPaymentId: string | null;
  lines: Array<{
    sku: string;
    quantity: number;
    unitPriceMinor: number;
    receivedQuantity: number | null;
    damagedQuantity: number | null;
  }>;
}

/**
 * Reads a return (one query).
 * @throws ApplicationFailure `RecordNotFoundError` (non-retryable) when there is no such return.
 */
export async function readReturn(db: SqlQueries, returnId: string): Promise<StoredReturn> {
  const [row] = await db.$queryRaw<StoredReturn[]>`
    SELECT r.id, r.order_id AS "orderId", r.status, r.rma_number AS "rmaNumber", r.currency,
           r.damaged_refund_percent AS "damagedRefundPercent", r.refund_minor AS "refundMinor",
           r.label_url AS "labelUrl", r.tracking_number AS "trackingNumber",
           o.customer_email AS "customerEmail", o.customer_name AS "customerName", o.total_minor AS "orderTotalMinor",
           i.number AS "invoiceNumber",
           CASE WHEN p.status = 'captured' THEN p.provider_payment_id END AS "capturedPaymentId",
           (SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity,
                   'unitPriceMinor', l.unit_price_minor, 'receivedQuantity', l.received_quantity,
                   'damagedQuantity', l.damaged_quantity) ORDER BY l.sku)
            FROM return_lines l WHERE l.return_id = r.id) AS lines
    FROM returns r
    JOIN orders o ON o.id = r.order_id
    LEFT JOIN invoices i ON i.order_id = r.order_id
    LEFT JOIN payments p ON p.order_id = r.order_id
    WHERE r.id = ${returnId}::uuid`;
  if (!row) throw notFound('return', returnId);
  return { ...row, lines: row.lines ?? [] };
}

/**
 * Locks the return row for the rest of the transaction.
 * @param step the step that is about to start an effect: refused when the return ended; null: no refusal.
 * @returns the return's status.
 * @throws ApplicationFailure `RecordNotFoundError` when missing, `OrderClosedError` (non-retryable) when `step` is
 *   given and the return ended (withdrawn, expired, completed): no effect starts for it any more.
 */
async function lockOpenReturn(tx: SqlQueries, returnId: string, step: string | null): Promise<ReturnStatus> {
  const [row] = await tx.$queryRaw<Array<{ status: ReturnStatus }>>`
    SELECT status FROM returns WHERE id = ${returnId}::uuid FOR UPDATE`;
  if (!row) throw notFound('return', returnId);
  if (step !== null && FINAL_RETURN_STATUSES.includes(row.status)) {
    throw ApplicationFailure.nonRetryable(`${step}: return ${returnId} is ${row.status}`, ErrorType.OrderClosed);
  }
  return row.status;
}

/** A line's refund (minor units): undamaged units in full, damaged ones at `percent`, rounded down. */
export function lineRefundMinor(
  line: { unitPriceMinor: number; receivedQuantity: number | null; damagedQuantity: number | null },
  percent: number,
): number {
  const received = line.receivedQuantity ?? 0;
  const damaged = line.damagedQuantity ?? 0;
  return (received - damaged) * line.unitPriceMinor + Math.floor((damaged * line.unitPriceMinor * percent) / 100);
}

/** The return's activities over `deps`. */
export function createReturnActivities(deps: ActivityDeps): ReturnActivities {
  const { db } = deps;
  return {
    async createReturnLabel({ returnId }) {
      const { performed, providerId } = await runProviderEffect(deps, {
        key: `return-label:${returnId}`,
        kind: 'createReturnLabel',
        provider: carrier,
        operation: 'createReturnLabel',
        lock: (tx, start) => lockOpenReturn(tx, returnId, start ? 'createReturnLabel' : null),
        build: async () => {
          const r = await readReturn(db, returnId);
          return {
            reference: r.rmaNumber,
            shipmentReference: r.orderId,
            sender: { email: r.customerEmail, ...(r.customerName ? { name: r.customerName } : {}) },
            items: r.lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
          };
        },
        record: async (tx, answer) => {
          const res = answer.response as { id: string; trackingNumber: string; labelUrl: string };
          await tx.$executeRaw`
            UPDATE returns SET label_id = ${res.id}, tracking_number = ${res.trackingNumber}, label_url = ${res.labelUrl},
                   status = CASE WHEN status = 'requested' THEN 'label_created' ELSE status END, updated_at = now()
            WHERE id = ${returnId}::uuid`;
        },
      });
      return { labelId: providerId, performed };
    },

    async sendReturnEmail({ returnId, kind }) {
      const { providerId } = await runProviderEffect(deps, {
        key: `${kind === 'label' ? 'return-label-email' : 'return-refund-email'}:${returnId}`,
        kind: 'sendReturnEmail',
        provider: email,
        operation: 'send',
        lock: (tx) => lockOpenReturn(tx, returnId, null),
        build: async () => returnEmail(await readReturn(db, returnId), kind),
      });
      return { messageId: providerId };
    },

    async recordReturnReceipt({ returnId, receipt }) {
      return db.$transaction(async (tx) => {
        await lockOpenReturn(tx, returnId, 'recordReturnReceipt');
        const before = await readReturn(tx, returnId);
        // The order row too (return, then order): two receipts of one order take turns, so the cap below counts the
        // other's refund.
        await tx.$queryRaw`SELECT 1 FROM orders WHERE id = ${before.orderId}::uuid FOR UPDATE`;
        // Recorded before (a re-run): the stored amount and movements are the answer.
        if (before.refundMinor !== null) {
          return {
            refundMinor: before.refundMinor,
            restocked: await restockedUnits(tx, returnId),
            refund: formatMinor(before.refundMinor, before.currency),
          };
        }
        const received = new Map(receipt.lines.map((l) => [l.sku, l]));
        let total = 0;
        for (const line of before.lines) {
          const got = received.get(line.sku);
          const quantity = got?.quantity ?? 0;
          const damaged = got?.damaged ?? 0;
          await tx.$executeRaw`
            UPDATE return_lines SET received_quantity = ${quantity}, damaged_quantity = ${damaged}
            WHERE return_id = ${returnId}::uuid AND sku = ${line.sku}`;
          total += lineRefundMinor(
            { ...line, receivedQuantity: quantity, damagedQuantity: damaged },
            before.damagedRefundPercent,
          );
          const undamaged = quantity - damaged;
          if (undamaged <= 0) continue;
          // Lines in SKU order (readReturn's), as every writer of products locks them.
          await tx.$executeRaw`
            WITH moved AS (
              INSERT INTO inventory_movements (id, sku, order_id, reason, on_hand_delta, reserved_delta)
              VALUES (${`return:${returnId}:${line.sku}`}, ${line.sku}, ${before.orderId}::uuid, 'return', ${undamaged}, 0)
              ON CONFLICT (id) DO NOTHING
              RETURNING 1)
            UPDATE products SET on_hand = on_hand + ${undamaged}, updated_at = now()
            WHERE sku = ${line.sku} AND EXISTS (SELECT 1 FROM moved)`;
        }
        // Never more than what the order's other returns left of its total (so never more than was captured).
        const [left] = await tx.$queryRaw<Array<{ left: number }>>`
          SELECT (o.total_minor - coalesce(sum(r.refund_minor), 0))::int AS left
          FROM orders o LEFT JOIN returns r ON r.order_id = o.id AND r.id <> ${returnId}::uuid AND r.refund_minor IS NOT NULL
          WHERE o.id = ${before.orderId}::uuid GROUP BY o.total_minor`;
        const refundMinor = Math.max(0, Math.min(total, left?.left ?? 0));
        await tx.$executeRaw`
          UPDATE returns SET status = 'received', received_at = ${receipt.receivedAt}::timestamptz,
                 received_by = ${receipt.by}, refund_minor = ${refundMinor}, updated_at = now()
          WHERE id = ${returnId}::uuid`;
        return {
          refundMinor,
          restocked: await restockedUnits(tx, returnId),
          refund: formatMinor(refundMinor, before.currency),
        };
      });
    },

    async refundReturn({ returnId }) {
      const r = await readReturn(db, returnId);
      if (r.refundMinor === null) throw notFound('receipt of return', returnId);
      if (r.refundMinor === 0 || r.capturedPaymentId === null) return { refunded: false, refundId: null };
      const paymentId = r.capturedPaymentId;
      const { providerId } = await runProviderEffect(deps, {
        key: `refund:${returnId}`,
        kind: 'refundReturn',
        provider: payments,
        operation: 'refund',
        lock: (tx, start) => lockOpenReturn(tx, returnId, start ? 'refundReturn' : null),
        build: async () => ({ paymentId, amountMinor: r.refundMinor! }),
        record: async (tx, answer) => {
          await tx.$executeRaw`
            UPDATE returns SET refund_id = ${answer.providerId}, refunded_at = coalesce(refunded_at, now()),
                   status = CASE WHEN status IN ('received', 'attention_required') THEN 'refunded' ELSE status END,
                   attention_reason = NULL, updated_at = now()
            WHERE id = ${returnId}::uuid`;
          // The payment row locked first, in a statement of its own: the sum below then sees a refund of another
          // return of the order that committed while this one waited (a statement that waited for a lock reads the
          // rest from its own, older snapshot).
          await tx.$queryRaw`SELECT 1 FROM payments WHERE order_id = ${r.orderId}::uuid FOR UPDATE`;
          await tx.$executeRaw`
            UPDATE payments SET refunded_minor = (
              SELECT coalesce(sum(refund_minor), 0) FROM returns WHERE order_id = ${r.orderId}::uuid AND refund_id IS NOT NULL)
            WHERE order_id = ${r.orderId}::uuid`;
        },
      });
      return { refunded: true, refundId: providerId };
    },

    async creditReturn({ returnId }) {
      const r = await readReturn(db, returnId);
      if (r.refundMinor === null) throw notFound('receipt of return', returnId);
      if (r.refundMinor === 0) return { credited: false, creditNoteId: null };
      if (r.invoiceNumber === null) throw notFound('invoice of order', r.orderId);
      const invoiceNumber = r.invoiceNumber;
      const { providerId } = await runProviderEffect(deps, {
        key: `credit-note:${returnId}`,
        kind: 'creditReturn',
        provider: accounting,
        operation: 'upsertCreditNote',
        lock: (tx, start) => lockOpenReturn(tx, returnId, start ? 'creditReturn' : null),
        build: async () => ({
          externalId: r.rmaNumber,
          invoiceExternalId: invoiceNumber,
          orderId: r.orderId,
          currency: r.currency,
          totalMinor: r.refundMinor!,
          lines: r.lines
            .filter((l) => (l.receivedQuantity ?? 0) > 0)
            .map((l) => ({
              sku: l.sku,
              quantity: l.receivedQuantity!,
              amountMinor: lineRefundMinor(l, r.damagedRefundPercent),
            })),
        }),
        record: async (tx, answer) => {
          await tx.$executeRaw`
            UPDATE returns SET credit_note_id = ${answer.providerId}, credited_at = coalesce(credited_at, now()),
                   attention_reason = NULL, updated_at = now()
            WHERE id = ${returnId}::uuid`;
        },
      });
      return { credited: true, creditNoteId: providerId };
    },

    async setReturnStatus({ returnId, status, reason }) {
      const final = FINAL_RETURN_STATUSES.includes(status);
      const applied = await db.$executeRaw`
        UPDATE returns SET status = ${status}, attention_reason = ${reason ?? null},
               ended_at = CASE WHEN ${final} THEN coalesce(ended_at, now()) ELSE ended_at END, updated_at = now()
        WHERE id = ${returnId}::uuid AND (status <> ALL(${[...FINAL_RETURN_STATUSES]}) OR status = ${status})`;
      return { applied: applied === 1 };
    },
  };
}

/** Units the return put back in stock (its `return:<returnId>:<sku>` movements). */
async function restockedUnits(tx: SqlQueries, returnId: string): Promise<number> {
  const [row] = await tx.$queryRaw<Array<{ units: number }>>`
    SELECT coalesce(sum(on_hand_delta), 0)::int AS units FROM inventory_movements WHERE id LIKE ${`return:${returnId}:%`}`;
  return row?.units ?? 0;
}

/** The customer's email about a return: its label, or its refund. */
function returnEmail(r: StoredReturn, kind: 'label' | 'completed') {
  const hello = `Hello ${displayText(r.customerName ?? r.customerEmail)},`;
  const metadata = { orderId: r.orderId, returnId: r.id, rmaNumber: r.rmaNumber };
  if (kind === 'label') {
    const items = r.lines.map((l) => `  ${l.quantity} x ${l.sku}`);
    return {
      to: r.customerEmail,
      subject: `Your return ${r.rmaNumber}: label`,
      text: [
        hello,
        '',
        `We registered your return ${r.rmaNumber} of order ${r.orderId}:`,
        ...items,
        `Print your prepaid label: ${r.labelUrl ?? '-'} (tracking ${r.trackingNumber ?? '-'}).`,
      ].join('\n'),
      metadata,
    };
  }
  const amount = formatMinor(r.refundMinor ?? 0, r.currency);
  const money =
    (r.refundMinor ?? 0) === 0
      ? 'Nothing is refunded for the units received (damaged).'
      : r.capturedPaymentId
        ? `We refunded ${amount} to your card.`
        : `We credited ${amount} to your account.`;
  const items = r.lines.map((l) => `  ${l.receivedQuantity ?? 0} x ${l.sku} (${l.damagedQuantity ?? 0} damaged)`);
  return {
    to: r.customerEmail,
    subject: `Your return ${r.rmaNumber}: received`,
    text: [hello, '', `We received your return ${r.rmaNumber} of order ${r.orderId}:`, ...items, money].join('\n'),
    metadata,
  };
}
