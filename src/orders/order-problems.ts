/**
 * Problem types (RFC 9457) of orders: what placing, cancelling, retrying, resolving and closing an order can refuse. Registered with the
 * API's other problem types (src/common/problem-details.ts), so the OpenAPI document describes each with its
 * extension members.
 */
import { z } from 'zod';
import {
  defineProblemTypes,
  PROBLEM_TYPE_BASE,
  problemTypeUris,
  validationErrorsSchema,
} from '../common/problem-details.js';
import { orderStatusSchema, stepNameSchema } from './order-response.dto.js';

/** The problem types of orders, by name (`OrderProblemTypes.OrderNotCancellable.uri` is its `type`). */
export const OrderProblemTypes = defineProblemTypes({
  UnknownSku: {
    uri: `${PROBLEM_TYPE_BASE}unknown-sku`,
    title: 'Unknown SKU',
    statuses: [400],
    description: 'The order names SKUs that are not in the catalogue (`skus`; `errors` points at their lines).',
    extensions: {
      skus: z.array(z.string()).meta({ description: 'The SKUs that are not in the catalogue' }),
      errors: validationErrorsSchema,
    },
    example: {
      detail: 'These SKUs are not in the catalogue: NOPE-1',
      skus: ['NOPE-1'],
      errors: [{ path: 'lines.0.sku', message: 'Unknown SKU "NOPE-1"' }],
    },
  },
  CurrencyMismatch: {
    uri: `${PROBLEM_TYPE_BASE}currency-mismatch`,
    title: 'Products in different currencies',
    statuses: [400],
    description: 'The products of one order are priced in different currencies; `errors` names each line’s currency.',
    extensions: { errors: validationErrorsSchema },
    example: {
      detail: 'An order is priced in one currency; these lines use EUR, USD',
      errors: [{ path: 'lines.1.sku', message: '"MUG-US" is priced in USD' }],
    },
  },
  TotalTooLarge: {
    uri: `${PROBLEM_TYPE_BASE}total-too-large`,
    title: 'Order total too large',
    statuses: [400],
    description: 'The order total does not fit the stored integer range.',
    example: { detail: 'The order total 3000000000 (minor units) exceeds 2147483647' },
  },
  PaymentMethodInvalid: {
    uri: `${PROBLEM_TYPE_BASE}payment-method-invalid`,
    title: 'Payment method is not valid',
    statuses: [422],
    description:
      '`payment.method` is not a payment-method token of the payments provider (`^pm_[A-Za-z0-9_]{1,64}$`). ' +
      'Nothing was stored: send a token from the payments provider (never a card number).',
    extensions: { errors: validationErrorsSchema },
    example: {
      detail: 'payment.method is not a payment-method token (pm_…)',
      errors: [{ path: 'payment.method', message: 'Expected a payment-method token matching ^pm_[A-Za-z0-9_]{1,64}$' }],
    },
  },
  OrderNotAwaitingRetry: {
    uri: `${PROBLEM_TYPE_BASE}order-not-awaiting-retry`,
    title: 'Order is not awaiting a retry',
    statuses: [409],
    description:
      'An operator retry was asked for an order whose workflow does not wait for one, or waits on another step than ' +
      'the one named (`waitingFor`).',
    extensions: {
      orderStatus: orderStatusSchema,
      waitingFor: stepNameSchema.nullable().meta({ description: 'The step the order waits on, or null' }),
    },
    example: {
      detail: 'Order 3f0c… is completed, not waiting for a retry',
      orderStatus: 'completed',
      waitingFor: null,
    },
  },
  OrderNotAwaitingResolution: {
    uri: `${PROBLEM_TYPE_BASE}order-not-awaiting-resolution`,
    title: 'Order is not awaiting this decision',
    statuses: [409],
    description:
      "An operator's resolve or close the order cannot take: it waits for no operator, waits on another step " +
      '(`waitingFor`), or its wait does not offer that resolution (`resolutions`) or a close (`closable`). Nothing ' +
      'changed.',
    extensions: {
      orderStatus: orderStatusSchema,
      waitingFor: z.string().nullable().meta({ description: 'The step or compensation the order waits on, or null' }),
      resolutions: z
        .array(z.enum(['performed', 'not_performed']))
        .meta({ description: 'What a resolve may say about the waiting step' }),
      closable: z.boolean().meta({ description: 'Whether the order may be closed now' }),
    },
    example: {
      detail: 'Order 3f0c… cannot take this resolve: it waits on sendOrderConfirmation',
      orderStatus: 'attention_required',
      waitingFor: 'sendOrderConfirmation',
      resolutions: ['performed', 'not_performed'],
      closable: false,
    },
  },
  OrderNotAwaitingPacking: {
    uri: `${PROBLEM_TYPE_BASE}order-not-awaiting-packing`,
    title: 'Order does not wait for packing',
    statuses: [409],
    description:
      'A packed report for an order that does not wait for one: its plan has no packing step (placed before the ' +
      'warehouse wait existed), it is final, or it is being cancelled; `orderStatus` is its status.',
    extensions: { orderStatus: orderStatusSchema },
    example: {
      detail: 'Order 3f0c… does not wait for packing: the order is already cancelled',
      orderStatus: 'cancelled',
    },
  },
  OrderNotCancellable: {
    uri: `${PROBLEM_TYPE_BASE}order-not-cancellable`,
    title: 'Order cannot be cancelled',
    statuses: [409],
    description:
      'A cancel the order cannot honour: it has shipped (the hand-over to the carrier, the point of no return), it is final ' +
      '(completed or failed), it waits for an operator, or its workflow has closed; `orderStatus` is its status.',
    extensions: { orderStatus: orderStatusSchema },
    example: {
      detail:
        'Order 3f0c… cannot be cancelled: it has shipped (the carrier accepted the parcel: the point of no return)',
      orderStatus: 'shipped',
    },
  },
});

/** The URIs of {@link OrderProblemTypes}. */
export const OrderProblemType = problemTypeUris(OrderProblemTypes);
export type OrderProblemType = (typeof OrderProblemType)[keyof typeof OrderProblemType];
