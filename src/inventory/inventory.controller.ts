/**
 * HTTP API of inventory (every route needs an API key):
 * - `GET /inventory` → 200 {@link ProductView}[] ordered by SKU; any valid key (clients need the catalogue).
 * - `PUT /inventory/:sku` body `{ onHand }` (absolute) → 200 {@link ProductView}; scope `inventory:write`;
 *   optional `Idempotency-Key` (the stored response is replayed with `Idempotent-Replayed: true`, see
 *   {@link Idempotent}); 404 unknown SKU; 409 below reserved.
 * - `GET /inventory/:sku/movements` → 200 {@link MovementView}[], newest first (at most 100); scope
 *   `inventory:write` (the ledger names every client's orders).
 */
import { randomUUID } from 'node:crypto';
import { Body, Controller, Get, Injectable, Param, Put, Res } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { z } from 'zod';
import { RequireScope } from '../auth/auth.decorators.js';
import { Scope } from '../auth/scopes.js';
import { ApiProblems } from '../common/api-problem-responses.decorator.js';
import { ProblemTypes } from '../common/problem-details.js';
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
import {
  type MovementView,
  movementViewSchema,
  type ProductView,
  productViewSchema,
  type SetOnHandRequest,
  setOnHandSchema,
  skuParamsSchema,
} from './inventory.dto.js';
import { InventoryProblemTypes } from './inventory-problems.js';
import { InventoryService } from './inventory.service.js';

/** Rebuilds the 200 of `PUT /inventory/:sku` from a stored movement (recovery of a stale idempotency record). */
@Injectable()
export class InventoryIdempotency implements IdempotentResource {
  constructor(private readonly inventory: InventoryService) {}

  async recover(movementId: string): Promise<StoredResponse | null> {
    const product = await this.inventory.productOfMovement(movementId);
    return product ? { status: 200, headers: {}, body: product } : null;
  }
}

@ApiTags('inventory')
@Controller('inventory')
export class InventoryController {
  constructor(private readonly inventory: InventoryService) {}

  /** The catalogue with stock. */
  @Get()
  @ApiOperation({ operationId: 'listInventory', summary: 'List products and stock', description: 'Any valid API key.' })
  @ApiOkResponse({ description: 'Every product with its stock, by SKU', standardSchema: z.array(productViewSchema) })
  list(): Promise<ProductView[]> {
    return this.inventory.list();
  }

  /** Sets on-hand stock to an absolute value and records the adjustment in the ledger. */
  @Put(':sku')
  @ApiOperation({
    operationId: 'setStock',
    summary: 'Set on-hand stock',
    description:
      'Sets on-hand stock to the given ABSOLUTE value and records an `adjustment` movement. ' +
      'A retry with the same `Idempotency-Key` gets the first response again (`Idempotent-Replayed: true`) and ' +
      'changes nothing; 409 while the first is in flight, 422 for the key with another request. Needs scope ' +
      '`inventory:write`.',
  })
  @ApiHeader({
    name: IDEMPOTENCY_KEY_HEADER,
    required: false,
    description: 'Makes the request safe to retry (scoped to the client; same rules as on POST /orders)',
    schema: { type: 'string', minLength: 1, maxLength: IDEMPOTENCY_KEY_MAX_LENGTH + 2 },
  })
  @ApiOkResponse({
    description: 'The product with its new stock (or, with a known Idempotency-Key, as the first request left it)',
    standardSchema: productViewSchema,
    headers: {
      [IDEMPOTENT_REPLAYED_HEADER]: {
        description: '`true` when this answers an earlier request with the same Idempotency-Key',
        required: false,
        schema: { type: 'string', enum: ['true'] },
      },
    },
  })
  @ApiProblems(
    { type: ProblemTypes.NotFound, description: 'Unknown SKU' },
    InventoryProblemTypes.StockBelowReserved,
    IdempotencyProblemTypes.KeyInUse,
    IdempotencyProblemTypes.KeyReused,
  )
  @RequireScope(Scope.InventoryWrite)
  @Idempotent({ records: InventoryIdempotency })
  async setOnHand(
    @Param({ schema: skuParamsSchema }) params: { sku: string },
    @Body({ schema: setOnHandSchema }) body: SetOnHandRequest,
    @IdempotencyKey() idempotency: IdempotencyContext | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<ProductView> {
    const { product, replayed } = await this.inventory.setOnHand(params.sku, body.onHand, {
      requestId: idempotency?.scopedKey ?? randomUUID(),
      inTransaction: idempotency?.claim,
    });
    // The movement of this key existed although its record did not (the record's retention has passed).
    if (replayed) res.setHeader(IDEMPOTENT_REPLAYED_HEADER, 'true');
    return product;
  }

  /** The ledger of one SKU, newest first. */
  @Get(':sku/movements')
  @ApiOperation({
    operationId: 'listStockMovements',
    summary: 'List stock movements of a product',
    description: 'Needs scope `inventory:write`.',
  })
  @ApiOkResponse({ description: 'The 100 newest movements, newest first', standardSchema: z.array(movementViewSchema) })
  @ApiProblems({ type: ProblemTypes.NotFound, description: 'Unknown SKU' })
  @RequireScope(Scope.InventoryWrite)
  movements(@Param({ schema: skuParamsSchema }) params: { sku: string }): Promise<MovementView[]> {
    return this.inventory.movements(params.sku);
  }
}
