/**
 * HTTP API of orders:
 * - `POST /orders` → 202 Accepted, `Location: /orders/<id>`, body {@link OrderView}. With the optional
 *   `Idempotency-Key` header a retry replays the first response (`Idempotent-Replayed: true`) instead of
 *   placing a second order; 409 while the first is in flight, 422 for the key with another body (see
 *   {@link IdempotencyService}). Without the header every request places a new order.
 * - `GET /orders/:id` → 200 {@link OrderView}; 400 for a non-UUID id, 404 when unknown.
 * - `GET /orders?limit&cursor&status` → 200 {@link OrderPageView}, newest first.
 * Errors are `application/problem+json` (RFC 9457).
 */
import { Body, Controller, Get, HttpCode, HttpStatus, Param, Post, Query, Req, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiHeader, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { ApiProblemResponses } from '../common/api-problem-responses.decorator.js';
import { PROBLEM_JSON } from '../common/problem-details.js';
import {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_MAX_LENGTH,
  IDEMPOTENT_REPLAYED_HEADER,
  parseIdempotencyKey,
} from '../idempotency/idempotency-key.js';
import {
  IdempotencyKeyInUseException,
  IdempotencyService,
  requestFingerprint,
  type StoredResponse,
} from '../idempotency/idempotency.service.js';
import { type CreateOrderRequest, createOrderSchema } from './create-order.dto.js';
import { type ListOrdersQuery, listOrdersQuerySchema, orderIdParamsSchema } from './list-orders.dto.js';
import { type OrderPageView, orderPageViewSchema, type OrderView, orderViewSchema } from './order-response.dto.js';
import { OrdersService } from './orders.service.js';

@ApiTags('orders')
@Controller('orders')
export class OrdersController {
  constructor(
    private readonly orders: OrdersService,
    private readonly idempotency: IdempotencyService,
  ) {}

  /** Accepts an order and starts its fulfilment; never waits for fulfilment. */
  @Post()
  @HttpCode(HttpStatus.ACCEPTED)
  @ApiOperation({
    summary: 'Place an order',
    description:
      'Validates the order against the catalogue, stores it with status `received` and starts its fulfilment workflow. ' +
      'Answers 202 before fulfilment; follow `Location` to watch the status. If the workflow engine is down the order ' +
      'is still accepted and its workflow is started later by the reconciler.\n\n' +
      'Send an `Idempotency-Key` to make retries safe (draft-ietf-httpapi-idempotency-key-header): a retry with the ' +
      'same key and the same body gets the first response again, marked `Idempotent-Replayed: true`, and places ' +
      'no second order. Keys are kept for `IDEMPOTENCY_RETENTION_MS` (default 24 h). Without the header every ' +
      'request places a new order.',
  })
  @ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    description:
      `Optional. A unique key per order intent (a UUID v4 is recommended), 1..${IDEMPOTENCY_KEY_MAX_LENGTH} visible ` +
      'ASCII characters, bare (`abc`) or as a Structured-Field string (`"abc"`). Same key + same body → the stored ' +
      'response is replayed; same key while the first request runs → 409; same key + different body → 422. ' +
      'Kept for 24 h by default (IDEMPOTENCY_RETENTION_MS).',
    schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_LENGTH + 2 },
    example: '"8e03978e-40d5-43e8-bc93-6894a57f9324"',
  })
  @ApiAcceptedResponse({
    description: 'Order accepted (or, with a known Idempotency-Key, the first response replayed)',
    standardSchema: orderViewSchema,
    headers: {
      Location: { description: 'URL of the order: /orders/{id}', schema: { type: 'string' } },
      [IDEMPOTENT_REPLAYED_HEADER]: {
        description: '`true` when this is the stored response of an earlier request with the same Idempotency-Key',
        schema: { type: 'string', enum: ['true'] },
      },
    },
  })
  @ApiProblemResponses({
    400: 'Invalid body, malformed JSON, unknown SKU, mixed currencies, or a malformed Idempotency-Key',
    422: 'Idempotency-Key already used with a different body (`idempotency-key-reused`)',
  })
  @ApiResponse({
    status: 409,
    description: 'A request with this Idempotency-Key is still being processed (`idempotency-key-in-use`)',
    headers: { 'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } } },
    content: { [PROBLEM_JSON]: { schema: { $ref: '#/components/schemas/ProblemDetails' } } },
  })
  async create(
    @Body({ schema: createOrderSchema }) body: CreateOrderRequest,
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
  ): Promise<OrderView> {
    const key = parseIdempotencyKey(req.headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()]);
    if (key === undefined) {
      const order = await this.orders.create(body);
      res.location(`/orders/${order.id}`);
      return order;
    }

    try {
      const { response, replayed } = await this.idempotency.execute(
        // The fingerprint covers the body as sent (req.body, before validation transformed it).
        { key, fingerprint: requestFingerprint(req.body) },
        {
          perform: async (claim) => accepted(await this.orders.create(body, { inTransaction: claim })),
          recover: async (orderId) => {
            const order = await this.orders.find(orderId);
            return order ? accepted(order) : null;
          },
        },
      );
      // The stored status is always 202 (@HttpCode) on this route; replay its headers and body.
      for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
      if (replayed) res.setHeader(IDEMPOTENT_REPLAYED_HEADER, 'true');
      return response.body as OrderView;
    } catch (err) {
      if (err instanceof IdempotencyKeyInUseException) res.setHeader('Retry-After', String(err.retryAfterSeconds));
      throw err;
    }
  }

  /** One order with its lines, invoice number and accounting id. */
  @Get(':id')
  @ApiOperation({ summary: 'Get an order' })
  @ApiOkResponse({ standardSchema: orderViewSchema })
  @ApiProblemResponses({ 400: 'The id is not a UUID', 404: 'No such order' })
  get(@Param({ schema: orderIdParamsSchema }) params: { id: string }): Promise<OrderView> {
    return this.orders.get(params.id);
  }

  /**
   * Retries the accounting sync of an order in `attention_required` (a confirmed order whose invoice the
   * accounting system rejected for good), after the cause was fixed: signals `retryAccountingSync` to the
   * order's workflow. 202: the retry is under way; poll `GET /orders/:id`.
   */
  @Post(':id/accounting-sync/retry')
  @HttpCode(HttpStatus.ACCEPTED)
  @ApiOperation({
    summary: 'Retry the accounting sync of an order that needs attention',
    description:
      'Only for orders in `attention_required`. Sends the `retryAccountingSync` signal to the workflow ' +
      '`order-<id>`, which calls the accounting system again with the same Idempotency-Key.',
  })
  @ApiAcceptedResponse({ standardSchema: orderViewSchema })
  @ApiProblemResponses({
    400: 'The id is not a UUID',
    404: 'No such order',
    409: 'The order is not in attention_required',
  })
  retryAccountingSync(@Param({ schema: orderIdParamsSchema }) params: { id: string }): Promise<OrderView> {
    return this.orders.retryAccountingSync(params.id);
  }

  /** Orders, newest first, keyset-paginated. */
  @Get()
  @ApiOperation({
    summary: 'List orders',
    description: 'Newest first. Pass `nextCursor` as `cursor` for the next page.',
  })
  @ApiOkResponse({ standardSchema: orderPageViewSchema })
  @ApiProblemResponses({ 400: 'Invalid limit, status or cursor' })
  list(@Query({ schema: listOrdersQuerySchema }) query: ListOrdersQuery): Promise<OrderPageView> {
    return this.orders.list(query);
  }
}

/** The 202 response of `POST /orders` for an order, as stored for idempotent replays. */
function accepted(order: OrderView): StoredResponse {
  return { status: HttpStatus.ACCEPTED, headers: { Location: `/orders/${order.id}` }, body: order };
}
