/**
 * Returns: ask for one (checked against what the order shipped, stored, its workflow started) and read them.
 * The actions on a running return (receive, withdraw, retry) are {@link ReturnActionsService}'s.
 *
 * What can be returned: the units of each SKU the order shipped (its `shipment` inventory movements) minus what its
 * open returns (not `withdrawn` nor `expired`) already claim, within `RETURN_WINDOW_DAYS` days of the shipment
 * (`shipments.created_at`). The request checks that under the order row's lock, so two requests for the last unit
 * are decided one after the other; the check constraint `return_lines_within_shipped` is the backstop of the same rule.
 */
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Prisma } from '../../prisma/generated/client.js';
import { ReturnStatus, returnWorkflowId } from '../../workflows/order-return.contract.js';
import { ProblemException, type ValidationErrorItem } from '../common/problem-details.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import type { OrderAccess } from '../orders/order-access.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import type { CreateReturnRequest, ReturnListView, ReturnReasonCode, ReturnView } from './return.dto.js';
import { ReturnProblemType } from './return-problems.js';
import { ReturnWorkflows } from './return-workflows.service.js';

/** Most returns `GET /orders/:id/returns` lists (an order has few). */
export const MAX_RETURNS_PER_ORDER = 100;

/** The check constraint that keeps an order's open returns within what it shipped. */
const WITHIN_SHIPPED = 'return_lines_within_shipped';

/**
 * Work done first inside the transaction that stores a return, e.g. the `Idempotency-Key` claim; its writes commit
 * with the return or not at all.
 */
export type ReturnTransactionHook = (tx: Prisma.TransactionClient, returnId: string) => Promise<void>;

/** Who sees a return's internal details. */
export interface ReturnViewOptions {
  /** Show `attentionReason` (operators); null for others (it may quote a provider's answer). */
  internal: boolean;
}

const returnInclude = { lines: { orderBy: { sku: 'asc' } } } as const satisfies Prisma.ReturnInclude;
type ReturnRow = Prisma.ReturnGetPayload<{ include: typeof returnInclude }>;

/** Per SKU of an order: its unit price, what shipped, what its open returns claim. */
interface ReturnableRow {
  sku: string;
  unit_price_minor: number;
  shipped: number;
  claimed: number;
}

@Injectable()
export class ReturnsService {
  private readonly logger = new Logger(ReturnsService.name);

  constructor(
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly workflows: ReturnWorkflows,
  ) {}

  /**
   * Asks for a return of shipped units of order `orderId`. In one transaction: locks the order row, checks that the
   * order shipped, that its return window is open and that every line fits what shipped minus what its open returns
   * claim; stores the return (`requested`, RMA number from the sequence, the order's client and currency,
   * `RETURN_DAMAGED_REFUND_PERCENT`) and its lines (at the order lines' unit prices). After the commit it starts the
   * return's workflow; when that fails the return stays accepted and the {@link ReturnWorkflowSweeper} starts it.
   * @param options.access whose orders the caller may return (another client's order answers 404).
   * @param options.inTransaction runs first inside the transaction (the idempotency claim).
   * @returns the return as stored after the start.
   * @throws ProblemException 404 (no such order for the caller), 409 `order-not-shipped`, 409
   *   `return-window-closed`, 422 `return-exceeds-shipped`; nothing is stored then.
   */
  async create(
    orderId: string,
    request: CreateReturnRequest,
    options: { access: OrderAccess; inTransaction?: ReturnTransactionHook },
  ): Promise<ReturnView> {
    const id = randomUUID();
    const clientFilter = 'clientId' in options.access ? options.access.clientId : null;
    try {
      await this.prisma.$transaction(async (tx) => {
        await options.inTransaction?.(tx, id);
        // Another client's order is not locked: it does not exist for this caller.
        const [order] = await tx.$queryRaw<Array<{ client_id: string; currency: string; status: string }>>`
          SELECT client_id, currency, status FROM orders
          WHERE id = ${orderId}::uuid AND (${clientFilter}::text IS NULL OR client_id = ${clientFilter}::text)
          FOR UPDATE`;
        if (!order) throw ProblemException.notFound(`Order ${orderId}`);

        const [shipment] = await tx.$queryRaw<Array<{ shipped_at: Date; closes_at: Date; closed: boolean }>>`
          SELECT created_at AS shipped_at, created_at + make_interval(days => ${this.config.RETURN_WINDOW_DAYS}::int) AS closes_at,
                 now() > created_at + make_interval(days => ${this.config.RETURN_WINDOW_DAYS}::int) AS closed
          FROM shipments WHERE order_id = ${orderId}::uuid`;
        if (!shipment) {
          throw new ProblemException({
            type: ReturnProblemType.OrderNotShipped,
            detail: `Order ${orderId} has not shipped (it is ${order.status}): nothing to return`,
            extensions: { orderStatus: order.status },
          });
        }
        if (shipment.closed) {
          const days = this.config.RETURN_WINDOW_DAYS;
          throw new ProblemException({
            type: ReturnProblemType.ReturnWindowClosed,
            detail:
              `Order ${orderId} shipped ${shipment.shipped_at.toISOString()}: its ${days}-day return window closed ` +
              shipment.closes_at.toISOString(),
            extensions: {
              shippedAt: shipment.shipped_at.toISOString(),
              windowDays: days,
              closedAt: shipment.closes_at.toISOString(),
            },
          });
        }

        // Claimed by the order's other returns: what came back once received, else what each asked for (as the
        // CHECK return_lines_within_shipped counts).
        const returnable = await tx.$queryRaw<ReturnableRow[]>`
          SELECT ol.sku, ol.unit_price_minor,
                 coalesce((SELECT sum(-m.reserved_delta) FROM inventory_movements m
                           WHERE m.order_id = ol.order_id AND m.sku = ol.sku AND m.reason = 'shipment'), 0)::int AS shipped,
                 coalesce((SELECT sum(coalesce(l.received_quantity, l.quantity))
                           FROM return_lines l JOIN returns r ON r.id = l.return_id
                           WHERE r.order_id = ol.order_id AND l.sku = ol.sku
                             AND r.status NOT IN (${ReturnStatus.Withdrawn}, ${ReturnStatus.Expired})), 0)::int AS claimed
          FROM order_lines ol WHERE ol.order_id = ${orderId}::uuid`;
        const bySku = new Map(returnable.map((r) => [r.sku, r]));
        checkReturnable(request, bySku);

        await tx.$executeRaw`
          INSERT INTO returns (id, order_id, client_id, status, reason_code, reason_text, currency,
                               damaged_refund_percent, workflow_id)
          VALUES (${id}::uuid, ${orderId}::uuid, ${order.client_id}, ${ReturnStatus.Requested}, ${request.reason.code},
                  ${request.reason.text ?? null}, ${order.currency}, ${this.config.RETURN_DAMAGED_REFUND_PERCENT},
                  ${returnWorkflowId(id)})`;
        // Lines in SKU order, as every writer that locks per SKU does.
        const lines = [...request.lines].sort((a, b) => (a.sku < b.sku ? -1 : a.sku > b.sku ? 1 : 0));
        await tx.$executeRaw`
          INSERT INTO return_lines (return_id, sku, quantity, unit_price_minor)
          SELECT ${id}::uuid, l.sku, l.quantity, l.unit_price_minor
          FROM unnest(${lines.map((l) => l.sku)}::text[], ${lines.map((l) => l.quantity)}::int[],
                      ${lines.map((l) => bySku.get(l.sku)!.unit_price_minor)}::int[])
               AS l(sku, quantity, unit_price_minor)`;
      });
    } catch (err) {
      if (isWithinShippedViolation(err)) {
        // The constraint's backstop: the order's returns changed in a way the check above did not see.
        throw new ProblemException(
          {
            type: ReturnProblemType.ReturnExceedsShipped,
            detail: 'The return claims more units than the order shipped and its open returns leave',
            extensions: {
              lines: [],
              errors: [{ path: 'lines', message: 'More units than shipped and not yet claimed' }],
            },
          },
          { cause: err },
        );
      }
      throw err;
    }

    try {
      await this.workflows.start(id);
    } catch (err) {
      // Accepted all the same: the sweeper starts it (nothing accepted is lost).
      this.logger.warn({ err, returnId: id, orderId }, 'the return workflow did not start; the sweeper will');
    }
    return this.get(id, { allClients: true }, { internal: false });
  }

  /**
   * @param access whose returns the caller may see (a client its own orders' returns).
   * @throws ProblemException 404 when there is no such return, or the caller may not see it.
   */
  async get(id: string, access: OrderAccess, view: ReturnViewOptions): Promise<ReturnView> {
    const found = await this.find(id, access, view);
    if (!found) throw ProblemException.notFound(`Return ${id}`);
    return found;
  }

  /** The return as `GET /returns/:id` shows it, or null when there is none (for this caller). */
  async find(id: string, access: OrderAccess, view: ReturnViewOptions): Promise<ReturnView | null> {
    const row = await this.prisma.return.findFirst({
      where: { id, ...('clientId' in access ? { clientId: access.clientId } : {}) },
      include: returnInclude,
    });
    return row ? toView(row, view) : null;
  }

  /**
   * The returns of an order, newest first (at most {@link MAX_RETURNS_PER_ORDER}).
   * @throws ProblemException 404 when there is no such order, or the caller may not see it.
   */
  async listForOrder(orderId: string, access: OrderAccess, view: ReturnViewOptions): Promise<ReturnListView> {
    const clientWhere = 'clientId' in access ? { clientId: access.clientId } : {};
    const order = await this.prisma.order.findFirst({ where: { id: orderId, ...clientWhere }, select: { id: true } });
    if (!order) throw ProblemException.notFound(`Order ${orderId}`);
    const rows = await this.prisma.return.findMany({
      where: { orderId },
      include: returnInclude,
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: MAX_RETURNS_PER_ORDER,
    });
    return { items: rows.map((row) => toView(row, view)) };
  }
}

/**
 * Checks each line against what the order shipped of its SKU minus what its open returns claim.
 * @throws ProblemException 422 `return-exceeds-shipped` listing every refused line.
 */
function checkReturnable(request: CreateReturnRequest, bySku: ReadonlyMap<string, ReturnableRow>): void {
  const refused: Array<{ sku: string; requested: number; shipped: number; returnable: number }> = [];
  const errors: ValidationErrorItem[] = [];
  request.lines.forEach((line, index) => {
    const row = bySku.get(line.sku);
    const shipped = row?.shipped ?? 0;
    const claimed = row?.claimed ?? 0;
    const returnable = Math.max(0, shipped - claimed);
    if (line.quantity <= returnable) return;
    refused.push({ sku: line.sku, requested: line.quantity, shipped, returnable });
    errors.push(
      shipped === 0
        ? { path: `lines.${index}.sku`, message: `${line.sku} was not shipped with this order` }
        : {
            path: `lines.${index}.quantity`,
            message: `${line.sku}: ${line.quantity} requested, ${returnable} returnable (${shipped} shipped, ${claimed} in other returns)`,
          },
    );
  });
  if (refused.length === 0) return;
  throw new ProblemException({
    type: ReturnProblemType.ReturnExceedsShipped,
    detail: errors.map((e) => e.message).join('; '),
    extensions: { lines: refused, errors },
  });
}

/**
 * True when `err` (or a cause) is a violation of the check `return_lines_within_shipped` (SQLSTATE 23514), as `pg`
 * raises it (`code`, `constraint`) or as Prisma's driver adapter wraps it (`P2010` with
 * `meta.driverAdapterError.cause`: `originalCode` is the SQLSTATE; the constraint's name is only in the message,
 * `new row for relation "return_lines" violates check constraint "return_lines_within_shipped"`).
 */
export function isWithinShippedViolation(err: unknown): boolean {
  const names = (message: unknown) => String(message ?? '').includes(`"${WITHIN_SHIPPED}"`);
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const e = current as {
      code?: unknown;
      constraint?: unknown;
      message?: unknown;
      meta?: { driverAdapterError?: { cause?: { originalCode?: unknown; originalMessage?: unknown } } };
      cause?: unknown;
    };
    if (e.code === '23514' && (e.constraint === WITHIN_SHIPPED || names(e.message))) return true;
    const adapter = e.meta?.driverAdapterError?.cause;
    if (adapter?.originalCode === '23514' && names(adapter.originalMessage)) return true;
    current = e.cause;
  }
  return false;
}

/** A stored return as the API shows it. */
function toView(row: ReturnRow, view: ReturnViewOptions): ReturnView {
  const iso = (d: Date | null) => d?.toISOString() ?? null;
  return {
    id: row.id,
    orderId: row.orderId,
    rmaNumber: row.rmaNumber,
    status: row.status as ReturnView['status'],
    reason: { code: row.reasonCode as ReturnReasonCode, text: row.reasonText },
    lines: row.lines.map((l) => ({
      sku: l.sku,
      quantity: l.quantity,
      unitPriceMinor: l.unitPriceMinor,
      receivedQuantity: l.receivedQuantity,
      damagedQuantity: l.damagedQuantity,
    })),
    label: row.labelUrl === null ? null : { url: row.labelUrl, trackingNumber: row.trackingNumber },
    refund:
      row.refundMinor === null
        ? null
        : {
            amountMinor: row.refundMinor,
            currency: row.currency,
            refundId: row.refundId,
            refundedAt: iso(row.refundedAt),
            creditNoteId: row.creditNoteId,
            creditedAt: iso(row.creditedAt),
          },
    attentionReason: view.internal ? row.attentionReason : null,
    createdAt: row.createdAt.toISOString(),
    receivedAt: iso(row.receivedAt),
    endedAt: iso(row.endedAt),
  };
}
