/**
 * HTTP API of orders:
 * - `POST /orders` → 202 Accepted, `Location: /orders/<id>`, body {@link OrderView}. With the optional
 *   `Idempotency-Key` header a retry replays the first response (`Idempotent-Replayed: true`) instead of
 *   placing a second order; 409 while the first is in flight, 422 for the key with another body (see
 *   {@link IdempotencyService}). Without the header every request places a new order.
 * - `GET /orders/:id` → 200 {@link OrderView}; 400 for a non-UUID id, 404 when unknown.
 * - `GET /orders?limit&cursor&status` → 200 {@link OrderPageView}, newest first.
 * - `POST /orders/:id/cancel` body `{ reason }` → 200 {@link OrderView} (cancelled), 202 (outcome not known within
 *   `CANCEL_WAIT_MS`; repeat with the same `Idempotency-Key`), 409 `order-not-cancellable`, 404, 503.
 * - `POST /orders/:id/retry` body `{ step? }` → 202 {@link RetryStartedView} once the retry started; 409
 *   `order-not-awaiting-retry`, 404, 503.
 * - `POST /orders/:id/resolve` body `{ step, outcome, reason, providerId? }` → 200 {@link ResolvedView} once the
 *   operator's decision is recorded; 409 `order-not-awaiting-resolution`, 404, 503.
 * - `POST /orders/:id/close` body `{ reason }` → 200 {@link OrderView} (closed); 409 `order-not-awaiting-resolution`,
 *   404, 503.
 * Every route needs an API key (`Authorization: Bearer`); a client sees and acts on its own orders only (others'
 * answer 404), `operator` keys on all. Errors are `application/problem+json` (RFC 9457).
 */
import { Body, Controller, Get, HttpCode, HttpStatus, Injectable, Param, Post, Query, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { AuthenticatedClient } from '../auth/api-key.store.js';
import { CurrentClient, RequireScope } from '../auth/auth.decorators.js';
import { Scope } from '../auth/scopes.js';
import { ApiProblems, REPLAYED_HEADER, TEMPORAL_UNAVAILABLE } from '../common/api-problem-responses.decorator.js';
import { ProblemTypes, ServiceUnavailableProblem } from '../common/problem-details.js';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_MAX_LENGTH,
  IDEMPOTENT_REPLAYED_HEADER,
  IdempotencyProblemTypes,
} from '../idempotency/idempotency-key.js';
import {
  Idempotent,
  type IdempotencyContext,
  IdempotencyKey,
  type IdempotentResource,
} from '../idempotency/idempotency.interceptor.js';
import type { StoredResponse } from '../idempotency/idempotency.service.js';
import { type CreateOrderRequest, createOrderSchema } from './create-order.dto.js';
import {
  type CancelOrderRequest,
  cancelOrderSchema,
  type CloseOrderRequest,
  closeOrderSchema,
  type ResolvedView,
  resolvedViewSchema,
  type ResolveOrderRequest,
  resolveOrderSchema,
  type RetryOrderRequest,
  retryOrderSchema,
  type RetryStartedView,
  retryStartedViewSchema,
} from './order-actions.dto.js';
import { type ListOrdersQuery, listOrdersQuerySchema, orderIdParamsSchema } from './list-orders.dto.js';
import { type OrderPageView, orderPageViewSchema, type OrderView, orderViewSchema } from './order-response.dto.js';
import { ALL_ORDERS, orderAccessOf } from './order-access.js';
import { OrderProblemTypes } from './order-problems.js';
import { OrderActionsService } from './order-actions.service.js';
import { OrdersService } from './orders.service.js';

/** `Location` of a 202: where to watch the order. */
const LOCATION_HEADER = { description: 'URL of the order: /orders/{id}', required: true, schema: { type: 'string' } };

/** Rebuilds the 202 of `POST /orders` from a stored order (recovery of a stale idempotency record). */
@Injectable()
export class OrderIdempotency implements IdempotentResource {
  constructor(private readonly orders: OrdersService) {}

  async recover(orderId: string): Promise<StoredResponse | null> {
    const order = await this.orders.find(orderId, ALL_ORDERS);
    return order ? accepted(order) : null;
  }
}

@ApiTags('orders')
@Controller('orders')
export class OrdersController {
  constructor(
    private readonly orders: OrdersService,
    private readonly actions: OrderActionsService,
  ) {}

  /** Accepts an order and starts its fulfilment; never waits for fulfilment. */
  @Post()
  @HttpCode(HttpStatus.ACCEPTED)
  @ApiOperation({
    operationId: 'createOrder',
    summary: 'Place an order',
    description:
      'Validates the order against the catalogue and stores it with status `received` and the intent to start its ' +
      'fulfilment workflow, in one transaction; answers 202 without calling the workflow engine (a start dispatcher ' +
      'starts the workflow right after the commit, the reconciler is its safety net), so the answer does not wait ' +
      'for fulfilment nor for Temporal, which may be down. Follow `Location` to watch the status.\n\n' +
      'Send an `Idempotency-Key` to make retries safe (draft-ietf-httpapi-idempotency-key-header): a retry with the ' +
      'same key and the same body gets the first response again, marked `Idempotent-Replayed: true`, and places ' +
      'no second order. Keys belong to the client (two clients never share one) and are kept for ' +
      '`IDEMPOTENCY_RETENTION_MS` (default 24 h) after the first request completed. Without the header every ' +
      "request places a new order.\n\nNeeds scope `orders:write`; the order belongs to the key's client.",
  })
  @ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    description:
      `Optional. A unique key per order intent (a UUID v4 is recommended), 1..${IDEMPOTENCY_KEY_MAX_LENGTH} visible ` +
      'ASCII characters, bare (`abc`) or as a Structured-Field string (`"abc"`). Same key + same body → the stored ' +
      'response is replayed; same key while the first request runs → 409; same key + different body → 422. ' +
      'Scoped to the client; kept for 24 h after completion by default (IDEMPOTENCY_RETENTION_MS).',
    schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_LENGTH + 2 },
    example: '"8e03978e-40d5-43e8-bc93-6894a57f9324"',
  })
  @ApiAcceptedResponse({
    description: 'Order accepted (or, with a known Idempotency-Key, the first response replayed)',
    standardSchema: orderViewSchema,
    headers: { Location: LOCATION_HEADER, [IDEMPOTENT_REPLAYED_HEADER]: REPLAYED_HEADER },
  })
  @ApiProblems(
    OrderProblemTypes.PaymentMethodInvalid,
    OrderProblemTypes.UnknownSku,
    OrderProblemTypes.CurrencyMismatch,
    OrderProblemTypes.TotalTooLarge,
    IdempotencyProblemTypes.KeyInUse,
    IdempotencyProblemTypes.KeyReused,
  )
  @RequireScope(Scope.OrdersWrite)
  @Idempotent({ records: OrderIdempotency })
  async create(
    @Body({ schema: createOrderSchema }) body: CreateOrderRequest,
    @CurrentClient() client: AuthenticatedClient,
    @IdempotencyKey() idempotency: IdempotencyContext | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<OrderView> {
    const order = await this.orders.create(body, { clientId: client.id, inTransaction: idempotency?.claim });
    res.location(`/orders/${order.id}`);
    return order;
  }

  /** One order with its lines, invoice number and accounting id. */
  @Get(':id')
  @ApiOperation({
    operationId: 'getOrder',
    summary: 'Get an order',
    description: 'Needs scope `orders:read`: own orders (all with `operator`).',
  })
  @ApiOkResponse({ description: 'The order, its lines and where each step stands', standardSchema: orderViewSchema })
  @ApiProblems({ type: ProblemTypes.NotFound, description: "No such order (or another client's)" })
  @RequireScope(Scope.OrdersRead)
  get(
    @Param({ schema: orderIdParamsSchema }) params: { id: string },
    @CurrentClient() client: AuthenticatedClient,
  ): Promise<OrderView> {
    return this.orders.get(params.id, orderAccessOf(client));
  }

  /**
   * Cancels an order until it ships (the hand-over to the carrier): sends the `cancelOrder` Update and waits up to
   * `CANCEL_WAIT_MS` (30 s) for the outcome. 200 cancelled, 202 still deciding, 409 not cancellable.
   */
  @Post(':id/cancel')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    operationId: 'cancelOrder',
    summary: 'Cancel an order',
    description:
      'Possible until the order ships (the hand-over to the carrier, the point of no return). Sends the ' +
      '`cancelOrder` Update to the workflow `order-<id>`: newest first, a customer who got the confirmation gets a ' +
      'cancellation notice, the invoice is voided and the stock released; then the order is `cancelled`. The ' +
      'request waits for that outcome up to `CANCEL_WAIT_MS` (default 30 s).\n\n' +
      '- **200**: the order is `cancelled` (also when it already was).\n' +
      '- **202** with `Location`: the outcome is not known yet; repeat the request with the same `Idempotency-Key` ' +
      '(it names the same cancel) or poll `GET /orders/:id`.\n' +
      '- **409** `order-not-cancellable`: the order has shipped, and the detail says so (also when the carrier ' +
      'accepted the shipment while the cancel was waiting for it: the order then completes), the order is `completed` or ' +
      '`failed`, it waits for an operator in `attention_required`, or its workflow is not running.\n\n' +
      'Without an `Idempotency-Key` every request is a new cancel request.\n\n' +
      'Needs scope `orders:cancel` (own orders) or `operator` (any order).',
  })
  @ApiActionIdempotencyKey('cancel')
  @ApiOkResponse({ description: 'The order, now `cancelled`', standardSchema: orderViewSchema })
  @ApiAcceptedResponse({
    description: 'The cancel is still being decided; the order as it is now',
    standardSchema: orderViewSchema,
    headers: { Location: LOCATION_HEADER },
  })
  @ApiProblems(
    { type: ProblemTypes.NotFound, description: "No such order (or another client's)" },
    OrderProblemTypes.OrderNotCancellable,
    TEMPORAL_UNAVAILABLE,
  )
  @RequireScope(Scope.OrdersCancel)
  @Idempotent()
  async cancel(
    @Param({ schema: orderIdParamsSchema }) params: { id: string },
    @Body({ schema: cancelOrderSchema }) body: CancelOrderRequest,
    @CurrentClient() client: AuthenticatedClient,
    @IdempotencyKey() idempotency: IdempotencyContext | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<OrderView> {
    const { status, order } = await withRetryAfter(res, () =>
      this.actions.cancel(params.id, body, { access: orderAccessOf(client), actionKey: idempotency?.scopedKey }),
    );
    res.status(status);
    if (status === HttpStatus.ACCEPTED) res.location(`/orders/${order.id}`);
    return order;
  }

  /**
   * Operator action: retries the step an order in `attention_required` waits on, after its cause was fixed.
   * 202 once the workflow has started the retry.
   */
  @Post(':id/retry')
  @HttpCode(HttpStatus.ACCEPTED)
  @ApiOperation({
    operationId: 'retryOrder',
    summary: 'Retry the step an order waits on (operator action)',
    description:
      'For orders in `attention_required`: sends the `retry` Update to the workflow `order-<id>`, which runs the ' +
      'waiting step again (with the same provider Idempotency-Key, so a provider that did act is not asked twice). ' +
      '202 only once the workflow has started the retry; poll `GET /orders/:id` for the result. With `step`, the ' +
      'retry happens only if that is the waiting step. The same `Idempotency-Key` again is the same retry, not a ' +
      'second one.\n\nNeeds scope `operator`.',
  })
  @ApiActionIdempotencyKey('retry')
  @ApiBody({ required: false, schema: { $ref: '#/components/schemas/RetryOrderRequest' } })
  @ApiAcceptedResponse({ description: 'The retry has started', standardSchema: retryStartedViewSchema })
  @ApiProblems(
    { type: ProblemTypes.NotFound, description: 'No such order' },
    OrderProblemTypes.OrderNotAwaitingRetry,
    TEMPORAL_UNAVAILABLE,
  )
  @RequireScope(Scope.Operator)
  @Idempotent()
  retry(
    @Param({ schema: orderIdParamsSchema }) params: { id: string },
    @Body({ schema: retryOrderSchema }) body: RetryOrderRequest,
    @IdempotencyKey() idempotency: IdempotencyContext | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<RetryStartedView> {
    return withRetryAfter(res, () =>
      this.actions.retry(params.id, body?.step, { access: ALL_ORDERS, actionKey: idempotency?.scopedKey }),
    );
  }

  /**
   * Operator action: records a decision on what an order in `attention_required` waits on, when no provider answer
   * can settle it (audited: who, why, when). 200 once it is recorded.
   */
  @Post(':id/resolve')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    operationId: 'resolveOrder',
    summary: 'Resolve what an order waits on (operator action)',
    description:
      'For orders in `attention_required` whose waiting step no retry can settle: the provider cannot say whether it ' +
      'acted (e.g. it no longer replays an old key), a step after the point of no return was done by hand, or a ' +
      'compensation that failed for good was undone by hand. Sends the `resolve` Update to the workflow ' +
      '`order-<id>`: `performed` or `not_performed`, with a reason; the decision is stored with who (the API client ' +
      "of the key) and when, and the step's side-effect claim is settled accordingly. Then the order goes on: before " +
      'the point of no return it fences again (a shipment resolved `performed` passes it; otherwise the order ' +
      'compensates and ends `failed` or `cancelled`), after it a step resolved `performed` counts as done and one ' +
      'resolved `not_performed` runs again, and a compensation resolved `performed` counts as undone. The order ' +
      'offers only the resolutions that fit its wait (the 409 says which). The same `Idempotency-Key` again with the ' +
      'same body is the same decision (the same answer); with another body it is refused (422, nothing changes).\n\nNeeds scope `operator`.',
  })
  @ApiActionIdempotencyKey('resolve')
  @ApiOkResponse({ description: 'The decision is recorded', standardSchema: resolvedViewSchema })
  @ApiProblems(
    { type: ProblemTypes.NotFound, description: 'No such order' },
    OrderProblemTypes.OrderNotAwaitingResolution,
    IdempotencyProblemTypes.KeyReused,
    TEMPORAL_UNAVAILABLE,
  )
  @RequireScope(Scope.Operator)
  @Idempotent()
  resolve(
    @Param({ schema: orderIdParamsSchema }) params: { id: string },
    @Body({ schema: resolveOrderSchema }) body: ResolveOrderRequest,
    @CurrentClient() client: AuthenticatedClient,
    @IdempotencyKey() idempotency: IdempotencyContext | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<ResolvedView> {
    return withRetryAfter(res, () =>
      this.actions.resolve(params.id, body, {
        access: ALL_ORDERS,
        actionKey: idempotency?.scopedKey,
        idempotencyKey: idempotency?.key,
        by: client.id,
      }),
    );
  }

  /** Operator action: closes an order whose step after the point of no return waits, with a reason. */
  @Post(':id/close')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    operationId: 'closeOrder',
    summary: 'Close an order after its point of no return (operator action)',
    description:
      'For an order in `attention_required` whose step after the point of no return will not be done (e.g. the ' +
      'carrier refuses the address for good and the customer was refunded by hand): sends the `close` Update to the ' +
      'workflow `order-<id>`; the order ends `closed` with the reason (stored with who and when), the remaining ' +
      'steps do not run and nothing is compensated: stock and invoice stay as they are (see Operations). The same ' +
      '`Idempotency-Key` again with the same body gets the same answer; with another body it is refused (422, nothing ' +
      'changes).\n\nNeeds scope `operator`.',
  })
  @ApiActionIdempotencyKey('close')
  @ApiOkResponse({ description: 'The order, now `closed`', standardSchema: orderViewSchema })
  @ApiProblems(
    { type: ProblemTypes.NotFound, description: 'No such order' },
    OrderProblemTypes.OrderNotAwaitingResolution,
    IdempotencyProblemTypes.KeyReused,
    TEMPORAL_UNAVAILABLE,
  )
  @RequireScope(Scope.Operator)
  @Idempotent()
  close(
    @Param({ schema: orderIdParamsSchema }) params: { id: string },
    @Body({ schema: closeOrderSchema }) body: CloseOrderRequest,
    @CurrentClient() client: AuthenticatedClient,
    @IdempotencyKey() idempotency: IdempotencyContext | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<OrderView> {
    return withRetryAfter(res, () =>
      this.actions.close(params.id, body, {
        access: ALL_ORDERS,
        actionKey: idempotency?.scopedKey,
        idempotencyKey: idempotency?.key,
        by: client.id,
      }),
    );
  }

  /** Orders, newest first, keyset-paginated. */
  @Get()
  @ApiOperation({
    operationId: 'listOrders',
    summary: 'List orders',
    description:
      "Newest first. Pass `nextCursor` as `cursor` for the next page. Needs scope `orders:read`: the client's own " +
      "orders (every client's with `operator`).",
  })
  @ApiOkResponse({
    description: 'A page of orders, newest first; `nextCursor` is null on the last page',
    standardSchema: orderPageViewSchema,
  })
  @RequireScope(Scope.OrdersRead)
  list(
    @Query({ schema: listOrdersQuerySchema }) query: ListOrdersQuery,
    @CurrentClient() client: AuthenticatedClient,
  ): Promise<OrderPageView> {
    return this.orders.list(query, orderAccessOf(client));
  }
}

/**
 * Runs an order action; a {@link ServiceUnavailableProblem} it throws gets its `Retry-After` header
 * (RFC 9110 §10.2.3) before the problem filter renders it.
 */
async function withRetryAfter<T>(res: Response, action: () => Promise<T>): Promise<T> {
  try {
    return await action();
  } catch (err) {
    if (err instanceof ServiceUnavailableProblem) res.setHeader('Retry-After', String(err.retryAfterSeconds));
    throw err;
  }
}

/** Documents the optional `Idempotency-Key` of an order action. */
function ApiActionIdempotencyKey(action: 'cancel' | 'retry' | 'resolve' | 'close'): MethodDecorator {
  return ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    description:
      `Optional, recommended. A unique key per ${action} intent (a UUID v4), 1..${IDEMPOTENCY_KEY_MAX_LENGTH} ` +
      'visible ASCII characters, bare or quoted. It becomes the Temporal Update id ' +
      `(\`${action}:<client>:<key>\`), so repeating the request with the same key is the same ${action}: it returns that ` +
      `${action}'s outcome and never acts twice (while the workflow runs; after it closed, the order's final ` +
      'status answers).',
    schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_LENGTH + 2 },
  });
}

/** The 202 response of `POST /orders` for an order, as stored for idempotent replays. */
function accepted(order: OrderView): StoredResponse {
  return { status: HttpStatus.ACCEPTED, headers: { Location: `/orders/${order.id}` }, body: order };
}
