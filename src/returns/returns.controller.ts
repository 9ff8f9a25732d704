/**
 * HTTP API of returns (issue 24, "Returns and refunds"):
 * - `POST /orders/:id/returns` body `{ lines: [{ sku, quantity }], reason: { code, text? } }` → 202 {@link ReturnView},
 *   `Location: /returns/<id>`; 404, 409 `order-not-shipped` / `return-window-closed`, 422 `return-exceeds-shipped`.
 *   With `Idempotency-Key` a retry replays the first response (as `POST /orders`).
 * - `GET /orders/:id/returns` → 200 `{ items }`, newest first.
 * - `GET /returns/:id` → 200 {@link ReturnView}.
 * - `POST /returns/:id/received` (warehouse, operator) body `{ lines: [{ sku, quantity, damaged }] }` → 200
 *   `{ receipt, return }`; 409 `return-not-awaiting-receipt`, 422 `return-receipt-invalid`, 503.
 * - `POST /returns/:id/withdraw` → 200 {@link ReturnView} (`withdrawn`), 202 while the workflow still ends it; 409
 *   `return-not-withdrawable`, 503.
 * - `POST /returns/:id/retry` (operator) body `{ reason? }` → 202 `{ returnId, step }`; 409
 *   `return-not-awaiting-retry`, 503.
 * A client sees and acts on the returns of its own orders only (others' answer 404); `operator` keys on all.
 */
import { Body, Controller, Get, HttpCode, HttpStatus, Injectable, Param, Post, Res } from '@nestjs/common';
import { ApiAcceptedResponse, ApiBody, ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import type { AuthenticatedClient } from '../auth/api-key.store.js';
import { CurrentClient, RequireScope } from '../auth/auth.decorators.js';
import { hasScope, Scope } from '../auth/scopes.js';
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
import { orderIdParamsSchema } from '../orders/list-orders.dto.js';
import { ALL_ORDERS, orderAccessOf } from '../orders/order-access.js';
import {
  type CreateReturnRequest,
  createReturnSchema,
  type ReceiveReturnRequest,
  receiveReturnSchema,
  type RetryReturnRequest,
  retryReturnSchema,
  returnIdParamsSchema,
  type ReturnListView,
  returnListViewSchema,
  type ReturnReceivedView,
  returnReceivedViewSchema,
  type ReturnRetryStartedView,
  returnRetryStartedViewSchema,
  type ReturnView,
  returnViewSchema,
  type WithdrawReturnRequest,
  withdrawReturnSchema,
} from './return.dto.js';
import { ReturnActionsService } from './return-actions.service.js';
import { ReturnProblemTypes } from './return-problems.js';
import { type ReturnViewOptions, ReturnsService } from './returns.service.js';

/** `Location` of a 202: where to watch the return. */
const LOCATION_HEADER = { description: 'URL of the return: /returns/{id}', required: true, schema: { type: 'string' } };

/** What a caller sees of a return: `attentionReason` with `operator` only. */
function viewOf(client: AuthenticatedClient): ReturnViewOptions {
  return { internal: hasScope(client.scopes, Scope.Operator) };
}

/** Rebuilds the 202 of `POST /orders/:id/returns` from a stored return (recovery of a stale idempotency record). */
@Injectable()
export class ReturnIdempotency implements IdempotentResource {
  constructor(private readonly returns: ReturnsService) {}

  /** The 202 the request that stored `returnId` answered (or would have), or null when it is gone. */
  async recover(returnId: string): Promise<StoredResponse | null> {
    const found = await this.returns.find(returnId, ALL_ORDERS, { internal: false });
    return found ? { status: HttpStatus.ACCEPTED, headers: { Location: `/returns/${found.id}` }, body: found } : null;
  }
}

@ApiTags('returns')
@Controller('orders')
export class OrderReturnsController {
  constructor(private readonly returns: ReturnsService) {}

  /** Asks for a return of shipped units of an order; 202 once stored (its workflow is started right after). */
  @Post(':id/returns')
  @HttpCode(HttpStatus.ACCEPTED)
  @ApiOperation({
    operationId: 'createReturn',
    summary: 'Return shipped units of an order',
    description:
      'Asks for a return of units the order shipped: for each line, at most what shipped minus what the ' +
      "order's open returns (not withdrawn or expired) claim, within `RETURN_WINDOW_DAYS` (default 30) days of the " +
      'shipment. Stores the return (`requested`, an RMA number) and starts its workflow `return-<id>`: a prepaid ' +
      'label from the carrier, emailed to the customer; the wait for the parcel (`RETURN_RECEIPT_TIMEOUT`, then ' +
      '`expired`); on receipt the undamaged units go back to stock, the card is refunded (card orders) and the ' +
      'invoice credited: each undamaged unit at its order line price, each damaged one at ' +
      '`RETURN_DAMAGED_REFUND_PERCENT` of it. Follow `Location`.\n\n' +
      'Send an `Idempotency-Key` to make retries safe: the same key and body get the first response again ' +
      '(`Idempotent-Replayed: true`) and ask for no second return.\n\n' +
      'Needs scope `orders:write` (own orders) or `operator`.',
  })
  @ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    description:
      `Optional. A unique key per return intent (a UUID v4), 1..${IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII ` +
      'characters, bare or quoted. Same key + same body → the stored response is replayed; same key while the ' +
      'first request runs → 409; same key + another body → 422.',
    schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_LENGTH + 2 },
  })
  @ApiAcceptedResponse({
    description: 'Return accepted (or, with a known Idempotency-Key, the first response replayed)',
    standardSchema: returnViewSchema,
    headers: { Location: LOCATION_HEADER, [IDEMPOTENT_REPLAYED_HEADER]: REPLAYED_HEADER },
  })
  @ApiProblems(
    { type: ProblemTypes.NotFound, description: "No such order (or another client's)" },
    ReturnProblemTypes.OrderNotShipped,
    ReturnProblemTypes.ReturnWindowClosed,
    ReturnProblemTypes.ReturnExceedsShipped,
    IdempotencyProblemTypes.KeyInUse,
    IdempotencyProblemTypes.KeyReused,
  )
  @RequireScope(Scope.OrdersWrite)
  @Idempotent({ records: ReturnIdempotency })
  async create(
    @Param({ schema: orderIdParamsSchema }) params: { id: string },
    @Body({ schema: createReturnSchema }) body: CreateReturnRequest,
    @CurrentClient() client: AuthenticatedClient,
    @IdempotencyKey() idempotency: IdempotencyContext | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<ReturnView> {
    const created = await this.returns.create(params.id, body, {
      access: orderAccessOf(client),
      inTransaction: idempotency?.claim,
    });
    res.location(`/returns/${created.id}`);
    return created;
  }

  /** The returns of an order, newest first. */
  @Get(':id/returns')
  @ApiOperation({
    operationId: 'listOrderReturns',
    summary: "List an order's returns",
    description: 'Newest first, at most 100. Needs scope `orders:read`: own orders (all with `operator`).',
  })
  @ApiOkResponse({ description: "The order's returns", standardSchema: returnListViewSchema })
  @ApiProblems({ type: ProblemTypes.NotFound, description: "No such order (or another client's)" })
  @RequireScope(Scope.OrdersRead)
  list(
    @Param({ schema: orderIdParamsSchema }) params: { id: string },
    @CurrentClient() client: AuthenticatedClient,
  ): Promise<ReturnListView> {
    return this.returns.listForOrder(params.id, orderAccessOf(client), viewOf(client));
  }
}

@ApiTags('returns')
@Controller('returns')
export class ReturnsController {
  constructor(
    private readonly returns: ReturnsService,
    private readonly actions: ReturnActionsService,
  ) {}

  /** One return: its lines, label, receipt and refund. */
  @Get(':id')
  @ApiOperation({
    operationId: 'getReturn',
    summary: 'Get a return',
    description: "Needs scope `orders:read`: the returns of the client's own orders (all with `operator`).",
  })
  @ApiOkResponse({ description: 'The return and where it stands', standardSchema: returnViewSchema })
  @ApiProblems({ type: ProblemTypes.NotFound, description: "No such return (or another client's)" })
  @RequireScope(Scope.OrdersRead)
  get(
    @Param({ schema: returnIdParamsSchema }) params: { id: string },
    @CurrentClient() client: AuthenticatedClient,
  ): Promise<ReturnView> {
    return this.returns.get(params.id, orderAccessOf(client), viewOf(client));
  }

  /** The warehouse (or an operator) reports the return's parcel received: 200 with the receipt the return holds. */
  @Post(':id/received')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    operationId: 'reportReturnReceived',
    summary: "Report a return's parcel received (the warehouse, or an operator)",
    description:
      'Sends the `receive` Update to the workflow `return-<id>`, which ends its wait for the parcel: the receipt is ' +
      'recorded, the undamaged units go back to stock, then the refund and the credit note follow (GET /returns/:id ' +
      'until `completed`). A second receipt while the return runs answers the first one. 409 when the return does ' +
      'not wait for a receipt (no label yet, withdrawn, expired, ended); 422 when the lines do not match the return.' +
      "\n\nNeeds scope `warehouse` (the warehouse's own API key) or `operator`.",
  })
  @ApiReturnActionIdempotencyKey('received')
  @ApiOkResponse({
    description: 'The return holds the receipt (the first one)',
    standardSchema: returnReceivedViewSchema,
  })
  @ApiProblems(
    { type: ProblemTypes.NotFound, description: 'No such return' },
    ReturnProblemTypes.ReturnNotAwaitingReceipt,
    ReturnProblemTypes.ReturnReceiptInvalid,
    TEMPORAL_UNAVAILABLE,
  )
  @RequireScope(Scope.Warehouse)
  @Idempotent()
  received(
    @Param({ schema: returnIdParamsSchema }) params: { id: string },
    @Body({ schema: receiveReturnSchema }) body: ReceiveReturnRequest,
    @CurrentClient() client: AuthenticatedClient,
    @IdempotencyKey() idempotency: IdempotencyContext | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<ReturnReceivedView> {
    return withRetryAfter(res, () =>
      this.actions.receive(params.id, body, {
        actionKey: idempotency?.scopedKey,
        by: client.id,
        view: viewOf(client),
      }),
    );
  }

  /** The customer (or an operator) withdraws a return before its parcel was received. */
  @Post(':id/withdraw')
  @HttpCode(HttpStatus.OK)
  @ApiOperation({
    operationId: 'withdrawReturn',
    summary: 'Withdraw a return',
    description:
      'Possible until the parcel is received. Sends the `withdraw` Update to the workflow `return-<id>`, which ends ' +
      'the return as `withdrawn` (nothing refunded; its units may be returned again), and waits up to 5 s for that.' +
      '\n\n- **200**: the return, now `withdrawn` (also when it already was).\n- **202** with `Location`: the ' +
      'workflow took the withdrawal but has not ended the return yet (it finishes a step first); poll ' +
      '`GET /returns/:id`.\n- **409** `return-not-withdrawable`: received already, or ended.\n\n' +
      'Needs scope `orders:write` (own orders) or `operator`.',
  })
  @ApiReturnActionIdempotencyKey('withdraw')
  @ApiBody({ required: false, schema: { $ref: '#/components/schemas/WithdrawReturnRequest' } })
  @ApiOkResponse({ description: 'The return, now `withdrawn`', standardSchema: returnViewSchema })
  @ApiAcceptedResponse({
    description: 'The withdrawal is taken; the return is not ended yet',
    standardSchema: returnViewSchema,
    headers: { Location: LOCATION_HEADER },
  })
  @ApiProblems(
    { type: ProblemTypes.NotFound, description: "No such return (or another client's)" },
    ReturnProblemTypes.ReturnNotWithdrawable,
    TEMPORAL_UNAVAILABLE,
  )
  @RequireScope(Scope.OrdersWrite)
  @Idempotent()
  async withdraw(
    @Param({ schema: returnIdParamsSchema }) params: { id: string },
    @Body({ schema: withdrawReturnSchema }) _body: WithdrawReturnRequest,
    @CurrentClient() client: AuthenticatedClient,
    @IdempotencyKey() idempotency: IdempotencyContext | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<ReturnView> {
    const outcome = await withRetryAfter(res, () =>
      this.actions.withdraw(params.id, orderAccessOf(client), {
        actionKey: idempotency?.scopedKey,
        by: client.id,
        view: viewOf(client),
      }),
    );
    res.status(outcome.status);
    if (outcome.status === HttpStatus.ACCEPTED) res.location(`/returns/${params.id}`);
    return outcome.return;
  }

  /** Operator action: retries the provider step a return in `attention_required` waits on. */
  @Post(':id/retry')
  @HttpCode(HttpStatus.ACCEPTED)
  @ApiOperation({
    operationId: 'retryReturn',
    summary: 'Retry the step a return waits on (operator action)',
    description:
      'For returns in `attention_required` (a label, refund, credit note or email that failed for good): sends the ' +
      '`retry` Update to the workflow `return-<id>`, which runs the step again under the same provider key (a ' +
      'provider that did act is not asked twice). 202 once the workflow took it; poll `GET /returns/:id`. The same ' +
      '`Idempotency-Key` again is the same retry.\n\nNeeds scope `operator`.',
  })
  @ApiReturnActionIdempotencyKey('retry')
  @ApiBody({ required: false, schema: { $ref: '#/components/schemas/RetryReturnRequest' } })
  @ApiAcceptedResponse({
    description: 'The retry has started',
    standardSchema: returnRetryStartedViewSchema,
    headers: { Location: LOCATION_HEADER },
  })
  @ApiProblems(
    { type: ProblemTypes.NotFound, description: 'No such return' },
    ReturnProblemTypes.ReturnNotAwaitingRetry,
    TEMPORAL_UNAVAILABLE,
  )
  @RequireScope(Scope.Operator)
  @Idempotent()
  async retry(
    @Param({ schema: returnIdParamsSchema }) params: { id: string },
    @Body({ schema: retryReturnSchema }) body: RetryReturnRequest,
    @CurrentClient() client: AuthenticatedClient,
    @IdempotencyKey() idempotency: IdempotencyContext | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<ReturnRetryStartedView> {
    const started = await withRetryAfter(res, () =>
      this.actions.retry(params.id, body, {
        actionKey: idempotency?.scopedKey,
        by: client.id,
        view: viewOf(client),
      }),
    );
    res.location(`/returns/${params.id}`);
    return started;
  }
}

/**
 * Runs a return action; a {@link ServiceUnavailableProblem} it throws gets its `Retry-After` header
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

/** Documents the optional `Idempotency-Key` of a return action (it becomes the Temporal Update id). */
function ApiReturnActionIdempotencyKey(action: 'received' | 'withdraw' | 'retry'): MethodDecorator {
  return ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    description:
      `Optional, recommended. A unique key per ${action} intent (a UUID v4), 1..${IDEMPOTENCY_KEY_MAX_LENGTH} ` +
      'visible ASCII characters, bare or quoted. It becomes the Temporal Update id ' +
      `(\`${action}:<client>:<key>\`), so repeating the request with the same key is the same action: it gets that ` +
      "action's answer and never acts twice.",
    schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_LENGTH + 2 },
  });
}
