/**
 * Request bodies, path parameters and responses of the returns API (issue 24): `POST /orders/:id/returns`,
 * `GET /returns/:id`, `GET /orders/:id/returns`, `POST /returns/:id/received`, `POST /returns/:id/withdraw` and
 * `POST /returns/:id/retry`. Validated by the global StandardSchemaValidationPipe (400 `validation-error`); unknown
 * keys are refused. Money is integer minor units, times ISO 8601 strings (UTC).
 */
import { z } from 'zod';
import { ReturnStatus } from '../../workflows/order-return.contract.js';
import { ORDER_LIMITS, storableText } from '../orders/create-order.dto.js';

/** Limits of a return request, shared by the schemas and their documentation. */
export const RETURN_LIMITS = {
  maxLines: 50,
  maxQuantity: 1000,
  maxReasonTextLength: 1000,
  maxRetryReasonLength: 500,
} as const;

/** Why a customer returns units (`returns.reason_code`). */
export const RETURN_REASON_CODES = ['wrong_size', 'damaged', 'not_as_described', 'changed_mind', 'other'] as const;
export type ReturnReasonCode = (typeof RETURN_REASON_CODES)[number];

/** A return's status (`returns.status`, written by its workflow). */
export const returnStatusSchema = z.enum(Object.values(ReturnStatus) as [ReturnStatus, ...ReturnStatus[]]).meta({
  id: 'ReturnStatus',
  description:
    '`requested` → `label_created` (waits for the parcel) → `received` → `refunded` → `completed`; or `withdrawn` ' +
    '(by the customer before receipt), `expired` (nothing received in time), both final with nothing refunded; ' +
    '`attention_required` while a provider step waits for an operator',
});

/** `returns/:id` path params: the id must be a UUID. */
export const returnIdParamsSchema = z.object({ id: z.uuid().meta({ description: 'Return id (UUID)' }) });

/** Adds a 400 issue for each SKU named on more than one line. */
function uniqueSkus(lines: ReadonlyArray<{ sku: string }>, ctx: z.RefinementCtx): void {
  const seen = new Set<string>();
  lines.forEach((line, index) => {
    if (seen.has(line.sku)) {
      ctx.addIssue({
        code: 'custom',
        path: ['lines', index, 'sku'],
        message: `Duplicate SKU "${line.sku}": each SKU may appear on one line only`,
      });
    }
    seen.add(line.sku);
  });
}

const skuSchema = () =>
  storableText().min(1).max(ORDER_LIMITS.maxSkuLength).meta({ description: 'Product SKU', example: 'TEE-BLK-M' });

/** `POST /orders/:id/returns` body: `{ lines: [{ sku, quantity }], reason: { code, text? } }`. */
export const createReturnSchema = z
  .strictObject({
    lines: z
      .array(
        z.strictObject({
          sku: skuSchema(),
          quantity: z
            .int()
            .min(1)
            .max(RETURN_LIMITS.maxQuantity)
            .meta({ description: 'Units to return (at most what shipped and is not claimed by open returns)' }),
        }),
      )
      .min(1)
      .max(RETURN_LIMITS.maxLines)
      .meta({ description: `1 to ${RETURN_LIMITS.maxLines} lines, each SKU at most once` }),
    reason: z.strictObject({
      code: z.enum(RETURN_REASON_CODES).meta({ description: 'Why the units come back', example: 'wrong_size' }),
      text: storableText()
        .trim()
        .min(1)
        .max(RETURN_LIMITS.maxReasonTextLength)
        .optional()
        .meta({ description: "The customer's words, optional", example: 'Too small, I need an L' }),
    }),
  })
  .superRefine((body, ctx) => uniqueSkus(body.lines, ctx))
  .meta({
    id: 'CreateReturnRequest',
    examples: [{ lines: [{ sku: 'TEE-BLK-M', quantity: 1 }], reason: { code: 'wrong_size', text: 'Too small' } }],
  });

/** A validated `POST /orders/:id/returns` body. */
export type CreateReturnRequest = z.output<typeof createReturnSchema>;

/** `POST /returns/:id/received` body: `{ lines: [{ sku, quantity, damaged }] }` (lines not named: none received). */
export const receiveReturnSchema = z
  .strictObject({
    lines: z
      .array(
        z.strictObject({
          sku: skuSchema(),
          quantity: z
            .int()
            .min(0)
            .max(RETURN_LIMITS.maxQuantity)
            .meta({ description: 'Units that arrived (at most the return line’s quantity)' }),
          damaged: z
            .int()
            .min(0)
            .max(RETURN_LIMITS.maxQuantity)
            .meta({
              description:
                'How many of them arrived damaged (0 ≤ damaged ≤ quantity): not restocked, refunded at ' +
                '`RETURN_DAMAGED_REFUND_PERCENT` of their price',
            }),
        }),
      )
      .min(1)
      .max(RETURN_LIMITS.maxLines)
      .meta({ description: 'What arrived, one line per SKU of the return' }),
  })
  .superRefine((body, ctx) => {
    uniqueSkus(body.lines, ctx);
    body.lines.forEach((line, index) => {
      if (line.damaged > line.quantity) {
        ctx.addIssue({
          code: 'custom',
          path: ['lines', index, 'damaged'],
          message: `${line.damaged} damaged of ${line.quantity} received: damaged must not exceed quantity`,
        });
      }
    });
  })
  .meta({ id: 'ReceiveReturnRequest', examples: [{ lines: [{ sku: 'TEE-BLK-M', quantity: 2, damaged: 1 }] }] });

/** A validated `POST /returns/:id/received` body. */
export type ReceiveReturnRequest = z.output<typeof receiveReturnSchema>;

/** `POST /returns/:id/withdraw` body: optional, `{}`. */
export const withdrawReturnSchema = z
  .strictObject({})
  .optional()
  .meta({ id: 'WithdrawReturnRequest', examples: [{}] });

/** A validated withdraw body (undefined when none was sent). */
export type WithdrawReturnRequest = z.output<typeof withdrawReturnSchema>;

/** `POST /returns/:id/retry` body: optional `{ reason? }` (stored in the workflow's history with who asked). */
export const retryReturnSchema = z
  .strictObject({
    reason: storableText()
      .trim()
      .min(1)
      .max(RETURN_LIMITS.maxRetryReasonLength)
      .optional()
      .meta({ description: 'Why the step can be retried now', example: 'The payments provider is back' }),
  })
  .optional()
  .meta({ id: 'RetryReturnRequest', examples: [{ reason: 'The payments provider is back' }] });

/** A validated retry body (undefined when none was sent). */
export type RetryReturnRequest = z.output<typeof retryReturnSchema>;

/** A line of a return as shown. */
export const returnLineViewSchema = z
  .object({
    sku: z.string(),
    quantity: z.int().meta({ description: 'Units the return covers' }),
    unitPriceMinor: z.int().meta({ description: "The order line's unit price, minor units" }),
    receivedQuantity: z.int().nullable().meta({ description: 'Units received; null before the receipt' }),
    damagedQuantity: z.int().nullable().meta({ description: 'Of those, damaged; null before the receipt' }),
  })
  .meta({ id: 'ReturnLine' });

/** A return as `GET /returns/:id` shows it. */
export const returnViewSchema = z
  .object({
    id: z.uuid(),
    orderId: z.uuid(),
    rmaNumber: z.string().meta({ description: 'The return merchandise authorisation number', example: 'RMA-000042' }),
    status: returnStatusSchema,
    reason: z.object({
      code: z.enum(RETURN_REASON_CODES),
      text: z.string().nullable(),
    }),
    lines: z.array(returnLineViewSchema),
    label: z
      .object({
        url: z.string().meta({
          description: "The carrier's prepaid return label",
          example: 'https://carrier.example/labels/rl_1.pdf',
        }),
        trackingNumber: z.string().nullable(),
      })
      .nullable()
      .meta({ description: 'null until the carrier made the label' }),
    refund: z
      .object({
        amountMinor: z.int().meta({ description: 'Refunded and credited, minor units (fixed at the receipt)' }),
        currency: z.string().meta({ example: 'EUR' }),
        refundId: z.string().nullable().meta({ description: "The payments provider's refund id (card orders)" }),
        refundedAt: z.iso.datetime().nullable(),
        creditNoteId: z.string().nullable().meta({ description: "The accounting system's credit note id" }),
        creditedAt: z.iso.datetime().nullable(),
      })
      .nullable()
      .meta({ description: 'null until the units were received (the amount is fixed then)' }),
    attentionReason: z.string().nullable().meta({
      description: 'Why the return waits for an operator (`attention_required`); shown to operator keys only',
    }),
    createdAt: z.iso.datetime(),
    receivedAt: z.iso.datetime().nullable(),
    endedAt: z.iso.datetime().nullable().meta({ description: 'When it became final (completed, withdrawn, expired)' }),
  })
  .meta({ id: 'Return' });

/** A return as shown. */
export type ReturnView = z.infer<typeof returnViewSchema>;

/** `GET /orders/:id/returns`: the order's returns, newest first (at most 100). */
export const returnListViewSchema = z.object({ items: z.array(returnViewSchema) }).meta({ id: 'ReturnList' });
export type ReturnListView = z.infer<typeof returnListViewSchema>;

/** The receipt a return holds (the `receive` Update's answer: the first receipt; a repeat answers the same). */
export const returnReceiptViewSchema = z
  .object({
    returnId: z.uuid(),
    receiptId: z.string().meta({ description: "The receipt's id (its Update id)" }),
    lines: z.array(z.object({ sku: z.string(), quantity: z.int(), damaged: z.int() })),
    by: z.string().meta({ description: 'The API client that reported the receipt' }),
    receivedAt: z.iso.datetime().meta({ description: 'When the return took the receipt' }),
  })
  .meta({ id: 'ReturnReceipt' });

/** `POST /returns/:id/received` response (200). */
export const returnReceivedViewSchema = z
  .object({
    receipt: returnReceiptViewSchema,
    return: returnViewSchema.meta({
      description:
        'The return as stored right after it took the receipt (the restock and the refund follow on their own: ' +
        'GET /returns/:id)',
    }),
  })
  .meta({ id: 'ReturnReceived' });
export type ReturnReceivedView = z.infer<typeof returnReceivedViewSchema>;

/** `POST /returns/:id/retry` response (202). */
export const returnRetryStartedViewSchema = z
  .object({
    returnId: z.uuid(),
    step: z.string().meta({ description: 'The step retried', example: 'refundReturn' }),
  })
  .meta({ id: 'ReturnRetryStarted' });
export type ReturnRetryStartedView = z.infer<typeof returnRetryStartedViewSchema>;
