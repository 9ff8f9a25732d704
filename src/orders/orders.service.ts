/**
 * Orders: accept (validate against the catalogue, store, start the workflow) and read.
 */
import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { Prisma } from '../../prisma/generated/client.js';
import { buildPlan, STEP_CATALOGUE } from '../../activities/catalogue/index.js';
import { OrderStatus, orderWorkflowId } from '../../workflows/order-fulfilment.contract.js';
import { ProblemException } from '../common/problem-details.js';
import { APP_CONFIG, type AppConfig, isProduction } from '../config/config.js';
import type { SqlQueries } from '../../activities/ports.js';
import type { PgSqlClient } from '../database/sql-client.js';
import { PRISMA, SQL } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import { OrderStartDispatcher } from './workflow/order-start-dispatcher.service.js';
import { PAYMENT_METHOD, type CreateOrderRequest } from './create-order.dto.js';
import type { ListOrdersQuery } from './list-orders.dto.js';
import { type OrderAccess, orderAccessWhere } from './order-access.js';
import { encodeOrderCursor } from './order-cursor.js';
import { publicFailure } from './public-failure.js';
import { isCancellable, stepTrack } from './order-steps.js';
import { orderDisplay } from './order-display.js';
import { OrderProblemType } from './order-problems.js';
import type { OrderPageView, OrderPaymentView, OrderSummaryView, OrderView } from './order-response.dto.js';

/**
 * A card order's payment as `GET /orders/:id` shows it (never the token): its `payments` row, or `pending` before
 * the authorization was answered; null for an order paid on account.
 */
function paymentView(order: Pick<OrderSummaryRow, 'paymentMethod' | 'payment' | 'currency'>): OrderPaymentView | null {
  const row = order.payment;
  if (row === null) {
    if (order.paymentMethod === null) return null;
    return {
      status: 'pending',
      currency: order.currency,
      authorizedMinor: 0,
      capturedMinor: 0,
      voidedMinor: 0,
      refundedMinor: 0,
      captureBefore: null,
      declineCode: null,
    };
  }
  return {
    status: row.status as OrderPaymentView['status'],
    currency: row.currency,
    authorizedMinor: row.status === 'declined' ? 0 : row.amountMinor,
    capturedMinor: row.capturedMinor,
    voidedMinor: row.voidedMinor,
    refundedMinor: row.refundedMinor,
    captureBefore: row.status === 'authorized' ? (row.captureBefore?.toISOString() ?? null) : null,
    declineCode: row.declineCode,
  };
}

/** Largest `total_minor` the INTEGER column holds. */
const MAX_TOTAL_MINOR = 2_147_483_647;

const orderInclude = {
  lines: { orderBy: { lineNo: 'asc' } },
  returns: {
    select: {
      id: true,
      rmaNumber: true,
      status: true,
      createdAt: true,
      refundMinor: true,
      refundId: true,
      creditNoteId: true,
    },
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
    take: 100,
  },
  payment: true,
  invoice: { select: { number: true } },
  accountingSync: { select: { accountingId: true } },
} as const satisfies Prisma.OrderInclude;

const summaryInclude = {
  payment: true,
  invoice: { select: { number: true } },
  accountingSync: { select: { accountingId: true } },
} as const satisfies Prisma.OrderInclude;

/**
 * Work done inside the transaction that stores an order, before the order's own writes, e.g. the
 * `Idempotency-Key` claim. Its writes commit with the order or not at all.
 * @param tx the order's transaction.
 * @param orderId id of the order being created.
 */
export type OrderTransactionHook = (tx: SqlQueries, orderId: string) => Promise<void>;

/** Options of {@link OrdersService.create}. */
export interface CreateOrderOptions {
  /** The client placing the order (`api_clients.id`): it owns the order. */
  clientId: string;
  /** Runs first inside the order's transaction; throwing aborts the order. */
  inTransaction?: OrderTransactionHook;
}

type OrderRow = Prisma.OrderGetPayload<{ include: typeof orderInclude }>;
type OrderSummaryRow = Prisma.OrderGetPayload<{ include: typeof summaryInclude }>;

/** Orders: accept and read (the actions on an order are {@link OrderActionsService}'s). */
@Injectable()
export class OrdersService {
  constructor(
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    @Inject(SQL) private readonly sql: PgSqlClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly dispatcher: OrderStartDispatcher,
  ) {}

  /**
   * Accepts an order: prices it from the catalogue (unit prices snapshot from `products.price_minor`,
   * total = Σ quantity × unitPriceMinor, integer minor units), stores the order, its lines and its workflow start
   * intent in one transaction with status `received`, and notifies the {@link OrderStartDispatcher}, which starts
   * the workflow right after (or as soon as Temporal answers). Never calls Temporal itself, so it answers in the
   * time of one transaction whatever Temporal's state.
   * @param options.clientId the client placing the order; it owns the order.
   * @param options.inTransaction runs first inside the order's transaction (e.g. the idempotency claim);
   *   its writes commit or roll back with the order, and its error aborts the order and propagates.
   * @returns the stored order as committed (`workflowStartedAt` null: the start follows the answer).
   * @throws ProblemException 400 `unknown-sku` (with `skus` and `errors`), `currency-mismatch`, or
   *   `total-too-large`; nothing is stored then.
   */
  async create(request: CreateOrderRequest, options: CreateOrderOptions): Promise<OrderView> {
    const method = request.payment?.method;
    if (method !== undefined && !PAYMENT_METHOD.test(method)) {
      // The value is not echoed: it may be something a customer should not have sent.
      throw new ProblemException({
        status: 422,
        type: OrderProblemType.PaymentMethodInvalid,
        detail: 'payment.method is not a payment-method token (pm_…)',
        extensions: {
          errors: [
            { path: 'payment.method', message: 'Expected a payment-method token matching ^pm_[A-Za-z0-9_]{1,64}$' },
          ],
        },
      });
    }
    const paymentMethod = method ?? null;
    const id = randomUUID();
    // Read before the transaction (under READ COMMITTED it would see the same committed prices inside it), so the
    // transaction holds its connection for its writes only. This path (and the idempotency record's) runs on
    // node-postgres, not Prisma's query compiler: about a third of the API's CPU per order went there (issue 27).
    const products = await this.sql.$queryRaw<Array<{ sku: string; priceMinor: number; currency: string }>>`
      SELECT sku, price_minor AS "priceMinor", currency FROM products
      WHERE sku = ANY(${[...new Set(request.lines.map((l) => l.sku))]}::text[])`;
    const created = await this.sql.$transaction(async (tx) => {
      await options.inTransaction?.(tx, id);
      const bySku = new Map(products.map((p) => [p.sku, p]));

      const unknown = request.lines.flatMap((line, index) => (bySku.has(line.sku) ? [] : [{ index, sku: line.sku }]));
      if (unknown.length > 0) {
        const skus = unknown.map((u) => u.sku);
        throw new ProblemException({
          type: OrderProblemType.UnknownSku,
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
          type: OrderProblemType.CurrencyMismatch,
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
          type: OrderProblemType.TotalTooLarge,
          detail: `The order total ${totalMinor} (minor units) exceeds ${MAX_TOTAL_MINOR}`,
        });
      }

      // The order, its lines and its start intent in one statement. Timestamps from this process's clock, as
      // Prisma's `@default(now())` and `@updatedAt` set them.
      const now = new Date();
      const workflowId = orderWorkflowId(id);
      // The plan this order runs: the registry's steps now (stored, and passed to its workflow by the starter).
      const plan = {
        ...buildPlan(
          STEP_CATALOGUE,
          {
            orderId: id,
            customerEmail: request.customer.email,
            customerName: request.customer.name ?? null,
            currency: currencies[0]!,
            totalMinor,
            lines: lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
            payment: paymentMethod === null ? null : { method: paymentMethod },
          },
          {
            // Event steps' bounds from configuration, fixed in the plan (a running order keeps its own).
            events: {
              packed: {
                timeoutMs: this.config.WAREHOUSE_PACK_TIMEOUT,
                marginMs: this.config.WAREHOUSE_PACK_DEADLINE_MARGIN,
              },
            },
          },
        ),
        // How it reads in the Temporal UI (the starter sets it as the workflow's summary and details).
        display: orderDisplay(
          {
            id,
            clientId: options.clientId,
            customerEmail: request.customer.email,
            customerName: request.customer.name ?? null,
            currency: currencies[0]!,
            totalMinor,
            lines,
          },
          this.config.PUBLIC_URL ?? (isProduction() ? undefined : `http://127.0.0.1:${this.config.PORT}`),
        ),
      };
      const order: OrderRow = {
        id,
        customerEmail: request.customer.email,
        customerName: request.customer.name ?? null,
        status: OrderStatus.Received,
        statusStep: 0,
        failureReason: null,
        haltedAt: null,
        haltReason: null,
        haltedRank: null,
        plan: plan as unknown as OrderRow['plan'],
        currency: currencies[0]!,
        totalMinor,
        paymentMethod,
        clientId: options.clientId,
        workflowId,
        workflowStartedAt: null,
        completedAt: null,
        createdAt: now,
        updatedAt: now,
        lines: lines.map((l) => ({ ...l, orderId: id })),
        invoice: null,
        accountingSync: null,
        returns: [],
        payment: null,
      };
      await tx.$executeRaw`
        WITH placed AS (
          INSERT INTO orders (id, customer_email, customer_name, status, status_step, currency, total_minor,
                              payment_method, client_id, workflow_id, plan, created_at, updated_at)
          VALUES (${id}::uuid, ${order.customerEmail}, ${order.customerName}, ${order.status}, ${order.statusStep},
                  ${order.currency}, ${totalMinor}, ${paymentMethod}, ${order.clientId}, ${workflowId},
                  ${JSON.stringify(plan)}::jsonb, ${now}, ${now})
          RETURNING id),
        placed_lines AS (
          INSERT INTO order_lines (id, order_id, line_no, sku, quantity, unit_price_minor)
          SELECT l.id, placed.id, l.line_no, l.sku, l.quantity, l.unit_price_minor
          FROM placed, unnest(${lines.map((l) => l.id)}::uuid[], ${lines.map((l) => l.lineNo)}::int[],
                              ${lines.map((l) => l.sku)}::text[], ${lines.map((l) => l.quantity)}::int[],
                              ${lines.map((l) => l.unitPriceMinor)}::int[])
                 AS l(id, line_no, sku, quantity, unit_price_minor))
        INSERT INTO workflow_start_intents (order_id, workflow_id, attempts, available_at, created_at)
        SELECT placed.id, ${workflowId}, 0, ${now}, ${now} FROM placed`;
      return order;
    });

    this.dispatcher.notify();
    return this.toView(created);
  }

  /**
   * @param id order UUID.
   * @param access whose orders the caller may see ({@link ALL_ORDERS} for operators and internal reads).
   * @throws ProblemException 404 when there is no such order, or it belongs to a client `access` excludes.
   */
  async get(id: string, access: OrderAccess): Promise<OrderView> {
    const order = await this.find(id, access);
    if (!order) throw ProblemException.notFound(`Order ${id}`);
    return order;
  }

  /**
   * @param id order UUID.
   * @param access whose orders the caller may see.
   * @returns the order as `GET /orders/:id` shows it, or null when there is no such order (for this caller).
   */
  async find(id: string, access: OrderAccess): Promise<OrderView | null> {
    const order = await this.prisma.order.findFirst({
      where: { id, ...orderAccessWhere(access) },
      include: orderInclude,
    });
    return order ? this.toView(order) : null;
  }

  /**
   * One page of orders, newest first, keyset-paginated on (createdAt, id).
   * @param access whose orders to list (a client sees only its own).
   * @returns `{ items, nextCursor }`; `nextCursor` is null on the last page.
   */
  async list(query: ListOrdersQuery, access: OrderAccess): Promise<OrderPageView> {
    const where: Prisma.OrderWhereInput = { ...orderAccessWhere(access) };
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
      clientId: order.clientId,
      status: order.status,
      // The internal failure_reason (error types, provider answers, driver messages) is never shown here; operators
      // read it in the logs, the workflow history, or (with the operator scope) an operator view.
      failure: publicFailure(order.status, order.failureReason),
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
      steps: stepTrack(order),
      cancellable: isCancellable(order),
      payment: paymentView(order),
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
      returns: {
        // Refunded to the card, or credited (an order on account): what the customer got back.
        refundedMinor: order.returns
          .filter((r) => r.refundId !== null || r.creditNoteId !== null)
          .reduce((n, r) => n + (r.refundMinor ?? 0), 0),
        items: order.returns.map((r) => ({
          id: r.id,
          rmaNumber: r.rmaNumber,
          status: r.status,
          createdAt: r.createdAt.toISOString(),
        })),
      },
    };
  }

  /** `${TEMPORAL_UI_URL}/namespaces/<ns>/workflows/<workflowId>`. */
  private temporalUiUrl(workflowId: string): string {
    const base = this.config.TEMPORAL_UI_URL.replace(/\/+$/, '');
    return `${base}/namespaces/${encodeURIComponent(this.config.TEMPORAL_NAMESPACE)}/workflows/${encodeURIComponent(workflowId)}`;
  }
}
