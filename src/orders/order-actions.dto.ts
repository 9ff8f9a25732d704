/**
 * Request bodies and responses of the order actions: `POST /orders/:id/cancel` and `POST /orders/:id/retry`.
 * Validated by the global StandardSchemaValidationPipe (400
 * `validation-error` problems); unknown keys are rejected.
 */
import { z } from 'zod';
import { storableText } from './create-order.dto.js';
import { orderViewSchema, stepNameSchema } from './order-response.dto.js';

/** Limits of a cancel request. */
export const CANCEL_LIMITS = { maxReasonLength: 500 } as const;

/** `POST /orders/:id/cancel` body: `{ reason }`, 1..500 characters after trimming. */
export const cancelOrderSchema = z
  .strictObject({
    reason: storableText().trim().min(1).max(CANCEL_LIMITS.maxReasonLength).meta({
      description: 'Why the order is cancelled; stored as its failureReason',
      example: 'Customer changed mind',
    }),
  })
  .meta({ id: 'CancelOrderRequest', examples: [{ reason: 'Customer changed mind' }] });

/** A validated cancel body. */
export type CancelOrderRequest = z.output<typeof cancelOrderSchema>;

/**
 * `POST /orders/:id/retry` body: `{ step? }`. When `step` is given the retry happens only if that is the step the
 * order waits on. The body may be omitted.
 */
export const retryOrderSchema = z
  .strictObject({
    step: stepNameSchema.optional(),
  })
  .optional()
  .meta({ id: 'RetryOrderRequest', examples: [{}] });

/** A validated retry body (undefined when none was sent). */
export type RetryOrderRequest = z.output<typeof retryOrderSchema>;

/** `POST /orders/:id/retry` response (202): which step's retry started, and the order as stored right after. */
export const retryStartedViewSchema = z
  .object({
    orderId: z.uuid(),
    step: stepNameSchema,
    retry: z.int().meta({ description: 'The how-many-th operator retry of this step (1 for the first)' }),
    order: orderViewSchema,
  })
  .meta({ id: 'RetryStarted' });

/** The 202 body of `POST /orders/:id/retry`. */
export type RetryStartedView = z.infer<typeof retryStartedViewSchema>;
