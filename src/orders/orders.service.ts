/**
 * Orders: accept (validate against the catalogue, store, start the workflow) and read.
 */
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Prisma } from '../../prisma/generated/client.js';
import {
  OrderStatus,
  type OrderStatus as OrderStatusValue,
  orderWorkflowId,
} from '../../workflows/order-fulfilment.contract.js';
import { ProblemException, ProblemType } from '../common/problem-details.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import { OrderWorkflowStarter } from '../temporal/order-workflow-starter.service.js';
import type { CreateOrderRequest } from './create-order.dto.js';
import type { ListOrdersQuery } from './list-orders.dto.js';
import { encodeOrderCursor } from './order-cursor.js';
import type { OrderPageView, OrderSummaryView, OrderView } from './order-response.dto.js';

/** Largest `total_minor` the INTEGER column holds. */
const MAX_TOTAL_MINOR = 2_147_483_647;

const orderInclude = {
  lines: { orderBy: { lineNo: 'asc' } },
  invoice: { select: { number: true } },
  accountingSync: { select: { accountingId: true } },
} as const satisfies Prisma.OrderInclude;

const summaryInclude = {
  invoice: { select: { number: true } },
  accountingSync: { select: { accountingId: true } },
} as const satisfies Prisma.OrderInclude;

/**
 * Work done inside the transaction that stores an order, before the order's own writes, e.g. the
 * `Idempotency-Key` claim. Its writes commit with the order or not at all.
 * @param tx the order's transaction.
 * @param orderId id of the order being created.
 */
export type OrderTransactionHook = (tx: Prisma.TransactionClient, orderId: string) => Promise<void>;

/** Options of {@link OrdersService.create}. */
export interface CreateOrderOptions {
  /** Runs first inside the order's transaction; throwing aborts the order. */
  inTransaction?: OrderTransactionHook;
}

type OrderRow = Prisma.OrderGetPayload<{ include: typeof orderInclude }>;
type OrderSummaryRow = Prisma.OrderGetPayload<{ include: typeof summaryInclude }>;

@Injectable()
export class OrdersService {
  private readonly logger = new Logger(OrdersService.name);

  constructor(
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly starter: OrderWorkflowStarter,
  ) {}

  /**
   * Accepts an order: prices it from the catalogue (unit prices snapshot from `products.price_minor`,
   * total = Σ quantity × unitPriceMinor, integer minor units), stores the order and its lines in one
   * transaction with status `received`, then starts its workflow. A failed start (Temporal down) is logged
   * and left to the reconciler: the order is committed either way.
   * @param options.inTransaction runs first inside the order's transaction (e.g. the idempotency claim);
   *   its writes commit or roll back with the order, and its error aborts the order and propagates.
   * @returns the stored order (with `workflowStartedAt` null if the start failed).
   * @throws ProblemException 400 `unknown-sku` (with `skus` and `errors`), `currency-mismatch`, or
   *   `total-too-large`; nothing is stored then.
   */
  async create(request: CreateOrderRequest, options: CreateOrderOptions = {}): Promise<OrderView> {
    const id = randomUUID();
    await this.prisma.$transaction(async (tx) => {
      await options.inTransaction?.(tx, id);
      const products = await tx.product.findMany({
        where: { sku: { in: request.lines.map((l) => l.sku) } },
        select: { sku: true, priceMinor: true, currency: true },
      });
      const bySku = new Map(products.map((p) => [p.sku, p]));

      const unknown = request.lines.flatMap((line, index) => (bySku.has(line.sku) ? [] : [{ index, sku: line.sku }]));
      if (unknown.length > 0) {
        const skus = unknown.map((u) => u.sku);
        throw new ProblemException({
          status: 400,
          type: ProblemType.UnknownSku,
          title: 'Unknown SKU',
          detail: `These SKUs are not in the catalogue: ${skus.join(', ')}`,
          extensions: {
            skus,
            errors: unknown.map((u) => ({ path: `lines.${u.index}.sku`, message: `Unknown SKU "${u.sku}"` })),
          },
        });
      }

      const currencies = [...new Set(products.map((p) => p.currency))];
      if (currencies.length > 1) {
        throw new ProblemException({
          status: 400,
          type: ProblemType.CurrencyMismatch,
          title: 'Products in different currencies',
          detail: `An order is priced in one currency; these lines use ${currencies.join(', ')}`,
          extensions: {
            errors: request.lines.map((line, index) => ({
              path: `lines.${index}.sku`,
              message: `"${line.sku}" is priced in ${bySku.get(line.sku)!.currency}`,
            })),
          },
        });
      }

      const lines = request.lines.map((line, index) => ({
        id: randomUUID(),
        lineNo: index + 1,
        sku: line.sku,
        quantity: line.quantity,
        unitPriceMinor: bySku.get(line.sku)!.priceMinor,
      }));
      // Exact: at most 50 × 1000 × 2^31 < 2^53.
      const totalMinor = lines.reduce((sum, l) => sum + l.quantity * l.unitPriceMinor, 0);
      if (totalMinor > MAX_TOTAL_MINOR) {
        throw new ProblemException({
          status: 400,
          type: ProblemType.TotalTooLarge,
          title: 'Order total too large',
          detail: `The order total ${totalMinor} (minor units) exceeds ${MAX_TOTAL_MINOR}`,
        });
      }

      await tx.order.create({
        data: {
          id,
          customerEmail: request.customer.email,
          customerName: request.customer.name ?? null,
          status: OrderStatus.Received,
          statusStep: 0,
          currency: currencies[0]!,
          totalMinor,
          workflowId: orderWorkflowId(id),
          lines: { create: lines },
        },
      });
    });

    try {
      await this.starter.start(id);
    } catch (err) {
      this.logger.warn(
        { err, orderId: id },
        `Order ${id} accepted but its workflow could not be started; the reconciler will start it`,
      );
    }
    return this.get(id);
  }

  /**
   * @param id order UUID.
   * @throws ProblemException 404 when there is no such order.
   */
  async get(id: string): Promise<OrderView> {
    const order = await this.find(id);
    if (!order) throw ProblemException.notFound(`Order ${id}`);
    return order;
  }

  /**
   * @param id order UUID.
   * @returns the order as `GET /orders/:id` shows it, or null when there is no such order.
   */
  async find(id: string): Promise<OrderView | null> {
    const order = await this.prisma.order.findUnique({ where: { id }, include: orderInclude });
    return order ? this.toView(order) : null;
  }

  /**
   * Signals `retryAccountingSync` to the order's workflow.
   * @throws ProblemException 404 (no such order), 409 `order-not-awaiting-retry` (status is not
   *   `attention_required`); the Temporal client's error when Temporal is unreachable.
   */
  async retryAccountingSync(id: string): Promise<OrderView> {
    const order = await this.get(id);
    if (order.status !== OrderStatus.AttentionRequired) {
      throw new ProblemException({
        status: 409,
        type: ProblemType.OrderNotAwaitingRetry,
        title: 'Order is not awaiting a retry',
        detail: `Order ${id} is ${order.status}; only orders in ${OrderStatus.AttentionRequired} can be retried`,
      });
    }
    await this.starter.retryAccountingSync(id);
    return order;
  }

  /**
   * One page of orders, newest first, keyset-paginated on (createdAt, id).
   * @returns `{ items, nextCursor }`; `nextCursor` is null on the last page.
   */
  async list(query: ListOrdersQuery): Promise<OrderPageView> {
    const where: Prisma.OrderWhereInput = {};
    if (query.status) where.status = query.status;
    if (query.cursor) {
      const { createdAt, id } = query.cursor;
      where.OR = [{ createdAt: { lt: createdAt } }, { createdAt, id: { lt: id } }];
    }
    const rows = await this.prisma.order.findMany({
      where,
      include: summaryInclude,
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: query.limit + 1,
    });
    const page = rows.slice(0, query.limit);
    const last = page.at(-1);
    return {
      items: page.map((row) => this.toSummaryView(row)),
      nextCursor: rows.length > query.limit && last ? encodeOrderCursor(last) : null,
    };
  }

  private toSummaryView(order: OrderSummaryRow): OrderSummaryView {
    return {
      id: order.id,
      status: order.status as OrderStatusValue,
      failureReason: order.failureReason,
      customer: { email: order.customerEmail, name: order.customerName },
      currency: order.currency,
      totalMinor: order.totalMinor,
      invoiceNumber: order.invoice?.number ?? null,
      accountingId: order.accountingSync?.accountingId ?? null,
      workflowId: order.workflowId,
      temporalUiUrl: this.temporalUiUrl(order.workflowId),
      workflowStartedAt: order.workflowStartedAt?.toISOString() ?? null,
      createdAt: order.createdAt.toISOString(),
      updatedAt: order.updatedAt.toISOString(),
      completedAt: order.completedAt?.toISOString() ?? null,
    };
  }

  private toView(order: OrderRow): OrderView {
    return {
      ...this.toSummaryView(order),
      lines: order.lines.map((l) => ({
        lineNo: l.lineNo,
        sku: l.sku,
        quantity: l.quantity,
        unitPriceMinor: l.unitPriceMinor,
      })),
    };
  }

  /** `${TEMPORAL_UI_URL}/namespaces/<ns>/workflows/<workflowId>`. */
  private temporalUiUrl(workflowId: string): string {
    const base = this.config.TEMPORAL_UI_URL.replace(/\/+$/, '');
    return `${base}/namespaces/${encodeURIComponent(this.config.TEMPORAL_NAMESPACE)}/workflows/${encodeURIComponent(workflowId)}`;
  }
}
