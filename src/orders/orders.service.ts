/**
 * Orders: accept (validate against the catalogue, store, start the workflow) and read.
 */
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Prisma } from '../../prisma/generated/client.js';
import { buildPlan } from '../../activities/kit/plan.js';
import { STEPS } from '../../activities/index.js';
import { ErrorType } from '../../workflows/errors.js';
import {
  isTerminalStatus,
  type OperatorAnswer,
  type OrderAttention,
  OrderStatus,
  type OrderStep,
  orderWorkflowId,
} from '../../workflows/order-fulfilment.contract.js';
import { ProblemException, ServiceUnavailableProblem } from '../common/problem-details.js';
import { APP_CONFIG, type AppConfig, isProduction } from '../config/config.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import {
  OrderWorkflowActions,
  type OperatorActionOutcome,
  type RetryStepOutcome,
  type WorkflowUnreachableOutcome,
} from '../temporal/order-workflow-actions.service.js';
import { OrderStartDispatcher } from '../temporal/order-start-dispatcher.service.js';
import { OrderWorkflowStarter } from '../temporal/order-workflow-starter.service.js';
import { isTemporalUnavailable, type UpdateFailure } from '../temporal/temporal-errors.js';
import { RETRY_UPDATE_TIMEOUT_MS } from '../temporal/temporal.constants.js';
import type { CreateOrderRequest } from './create-order.dto.js';
import type { ListOrdersQuery } from './list-orders.dto.js';
import type {
  CancelOrderRequest,
  CloseOrderRequest,
  ResolvedView,
  ResolveOrderRequest,
  RetryStartedView,
} from './order-actions.dto.js';
import { ALL_ORDERS, type OrderAccess, orderAccessWhere } from './order-access.js';
import { encodeOrderCursor } from './order-cursor.js';
import { publicFailure } from './public-failure.js';
import { isCancellable, stepTrack } from './order-steps.js';
import { orderDisplay } from './order-display.js';
import { OrderProblemType } from './order-problems.js';
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
  /** The client placing the order (`api_clients.id`): it owns the order. */
  clientId: string;
  /** Runs first inside the order's transaction; throwing aborts the order. */
  inTransaction?: OrderTransactionHook;
}

/** Status code and body of an order action that succeeded or is still under way. */
export interface OrderActionResponse {
  /** 200: done; 202: under way (repeat the request with the same Idempotency-Key for the outcome). */
  status: 200 | 202;
  order: OrderView;
}

/** Who acts on an order and under which key ({@link OrdersService.cancel}, {@link OrdersService.retry}). */
export interface OrderActionOptions {
  /** Whose orders the caller may act on; others' answer 404. */
  access: OrderAccess;
  /** `<client>:<Idempotency-Key>`, naming the Temporal Update; without it every request is a new Update. */
  actionKey?: string;
}

/** `Retry-After` of 503 answers from order actions, seconds. */
export const RETRY_AFTER_SECONDS = 5;

type OrderRow = Prisma.OrderGetPayload<{ include: typeof orderInclude }>;
type OrderSummaryRow = Prisma.OrderGetPayload<{ include: typeof summaryInclude }>;

@Injectable()
export class OrdersService {
  private readonly logger = new Logger(OrdersService.name);

  constructor(
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly starter: OrderWorkflowStarter,
    private readonly actions: OrderWorkflowActions,
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
    const id = randomUUID();
    // Read before the transaction (under READ COMMITTED it would see the same committed prices inside it), so the
    // transaction holds its connection for its writes only.
    const products = await this.prisma.product.findMany({
      where: { sku: { in: request.lines.map((l) => l.sku) } },
      select: { sku: true, priceMinor: true, currency: true },
    });
    const created = await this.prisma.$transaction(async (tx) => {
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
        ...buildPlan(STEPS, {
          orderId: id,
          customerEmail: request.customer.email,
          customerName: request.customer.name ?? null,
          currency: currencies[0]!,
          totalMinor,
          lines: lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
        }),
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
        clientId: options.clientId,
        workflowId,
        workflowStartedAt: null,
        completedAt: null,
        createdAt: now,
        updatedAt: now,
        lines: lines.map((l) => ({ ...l, orderId: id })),
        invoice: null,
        accountingSync: null,
      };
      await tx.$executeRaw`
        WITH placed AS (
          INSERT INTO orders (id, customer_email, customer_name, status, status_step, currency, total_minor, client_id,
                              workflow_id, plan, created_at, updated_at)
          VALUES (${id}::uuid, ${order.customerEmail}, ${order.customerName}, ${order.status}, ${order.statusStep},
                  ${order.currency}, ${totalMinor}, ${order.clientId}, ${workflowId}, ${JSON.stringify(plan)}::jsonb,
                  ${now}, ${now})
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
   * Cancels an order through the `cancelOrder` Update of its workflow (see {@link OrderWorkflowActions.cancel}),
   * waiting up to `CANCEL_WAIT_MS` for the outcome.
   *
   * - 200 with the order (`cancelled`) when the cancel is done; also for an order that is already `cancelled`, so a
   *   repeated request gets the same answer after the workflow has closed.
   * - 202 with the order as it is now when the bound passed before the outcome: the same `Idempotency-Key` names
   *   the same Update (id `cancel:<client>:<key>`), so repeating the request returns its outcome.
   * An order whose workflow was never started (Temporal was down at POST time) gets it started first (idempotent,
   * as the reconciler would), so there is a workflow to decide the cancel.
   * @param options.access whose orders the caller may cancel (others' answer 404).
   * @param options.actionKey the request's `Idempotency-Key` scoped to its client (`<client>:<key>`); without it
   *   every request is a new Update.
   * @throws ProblemException 404 (no such order); 409 `order-not-cancellable` (confirmation sent, final, waits for
   *   an operator, the workflow closed or has no cancel handler; extension `orderStatus`);
   *   {@link ServiceUnavailableProblem} 503 when Temporal is unavailable.
   */
  async cancel(id: string, request: CancelOrderRequest, options: OrderActionOptions): Promise<OrderActionResponse> {
    // The bound holds from the request's arrival: every wait below (the order, the start, the Update) fits in it.
    const deadline = Date.now() + this.config.CANCEL_WAIT_MS;
    const order = await this.get(id, options.access);
    if (order.status === OrderStatus.Cancelled) return { status: 200, order };
    if (isTerminalStatus(order.status)) {
      throw notCancellable(order, `Order ${id} is already ${order.status}; a final order cannot be cancelled`);
    }
    if (order.workflowStartedAt === null) await this.startForAction(id, deadline);

    const outcome = await this.actions.cancel(
      id,
      { reason: request.reason },
      { updateId: `cancel:${options.actionKey ?? randomUUID()}`, deadline },
    );
    switch (outcome.kind) {
      case 'cancelled':
        // With a reused key the result is the first cancel's, whatever this request's reason: same key, same
        // answer. (The result's reason is the one the order was cancelled with, which may be an earlier request's.)
        return { status: 200, order: await this.get(id, ALL_ORDERS) };
      case 'pending':
        return { status: 202, order: await this.get(id, ALL_ORDERS) };
      case 'refused':
        throw notCancellable(
          await this.get(id, ALL_ORDERS),
          `Order ${id} cannot be cancelled: ${refusalWhy(outcome.failure)}`,
        );
      case 'failed': {
        const current = await this.get(id, ALL_ORDERS);
        if (outcome.handlerMissing) {
          throw notCancellable(
            current,
            `Order ${id}'s workflow was started before cancellation existed and cannot be cancelled through the API`,
          );
        }
        this.logger.warn({ orderId: id, failure: outcome.failure }, 'cancelOrder Update failed');
        // The failure's message is the workflow's internal text: logged above, not answered.
        throw notCancellable(current, `The cancel of order ${id} failed (${outcome.failure.type})`);
      }
      default: {
        const current = await this.afterUnreachable(id, outcome, 'cancel');
        if (current.status === OrderStatus.Cancelled) return { status: 200, order: current };
        throw notCancellable(current, closedDetail(current, outcome));
      }
    }
  }

  /**
   * Asks the order's workflow to retry the step it waits on in `attention_required` (see
   * {@link OrderWorkflowActions.retry}); answers once the retry has started.
   * @param step when given, the retry happens only if the order waits on this step.
   * @param options.access whose orders the caller may retry (others' answer 404).
   * @param options.actionKey the request's `Idempotency-Key` scoped to its client (`<client>:<key>`): the Update
   *   id is `retry:<client>:<key>`, so a repeated request with the same key is one retry.
   * @throws ProblemException 404 (no such order); 409 `order-not-awaiting-retry` (the workflow waits for no retry,
   *   or for another step; extensions `orderStatus`, `waitingFor`); {@link ServiceUnavailableProblem} 503 when
   *   Temporal is unavailable or no worker answered.
   */
  async retry(id: string, step: OrderStep | undefined, options: OrderActionOptions): Promise<RetryStartedView> {
    const order = await this.get(id, options.access);
    const updateId = `retry:${options.actionKey ?? randomUUID()}`;
    // A request repeated with the same key gets the outcome of the retry it started, whatever happened since (its
    // step may have completed the order, its workflow may have closed or continued as new).
    const previous = async (): Promise<RetryStartedView | null> => {
      if (options.actionKey === undefined) return null;
      const answer = await this.actions.previousRetry(id, updateId);
      return answer ? { ...answer, order: await this.get(id, ALL_ORDERS) } : null;
    };
    if (isTerminalStatus(order.status)) {
      const repeated = await previous();
      if (repeated) return repeated;
      throw notAwaitingRetry(order, null, `Order ${id} is ${order.status}; a final order has nothing to retry`);
    }
    const outcome = await this.actions.retry(id, step === undefined ? {} : { step }, updateId);
    if (outcome.kind === 'closed' || outcome.kind === 'not-found') {
      const repeated = await previous();
      if (repeated) return repeated;
    }
    switch (outcome.kind) {
      case 'started':
        return { ...outcome.result, order: await this.get(id, ALL_ORDERS) };
      case 'refused': {
        const current = await this.get(id, ALL_ORDERS);
        const waitingFor = outcome.state?.attention?.step ?? detailOf(outcome.failure, 'waitingStep');
        throw notAwaitingRetry(current, waitingFor, refusedRetryDetail(id, step, outcome));
      }
      case 'timeout':
        throw new ServiceUnavailableProblem(
          `The workflow of order ${id} did not take the retry within ${RETRY_UPDATE_TIMEOUT_MS / 1000} s (is a worker ` +
            'running?); repeat the request with the same Idempotency-Key: it is the same retry',
          RETRY_AFTER_SECONDS,
        );
      default: {
        const current = await this.afterUnreachable(id, outcome, 'retry');
        throw notAwaitingRetry(current, null, closedDetail(current, outcome));
      }
    }
  }

  /**
   * An operator's audited decision on what an order in `attention_required` waits on (see
   * {@link OrderWorkflowActions.resolve}): `performed` or `not_performed`, with why; who is `options.by`. Answers once
   * the decision is recorded (who, why, when, in `order_resolutions`) and the order goes on from it.
   * @param options.actionKey names the Update (`resolve:<client>:<key>`): the same key again gets the same answer.
   * @throws ProblemException 404 (no such order); 409 `order-not-awaiting-resolution` (it waits for no operator,
   *   waits on another step, or its wait does not offer that resolution; extensions `orderStatus`, `waitingFor`,
   *   `resolutions`, `closable`); {@link ServiceUnavailableProblem} 503 when Temporal is unavailable, no worker
   *   answered, or the decision could not be recorded (nothing changed: repeat with the same key).
   */
  async resolve(
    id: string,
    body: ResolveOrderRequest,
    options: OrderActionOptions & { by: string },
  ): Promise<ResolvedView> {
    const input = {
      step: body.step,
      outcome: body.outcome,
      reason: body.reason,
      by: options.by,
      ...(body.providerId === undefined ? {} : { providerId: body.providerId }),
    };
    return this.operatorAction(
      id,
      'resolve',
      options,
      (updateId) => this.actions.resolve(id, input, updateId),
      (a) => ('outcome' in a ? a : null),
    ).then(async (answer) => ({ ...answer, order: await this.get(id, ALL_ORDERS) }));
  }

  /**
   * Closes an order whose step after the pivot waits for an operator (see {@link OrderWorkflowActions.close}): it
   * ends `closed` with the reason, the remaining steps do not run, nothing is compensated. Answers with the order.
   * @param options.actionKey names the Update (`close:<client>:<key>`): the same key again gets the same answer.
   * @throws as {@link OrdersService.resolve}.
   */
  async close(id: string, body: CloseOrderRequest, options: OrderActionOptions & { by: string }): Promise<OrderView> {
    const input = { reason: body.reason, by: options.by };
    await this.operatorAction(
      id,
      'close',
      options,
      (updateId) => this.actions.close(id, input, updateId),
      (a) => ('status' in a ? a : null),
    );
    return this.get(id, ALL_ORDERS);
  }

  /** The shared path of resolve and close: the Update, its repeated answer, and every outcome as a response. */
  private async operatorAction<T>(
    id: string,
    action: 'resolve' | 'close',
    options: OrderActionOptions,
    send: (updateId: string) => Promise<OperatorActionOutcome<T>>,
    accept: (answer: OperatorAnswer) => T | null,
  ): Promise<T> {
    const order = await this.get(id, options.access);
    const updateId = `${action}:${options.actionKey ?? randomUUID()}`;
    // A request repeated with the same key gets the answer of the Update it sent, whatever happened since.
    const previous = async (): Promise<T | null> => {
      if (options.actionKey === undefined) return null;
      const answer = await this.actions.previousAnswer(id, updateId);
      return answer ? accept(answer) : null;
    };
    if (isTerminalStatus(order.status)) {
      const repeated = await previous();
      if (repeated) return repeated;
      throw notAwaitingResolution(order, null, `Order ${id} is ${order.status}; a final order waits for nobody`);
    }
    const outcome = await send(updateId);
    if (outcome.kind === 'closed' || outcome.kind === 'not-found') {
      const repeated = await previous();
      if (repeated) return repeated;
    }
    switch (outcome.kind) {
      case 'done':
        return outcome.result;
      case 'refused': {
        const current = await this.get(id, ALL_ORDERS);
        const attention = outcome.state?.attention ?? null;
        throw notAwaitingResolution(
          current,
          attention,
          outcome.failure.type === ErrorType.Validation
            ? `The ${action} of order ${id} was refused: ${outcome.failure.message}`
            : attention
              ? `Order ${id} cannot take this ${action}: it waits on ${attention.step} (resolutions: ` +
                `${(attention.resolutions ?? []).join(', ') || 'none'}; ${attention.closable ? 'it may be closed' : 'it may not be closed'})`
              : `Order ${id} is not waiting for an operator`,
        );
      }
      case 'not-recorded':
        this.logger.warn({ orderId: id, failure: outcome.failure }, `${action} Update could not record the decision`);
        throw new ServiceUnavailableProblem(
          `The ${action} of order ${id} could not be recorded (the database failed); nothing changed: repeat the ` +
            'request with the same Idempotency-Key',
          RETRY_AFTER_SECONDS,
        );
      case 'timeout':
        throw new ServiceUnavailableProblem(
          `The workflow of order ${id} did not take the ${action} within ${RETRY_UPDATE_TIMEOUT_MS / 1000} s (is a ` +
            'worker running?); repeat the request with the same Idempotency-Key: it is the same action',
          RETRY_AFTER_SECONDS,
        );
      default: {
        const current = await this.afterUnreachable(id, outcome, action);
        throw notAwaitingResolution(current, null, closedDetail(current, outcome));
      }
    }
  }

  /**
   * Starts the workflow of an order that has none yet, by `deadline` (epoch ms) at the latest.
   * @throws ServiceUnavailableProblem when Temporal is down or the start did not finish in time (nothing was asked of
   *   the workflow: the client repeats the request).
   */
  private async startForAction(id: string, deadline: number): Promise<void> {
    try {
      await this.starter.start(id, undefined, deadline);
    } catch (err) {
      if (isTemporalUnavailable(err) || Date.now() >= deadline) throw temporalUnavailable(err);
      throw err;
    }
  }

  /**
   * The order after an action found its workflow closed, missing or unreachable.
   * @throws ServiceUnavailableProblem for `unavailable`.
   */
  private async afterUnreachable(id: string, outcome: WorkflowUnreachableOutcome, action: string): Promise<OrderView> {
    if (outcome.kind === 'unavailable') throw temporalUnavailable(outcome.error);
    const current = await this.get(id, ALL_ORDERS);
    if (!isTerminalStatus(current.status)) {
      this.logger.warn(
        {
          orderId: id,
          outcome: outcome.kind,
          workflowStatus: 'workflowStatus' in outcome ? outcome.workflowStatus : null,
        },
        `${action}: the workflow of order ${id} is not running while the order is ${current.status}`,
      );
    }
    return current;
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

/** 409 `order-not-cancellable` for `order`, with its status as the `orderStatus` extension. */
function notCancellable(order: OrderView, detail: string): ProblemException {
  return new ProblemException({
    type: OrderProblemType.OrderNotCancellable,
    detail,
    extensions: { orderStatus: order.status },
  });
}

/** 409 `order-not-awaiting-retry` for `order`, with `orderStatus` and `waitingFor` (the step that waits, or null). */
function notAwaitingRetry(order: OrderView, waitingFor: string | null, detail: string): ProblemException {
  return new ProblemException({
    type: OrderProblemType.OrderNotAwaitingRetry,
    detail,
    extensions: { orderStatus: order.status, waitingFor },
  });
}

/**
 * 409 `order-not-awaiting-resolution` for `order`: its status, and what waits with the ways out it offers (`waitingFor`,
 * `resolutions`, `closable`; null, [] and false when nothing waits).
 */
function notAwaitingResolution(order: OrderView, attention: OrderAttention | null, detail: string): ProblemException {
  return new ProblemException({
    type: OrderProblemType.OrderNotAwaitingResolution,
    detail,
    extensions: {
      orderStatus: order.status,
      waitingFor: attention?.step ?? null,
      resolutions: attention?.resolutions ?? [],
      closable: attention?.closable ?? false,
    },
  });
}

/** 503 for an unavailable Temporal. */
function temporalUnavailable(cause: unknown): ServiceUnavailableProblem {
  return new ServiceUnavailableProblem(
    'The workflow engine (Temporal) is unavailable; try again later',
    RETRY_AFTER_SECONDS,
    { cause },
  );
}

/** Why an action could not reach the workflow of `order` (closed, missing or unreachable). */
function closedDetail(order: OrderView, outcome: WorkflowUnreachableOutcome): string {
  if (isTerminalStatus(order.status)) return `Order ${order.id} is already ${order.status}`;
  if (order.workflowStartedAt === null) {
    return `The workflow of order ${order.id} has not been started yet (the reconciler starts it); try again later`;
  }
  const what = {
    closed: `has closed (${'workflowStatus' in outcome ? outcome.workflowStatus : ''})`,
    'not-found': 'does not exist',
    unavailable: 'is unreachable',
  }[outcome.kind];
  return (
    `The workflow ${order.workflowId} ${what} while the order is ${order.status}; ` +
    'it needs an operator (the sweeper flags such orders attention_required)'
  );
}

/**
 * A string member of the first detail of a workflow failure (our workflow attaches e.g. `{ why }` to
 * `OrderNotCancellableError` and `{ status, waitingStep }` to `OrderNotAwaitingRetryError`); null when absent.
 */
function detailOf(failure: UpdateFailure | null, member: string): string | null {
  const value = (failure?.details[0] as Record<string, unknown> | undefined)?.[member];
  return typeof value === 'string' ? value : null;
}

/** Why the workflow refused a cancel: its `why` detail, else its message. */
function refusalWhy(failure: UpdateFailure): string {
  // The workflow puts the internal failure text in parentheses (`… may have been sent (TimeoutFailure: …)`): cut it.
  return (detailOf(failure, 'why') ?? failure.message).replace(/ \([^]*\)/, '');
}

/** What a refused retry's 409 says: what the workflow waits for, if anything. */
function refusedRetryDetail(
  id: string,
  step: OrderStep | undefined,
  outcome: Extract<RetryStepOutcome, { kind: 'refused' }>,
): string {
  const state = outcome.state;
  if (state?.attention) {
    return `Order ${id} waits for a retry of ${state.attention.step}, not of ${step ?? 'another step'}`;
  }
  if (state) {
    const running = state.currentStep ? ` (running ${state.currentStep})` : '';
    return `Order ${id} is not waiting for an operator: its workflow is at ${state.status}${running}`;
  }
  return `Order ${id} is not waiting for an operator retry: ${outcome.failure.message}`;
}
