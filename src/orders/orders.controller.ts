/**
 * HTTP API of orders:
 * - `POST /orders` → 202 Accepted, `Location: /orders/<id>`, body {@link OrderView}.
 * - `GET /orders/:id` → 200 {@link OrderView}; 400 for a non-UUID id, 404 when unknown.
 * - `GET /orders?limit&cursor&status` → 200 {@link OrderPageView}, newest first.
 * Errors are `application/problem+json` (RFC 9457).
 */
import { Body, Controller, Get, HttpCode, HttpStatus, Param, Post, Query, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { ApiProblemResponses } from '../common/api-problem-responses.decorator.js';
import { type CreateOrderRequest, createOrderSchema } from './create-order.dto.js';
import { type ListOrdersQuery, listOrdersQuerySchema, orderIdParamsSchema } from './list-orders.dto.js';
import { type OrderPageView, orderPageViewSchema, type OrderView, orderViewSchema } from './order-response.dto.js';
import { OrdersService } from './orders.service.js';

@ApiTags('orders')
@Controller('orders')
export class OrdersController {
  constructor(private readonly orders: OrdersService) {}

  /** Accepts an order and starts its fulfilment; never waits for fulfilment. */
  @Post()
  @HttpCode(HttpStatus.ACCEPTED)
  @ApiOperation({
    summary: 'Place an order',
    description:
      'Validates the order against the catalogue, stores it with status `received` and starts its fulfilment workflow. ' +
      'Answers 202 before fulfilment; follow `Location` to watch the status. If the workflow engine is down the order ' +
      'is still accepted and its workflow is started later by the reconciler.',
  })
  @ApiAcceptedResponse({
    description: 'Order accepted',
    standardSchema: orderViewSchema,
    headers: { Location: { description: 'URL of the order: /orders/{id}', schema: { type: 'string' } } },
  })
  @ApiProblemResponses({ 400: 'Invalid body, malformed JSON, unknown SKU or mixed currencies' })
  async create(
    @Body({ schema: createOrderSchema }) body: CreateOrderRequest,
    @Res({ passthrough: true }) res: Response,
  ): Promise<OrderView> {
    const order = await this.orders.create(body);
    res.location(`/orders/${order.id}`);
    return order;
  }

  /** One order with its lines, invoice number and accounting id. */
  @Get(':id')
  @ApiOperation({ summary: 'Get an order' })
  @ApiOkResponse({ standardSchema: orderViewSchema })
  @ApiProblemResponses({ 400: 'The id is not a UUID', 404: 'No such order' })
  get(@Param({ schema: orderIdParamsSchema }) params: { id: string }): Promise<OrderView> {
    return this.orders.get(params.id);
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
