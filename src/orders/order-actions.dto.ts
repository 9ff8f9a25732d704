/**
 * Request bodies and responses of the order actions: `POST /orders/:id/cancel`, `POST /orders/:id/retry`,
 * `POST /orders/:id/resolve` and `POST /orders/:id/close`.
 * Validated by the global StandardSchemaValidationPipe (400
 * `validation-error` problems); unknown keys are rejected.
 */
import { z } from 'zod';
import { Resolution } from '../../workflows/order-fulfilment.contract.js';
import { COMPENSATION_NAMES, STEP_NAMES } from './order-steps.js';
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

/** What the `order` of a retry's or a resolve's answer is (its status is the one stored when the answer was built). */
const ORDER_AFTER_ACTION =
  '`order`: the order as stored when the answer was built: right after the workflow took the action, before it moved on on ' +
  "its own (a retry's order is typically still `attention_required`); a repeat with the same Idempotency-Key gets " +
  'the same action with the order as stored then. GET /orders/:id for what it does next';

/** `POST /orders/:id/retry` response (202): which step's retry started, and the order as stored right after. */
export const retryStartedViewSchema = z
  .object({
    orderId: z.uuid(),
    step: stepNameSchema,
    retry: z.int().meta({ description: 'The how-many-th operator retry of this step (1 for the first)' }),
    order: orderViewSchema,
  })
  .meta({ id: 'RetryStarted', description: ORDER_AFTER_ACTION });

/** The 202 body of `POST /orders/:id/retry`. */
export type RetryStartedView = z.infer<typeof retryStartedViewSchema>;

/** Limits of the operator's resolve and close requests. */
export const RESOLUTION_LIMITS = { maxReasonLength: 1000, maxProviderIdLength: 200 } as const;

/** What an order may wait on: a registered step's or compensation's activity name. */
export const waitingStepSchema = z
  .enum([...STEP_NAMES, ...COMPENSATION_NAMES] as [string, ...string[]])
  .meta({ id: 'WaitingStepName', description: 'A step’s or a compensation’s activity name (see `GET /steps`)' });

/** The resolutions an operator may record. */
export const resolutionSchema = z
  .enum([Resolution.Performed, Resolution.NotPerformed])
  .meta({ id: 'Resolution', description: '`performed` (the effect happened, or was done by hand) or `not_performed`' });

/** Why the operator decides so: stored with the decision (who, why, when). */
const resolutionReason = () => storableText().trim().min(1).max(RESOLUTION_LIMITS.maxReasonLength);

/**
 * `POST /orders/:id/resolve` body: `{ step, outcome, reason, providerId? }`: the operator's decision on what the order
 * waits on (a step whose outcome is unknown, a refused step after the pivot, a compensation that failed for good).
 */
export const resolveOrderSchema = z
  .strictObject({
    step: waitingStepSchema.meta({
      description: 'The step (or compensation) the order waits on; the decision applies only there',
      example: 'sendOrderConfirmation',
    }),
    outcome: resolutionSchema.meta({
      description:
        '`performed`: the provider did act (or it was done by hand); `not_performed`: it did not. The order offers ' +
        'the resolutions that fit its wait (`resolutions` of the 409 when it does not)',
      example: Resolution.NotPerformed,
    }),
    reason: resolutionReason().meta({
      description: 'Why (stored with who and when)',
      example: 'The provider has no message under this key (support ticket 4711)',
    }),
    providerId: storableText()
      .trim()
      .min(1)
      .max(RESOLUTION_LIMITS.maxProviderIdLength)
      .optional()
      .meta({ description: 'For `performed`: the reference of the effect (e.g. the id the provider shows)' }),
  })
  .meta({
    id: 'ResolveOrderRequest',
    examples: [
      {
        step: 'sendOrderConfirmation',
        outcome: 'not_performed',
        reason: 'The provider has no message under this key (support ticket 4711)',
      },
    ],
  });

/** A validated resolve body. */
export type ResolveOrderRequest = z.output<typeof resolveOrderSchema>;

/** `POST /orders/:id/resolve` response (200): the decision as recorded, and the order as stored right after. */
export const resolvedViewSchema = z
  .object({
    orderId: z.uuid(),
    step: waitingStepSchema,
    outcome: resolutionSchema,
    by: z.string().meta({ description: 'Who decided: the API client of the operator key' }),
    order: orderViewSchema,
  })
  .meta({ id: 'Resolved', description: ORDER_AFTER_ACTION });

/** The 200 body of `POST /orders/:id/resolve`. */
export type ResolvedView = z.infer<typeof resolvedViewSchema>;

/** `POST /orders/:id/close` body: `{ reason }`. */
export const closeOrderSchema = z
  .strictObject({
    reason: resolutionReason().meta({
      description: 'Why the order is closed (stored with who and when)',
      example: 'The carrier cannot deliver to this address; the customer was refunded by hand',
    }),
  })
  .meta({
    id: 'CloseOrderRequest',
    examples: [{ reason: 'The carrier cannot deliver to this address; the customer was refunded by hand' }],
  });

/** A validated close body. */
export type CloseOrderRequest = z.output<typeof closeOrderSchema>;

/** `POST /orders/:id/packed` body (optional): what the warehouse says of the parcel(s). Unknown keys are refused. */
export const reportPackedSchema = z
  .strictObject({
    parcels: z.int().min(1).max(100).optional().meta({ description: 'How many parcels', example: 1 }),
    note: storableText().trim().min(1).max(500).optional().meta({ description: 'A note from the warehouse' }),
  })
  .optional()
  .meta({ id: 'ReportPackedRequest', examples: [{ parcels: 1 }] });

/** A validated packed report (undefined when none was sent). */
export type ReportPackedRequest = z.output<typeof reportPackedSchema>;

/** `POST /orders/:id/packed` response (200): the first report the order received, and the order. */
export const packedViewSchema = z
  .object({
    orderId: z.uuid(),
    event: z.literal('packed'),
    reportId: z
      .string()
      .meta({ description: "The first report's id (its Update id); a later report answers the same" }),
    receivedAt: z.iso.datetime({ offset: true }).meta({ description: 'When the order received the first report' }),
    by: z.string().meta({ description: 'The API client that sent the first report' }),
    order: orderViewSchema,
  })
  .meta({ id: 'PackedReport', description: ORDER_AFTER_ACTION });

/** The 200 body of `POST /orders/:id/packed`. */
export type PackedView = z.infer<typeof packedViewSchema>;
