/**
 * Response representations of orders. Money is integer minor currency units (e.g. cents) with an ISO 4217
 * `currency`; times are ISO 8601 strings (UTC). The zod schemas document the responses in OpenAPI.
 */
import { z } from 'zod';
import { ORDER_STATUSES, STEP_NAMES } from './order-steps.js';
import { FailureCode } from './public-failure.js';
import { StepPhase } from '../../workflows/order-plan.js';

/** An order's status: `received`, each registered step's, and the lifecycle's (from the step registry). */
export const orderStatusSchema = z.enum(ORDER_STATUSES as [string, ...string[]]).meta({
  id: 'OrderStatus',
  description:
    '`received`, a step’s status (see `GET /steps`), `completed`, `attention_required`, `failed` or `cancelled`',
});

/** A registered step's activity name (from the step registry). */
export const stepNameSchema = z.enum(STEP_NAMES as [string, ...string[]]).meta({
  id: 'StepName',
  description: 'A step’s activity name (see `GET /steps`)',
});

/** Where a step stands relative to the point of no return (the pivot). */
export const stepPhaseSchema = z
  .enum(Object.values(StepPhase) as [StepPhase, ...StepPhase[]])
  .meta({ id: 'StepPhase', description: 'Before the point of no return (the pivot), the pivot, or after it' });

/**
 * Why an order failed, was cancelled or waits: a stable code and a message safe for any caller
 * (src/orders/public-failure.ts). The internal detail stays in the logs and the workflow.
 */
export const orderFailureViewSchema = z
  .object({
    code: z.enum(Object.values(FailureCode) as [FailureCode, ...FailureCode[]]).meta({ example: 'insufficient_stock' }),
    message: z
      .string()
      .meta({ example: 'Not enough stock for CAP-RED (requested 4, available 3). Nothing was reserved.' }),
  })
  .meta({ id: 'OrderFailure' });

export const orderLineViewSchema = z.object({
  lineNo: z.int().meta({ description: '1-based position in the order' }),
  sku: z.string(),
  quantity: z.int(),
  unitPriceMinor: z.int().meta({ description: 'Unit price at order time, minor units' }),
});

/** One step of an order's plan and where it stands (src/orders/order-steps.ts). */
export const orderStepViewSchema = z
  .object({
    name: z.string().meta({ description: 'The step’s activity name', example: 'shipOrder' }),
    label: z.string().meta({ example: 'Shipped' }),
    status: orderStatusSchema,
    phase: stepPhaseSchema,
    state: z.enum(['done', 'current', 'pending', 'waiting', 'undone', 'skipped']).meta({
      description:
        '`done` acted; `current` runs now or next; `pending` not yet; `waiting` waits for an operator retry; ' +
        '`undone` acted and was compensated; `skipped` never ran',
    }),
  })
  .meta({ id: 'OrderStep' });

/**
 * A card order's payment at the payments provider (never the payment-method token). Amounts in minor units of
 * `currency`. `pending` until the authorization is answered.
 */
export const orderPaymentViewSchema = z
  .object({
    status: z.enum(['pending', 'authorized', 'captured', 'voided', 'declined']).meta({
      description:
        '`pending` (not authorized yet), `authorized` (held), `captured` (charged at the hand-over), `voided` (the ' +
        'hold released: cancelled or failed) or `declined`',
    }),
    currency: z.string().meta({ example: 'EUR' }),
    authorizedMinor: z.int().meta({ description: 'The amount authorized (held); 0 unless authorized' }),
    capturedMinor: z.int().meta({ description: 'The amount captured' }),
    voidedMinor: z.int().meta({ description: 'The amount whose hold was released' }),
    refundedMinor: z.int().meta({ description: 'The amount refunded by the order’s returns (at most the captured)' }),
    captureBefore: z.iso.datetime().nullable().meta({ description: 'When the authorization expires, if held' }),
    declineCode: z
      .string()
      .nullable()
      .meta({ description: 'The provider’s decline code of a declined payment', example: 'insufficient_funds' }),
  })
  .meta({ id: 'OrderPaymentView' });

const orderSummaryShape = {
  id: z.uuid(),
  clientId: z.string().meta({ description: 'The API client that placed the order (owner)', example: 'shop-a' }),
  status: orderStatusSchema,
  failure: orderFailureViewSchema.nullable().meta({
    description: 'Set for `failed`, `cancelled` and `attention_required` orders; null otherwise',
  }),
  customer: z.object({ email: z.string(), name: z.string().nullable() }),
  currency: z.string().meta({ description: 'ISO 4217 code', example: 'EUR' }),
  totalMinor: z.int().meta({ description: 'Sum of quantity × unitPriceMinor, minor units' }),
  invoiceNumber: z.string().nullable().meta({ example: 'INV-000042' }),
  accountingId: z.string().nullable(),
  workflowId: z.string().meta({ example: 'order-4b1c…' }),
  temporalUiUrl: z.string().meta({ description: 'Link to the workflow in the Temporal Web UI' }),
  workflowStartedAt: z.iso.datetime().nullable().meta({ description: 'null until the workflow is started' }),
  createdAt: z.iso.datetime(),
  updatedAt: z.iso.datetime(),
  completedAt: z.iso.datetime().nullable(),
  steps: z.array(orderStepViewSchema).meta({ description: 'The order’s plan, step by step, and where each stands' }),
  cancellable: z.boolean().meta({
    description: 'True while a cancel can still be honoured (before the point of no return, not waiting, not final)',
  }),
  payment: orderPaymentViewSchema
    .nullable()
    .meta({ description: 'The card payment; null for an order paid on account (no `payment` when placed)' }),
};

/** An order in lists (no lines; its payment, never the token). */
export const orderSummaryViewSchema = z.object(orderSummaryShape).meta({ id: 'OrderSummary' });

/** An order's returns in its view: each return's id, RMA number and status, and what they gave back. */
export const orderReturnsViewSchema = z
  .object({
    refundedMinor: z.int().meta({
      description:
        'What the order’s returns gave back (refunded to the card, or credited for an order on account), minor units',
    }),
    items: z
      .array(
        z.object({
          id: z.uuid(),
          rmaNumber: z.string().meta({ example: 'RMA-000042' }),
          status: z.string().meta({ example: 'completed' }),
          createdAt: z.iso.datetime(),
        }),
      )
      .meta({ description: 'Newest first; GET /orders/{id}/returns gives each in full' }),
  })
  .meta({ id: 'OrderReturns' });

/** An order with its lines (`GET /orders/:id`, `POST /orders`). */
export const orderViewSchema = z
  .object({
    ...orderSummaryShape,
    lines: z.array(orderLineViewSchema),
    returns: orderReturnsViewSchema,
  })
  .meta({ id: 'Order' });
/** A page of `GET /orders`: `nextCursor` is null on the last page. */
export const orderPageViewSchema = z
  .object({ items: z.array(orderSummaryViewSchema), nextCursor: z.string().nullable() })
  .meta({ id: 'OrderPage' });

export type OrderLineView = z.infer<typeof orderLineViewSchema>;
export type OrderSummaryView = z.infer<typeof orderSummaryViewSchema>;
export type OrderView = z.infer<typeof orderViewSchema>;
export type OrderPaymentView = z.infer<typeof orderPaymentViewSchema>;
export type OrderPageView = z.infer<typeof orderPageViewSchema>;
