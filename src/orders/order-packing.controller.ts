/**
 * `POST /orders/:id/packed`: the warehouse (an API key with scope `warehouse`) or an operator reports an order
 * packed. Body optional `{ parcels?, note? }`; 200 {@link PackedView} (the first report; a second one answers the
 * same); 409 `order-not-awaiting-packing`, 404, 503. See docs/api.md, "The warehouse reports back".
 */
import { Body, Controller, HttpCode, HttpStatus, Param, Post, Res } from '@nestjs/common';
import { ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { AuthenticatedClient } from '../auth/api-key.store.js';
import { CurrentClient, RequireScope } from '../auth/auth.decorators.js';
import { Scope } from '../auth/scopes.js';
import { ApiProblems } from '../common/api-problem-responses.decorator.js';
import { ProblemTypes, ServiceUnavailableProblem } from '../common/problem-details.js';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENCY_KEY_MAX_LENGTH } from '../idempotency/idempotency-key.js';
import { Idempotent, type IdempotencyContext, IdempotencyKey } from '../idempotency/idempotency.interceptor.js';
import {
  type PackedView,
  packedViewSchema,
  type ReportPackedRequest,
  reportPackedSchema,
} from './order-actions.dto.js';
import { orderIdParamsSchema } from './list-orders.dto.js';
import { OrderProblemTypes } from './order-problems.js';
import { OrderPackingService } from './order-packing.service.js';

@ApiTags('orders')
@Controller('orders')
export class OrderPackingController {
  constructor(private readonly packing: OrderPackingService) {}

  /** The warehouse (or an operator) reports the order packed: 200 with the first report once the order has it. */
  @Post(':id/packed')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    operationId: 'reportOrderPacked',
    summary: 'Report an order packed (the warehouse, or an operator)',
    description:
      'The warehouse reports that the order is packed: sends the `reportPacked` Update to the workflow `order-<id>`, ' +
      'which ends its wait for packing (awaitPacking) and goes on to the hand-over to the carrier. A report that ' +
      'comes before the order waits is kept and ends the wait at once; a second report (another key, e.g. an ' +
      "operator's after the warehouse's) answers the same as the first. 409 when the order does not wait for " +
      'packing and has no packing step (placed before the warehouse wait existed), is final or is being cancelled.' +
      "\n\nNeeds scope `warehouse` (the warehouse's own API key) or `operator`.",
  })
  @ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    description:
      `Recommended. A unique key per report, 1..${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters (the ` +
      'simulated warehouse sends `packed:<pickId>`). It becomes the Temporal Update id (`packed:<client>:<key>`): the ' +
      'same key again is the same report and gets the same answer.',
    schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_LENGTH + 2 },
  })
  @ApiBody({ required: false, schema: { $ref: '#/components/schemas/ReportPackedRequest' } })
  @ApiOkResponse({ description: 'The order has the report (the first one)', standardSchema: packedViewSchema })
  @ApiProblems(
    { type: ProblemTypes.NotFound, description: 'No such order' },
    OrderProblemTypes.OrderNotAwaitingPacking,
    {
      type: ProblemTypes.ServiceUnavailable,
      description: 'Temporal or the database is unreachable, or no worker took the report in time',
    },
  )
  @RequireScope(Scope.Warehouse)
  @Idempotent()
  async packed(
    @Param({ schema: orderIdParamsSchema }) params: { id: string },
    @Body({ schema: reportPackedSchema }) body: ReportPackedRequest,
    @CurrentClient() client: AuthenticatedClient,
    @IdempotencyKey() idempotency: IdempotencyContext | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<PackedView> {
    try {
      return await this.packing.report(params.id, body, { actionKey: idempotency?.scopedKey, by: client.id });
    } catch (err) {
      if (err instanceof ServiceUnavailableProblem) res.setHeader('Retry-After', String(err.retryAfterSeconds));
      throw err;
    }
  }
}
