/**
 * Request and response shapes of the inventory API. Money is integer minor currency units; stock is units.
 */
import { z } from 'zod';

/** `PUT /inventory/:sku` body: the new ABSOLUTE on-hand quantity (not a delta). */
export const setOnHandSchema = z
  .strictObject({
    onHand: z.int().min(0).max(2_147_483_647).meta({ description: 'Physical stock, units', example: 25 }),
  })
  .meta({ id: 'SetOnHandRequest', examples: [{ onHand: 25 }] });
export type SetOnHandRequest = z.output<typeof setOnHandSchema>;

/** `:sku` path parameter. */
export const skuParamsSchema = z.object({ sku: z.string().min(1).max(64).meta({ description: 'Product SKU' }) });

/** A product and its stock; `available = onHand - reserved`. */
export const productViewSchema = z
  .object({
    sku: z.string(),
    name: z.string(),
    priceMinor: z.int().meta({ description: 'Unit price, minor units' }),
    currency: z.string().meta({ description: 'ISO 4217 code', example: 'EUR' }),
    onHand: z.int().meta({ description: 'Physical stock, units' }),
    reserved: z.int().meta({
      description: 'Units reserved for accepted orders (held until shipment, which is not part of this service yet)',
    }),
    available: z.int().meta({ description: 'onHand - reserved' }),
  })
  .meta({ id: 'Product' });
export type ProductView = z.infer<typeof productViewSchema>;

/** A row of the inventory ledger. Deltas are signed units. */
export const movementViewSchema = z
  .object({
    id: z.string().meta({ example: 'reserve:4b1c…:SKU-MUG' }),
    sku: z.string(),
    orderId: z.uuid().nullable(),
    reason: z.string().meta({ example: 'adjustment' }),
    onHandDelta: z.int(),
    reservedDelta: z.int(),
    onHandAfter: z.int().nullable().meta({ description: 'For an adjustment: the absolute on-hand value it set' }),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'InventoryMovement' });
export type MovementView = z.infer<typeof movementViewSchema>;
