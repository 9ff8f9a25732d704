/**
 * Request body of `POST /orders`, validated by the global StandardSchemaValidationPipe.
 * Unknown keys are rejected at every level; SKUs must be unique within an order.
 */
import { z } from 'zod';

/** Limits of an order, shared by the schema and its documentation. */
export const ORDER_LIMITS = {
  maxLines: 50,
  maxQuantity: 1000,
  maxSkuLength: 64,
  maxEmailLength: 254,
  maxNameLength: 200,
} as const;

/**
 * Text PostgreSQL can store: well-formed Unicode (no lone UTF-16 surrogates) without NUL characters.
 * Without this check such input would reach the database and fail there with a 500.
 */
export const storableText = () =>
  z.string().refine((s) => (s as string & { isWellFormed(): boolean }).isWellFormed() && !s.includes('\u0000'), {
    message: 'must be well-formed Unicode text without NUL characters',
  });

/** One order line: a product and how many units of it. */
export const createOrderLineSchema = z.strictObject({
  sku: storableText().min(1).max(ORDER_LIMITS.maxSkuLength).meta({ description: 'Product SKU', example: 'SKU-MUG' }),
  quantity: z
    .int()
    .min(1)
    .max(ORDER_LIMITS.maxQuantity)
    .meta({ description: 'Units ordered (whole number)', example: 2 }),
});

/** A payment-method token of the payments provider (`pm_…`): the only card data this service takes. */
export const PAYMENT_METHOD = /^pm_[A-Za-z0-9_]{1,64}$/;

/**
 * How the order is paid by card: the payment-method token. Any string is accepted here, so that a malformed token is
 * answered 422 `payment-method-invalid` (not a generic 400) by the service before anything is stored.
 */
export const orderPaymentSchema = z
  .strictObject({
    method: z
      .string()
      .max(1000)
      .meta({
        description:
          'Payment-method token of the payments provider, `^pm_[A-Za-z0-9_]{1,64}$` (a malformed one is answered ' +
          '422 `payment-method-invalid`); never a card number. Stored for the order only, never returned.',
        example: 'pm_card_ok',
      }),
  })
  .meta({ id: 'OrderPayment' });

/** The `POST /orders` body: `{ customer: { email, name? }, lines: [{ sku, quantity }], payment?: { method } }`. */
export const createOrderSchema = z
  .strictObject({
    customer: z.strictObject({
      email: z.email().max(ORDER_LIMITS.maxEmailLength).meta({ example: 'ada@example.com' }),
      name: storableText().trim().min(1).max(ORDER_LIMITS.maxNameLength).optional().meta({ example: 'Ada Lovelace' }),
    }),
    lines: z
      .array(createOrderLineSchema)
      .min(1)
      .max(ORDER_LIMITS.maxLines)
      .meta({ description: `1 to ${ORDER_LIMITS.maxLines} lines, each SKU at most once` }),
    payment: orderPaymentSchema.optional().meta({
      description:
        'Pay by card: the order authorizes its total first and captures it at the hand-over to the carrier. ' +
        'Without it the order is paid on account (invoice terms).',
    }),
  })
  .superRefine((order, ctx) => {
    const seen = new Set<string>();
    order.lines.forEach((line, index) => {
      if (seen.has(line.sku)) {
        ctx.addIssue({
          code: 'custom',
          path: ['lines', index, 'sku'],
          message: `Duplicate SKU "${line.sku}": each SKU may appear on one line only`,
        });
      }
      seen.add(line.sku);
    });
  })
  .meta({
    id: 'CreateOrderRequest',
    examples: [
      { customer: { email: 'ada@example.com', name: 'Ada Lovelace' }, lines: [{ sku: 'TEE-BLK-M', quantity: 2 }] },
    ],
  });

/** A validated `POST /orders` body. */
export type CreateOrderRequest = z.output<typeof createOrderSchema>;
