/**
 * HTTP API of inventory:
 * - `GET /inventory` → 200 {@link ProductView}[] ordered by SKU.
 * - `PUT /inventory/:sku` body `{ onHand }` (absolute) → 200 {@link ProductView}; optional `Idempotency-Key`
 *   (a replay changes nothing and answers `Idempotent-Replayed: true`); 404 unknown SKU; 409 below reserved.
 * - `GET /inventory/:sku/movements` → 200 {@link MovementView}[], newest first (at most 100).
 */
import { randomUUID } from 'node:crypto';
import { Body, Controller, Get, Headers, Param, Put, Res } from '@nestjs/common';
import { ApiHeader, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { z } from 'zod';
import { ApiProblemResponses } from '../common/api-problem-responses.decorator.js';
import { ProblemException } from '../common/problem-details.js';
import { issuesToErrors } from '../common/validation.js';
import {
  idempotencyKeySchema,
  type MovementView,
  movementViewSchema,
  type ProductView,
  productViewSchema,
  type SetOnHandRequest,
  setOnHandSchema,
  skuParamsSchema,
} from './inventory.dto.js';
import { InventoryService } from './inventory.service.js';

@ApiTags('inventory')
@Controller('inventory')
export class InventoryController {
  constructor(private readonly inventory: InventoryService) {}

  /** The catalogue with stock. */
  @Get()
  @ApiOperation({ summary: 'List products and stock' })
  @ApiOkResponse({ standardSchema: z.array(productViewSchema) })
  list(): Promise<ProductView[]> {
    return this.inventory.list();
  }

  /** Sets on-hand stock to an absolute value and records the adjustment in the ledger. */
  @Put(':sku')
  @ApiOperation({
    summary: 'Set on-hand stock',
    description:
      'Sets on-hand stock to the given ABSOLUTE value and records an `adjustment` movement. ' +
      'Repeating a request with the same `Idempotency-Key` changes nothing.',
  })
  @ApiHeader({ name: 'Idempotency-Key', required: false, description: 'Makes the request safe to retry' })
  @ApiOkResponse({ standardSchema: productViewSchema })
  @ApiProblemResponses({ 400: 'Invalid body or header', 404: 'Unknown SKU', 409: 'Below the reserved quantity' })
  async setOnHand(
    @Param({ schema: skuParamsSchema }) params: { sku: string },
    @Body({ schema: setOnHandSchema }) body: SetOnHandRequest,
    @Headers('idempotency-key') idempotencyKey: string | undefined,
    @Res({ passthrough: true }) res: Response,
  ): Promise<ProductView> {
    let requestId: string = randomUUID();
    if (idempotencyKey !== undefined) {
      const parsed = idempotencyKeySchema.safeParse(idempotencyKey);
      if (!parsed.success) {
        throw ProblemException.validation(
          issuesToErrors(parsed.error.issues).map((e) => ({ ...e, path: 'headers.idempotency-key' })),
        );
      }
      requestId = parsed.data;
    }
    const { product, replayed } = await this.inventory.setOnHand(params.sku, body.onHand, requestId);
    if (replayed) res.setHeader('Idempotent-Replayed', 'true');
    return product;
  }

  /** The ledger of one SKU, newest first. */
  @Get(':sku/movements')
  @ApiOperation({ summary: 'List stock movements of a product' })
  @ApiOkResponse({ standardSchema: z.array(movementViewSchema) })
  @ApiProblemResponses({ 404: 'Unknown SKU' })
  movements(@Param({ schema: skuParamsSchema }) params: { sku: string }): Promise<MovementView[]> {
    return this.inventory.movements(params.sku);
  }
}
