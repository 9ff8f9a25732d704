/**
 * Problem types (RFC 9457) of returns: what asking for, receiving, withdrawing and retrying a return can refuse.
 * Registered with the API's other problem types (src/common/problem-details.ts), so the OpenAPI document describes
 * each with its extension members.
 */
import { z } from 'zod';
import {
  defineProblemTypes,
  PROBLEM_TYPE_BASE,
  problemTypeUris,
  validationErrorsSchema,
} from '../common/problem-details.js';
import { orderStatusSchema } from '../orders/order-response.dto.js';
import { returnStatusSchema } from './return.dto.js';

/** The problem types of returns, by name (`ReturnProblemTypes.OrderNotShipped.uri` is its `type`). */
export const ReturnProblemTypes = defineProblemTypes({
  OrderNotShipped: {
    uri: `${PROBLEM_TYPE_BASE}order-not-shipped`,
    title: 'Order has not shipped',
    statuses: [409],
    description:
      'A return was asked for an order that has not shipped (no hand-over to the carrier): nothing can come back yet. ' +
      'Cancel it instead while it can be cancelled. Nothing was stored.',
    extensions: { orderStatus: orderStatusSchema },
    example: { detail: 'Order 3f0c… has not shipped: nothing to return', orderStatus: 'pick_requested' },
  },
  ReturnWindowClosed: {
    uri: `${PROBLEM_TYPE_BASE}return-window-closed`,
    title: 'Return window closed',
    statuses: [409],
    description:
      'The order shipped more than `RETURN_WINDOW_DAYS` days ago (`windowDays`, from `shippedAt`, until ' +
      '`closedAt`): it can no longer be returned. Nothing was stored.',
    extensions: {
      shippedAt: z.iso.datetime().meta({ description: 'When the order was handed over to the carrier' }),
      windowDays: z.int().meta({ description: 'How many days after the shipment a return may be asked for' }),
      closedAt: z.iso.datetime().meta({ description: 'When the window closed' }),
    },
    example: {
      detail: 'Order 3f0c… shipped 2026-10-01T10:00:00.000Z: its 30-day return window closed 2026-10-31T10:00:00.000Z',
      shippedAt: '2026-10-01T10:00:00.000Z',
      windowDays: 30,
      closedAt: '2026-10-31T10:00:00.000Z',
    },
  },
  ReturnExceedsShipped: {
    uri: `${PROBLEM_TYPE_BASE}return-exceeds-shipped`,
    title: 'Return exceeds what shipped',
    statuses: [422],
    description:
      "A line names a SKU the order did not ship, or more units than shipped minus what the order's open returns " +
      '(not withdrawn or expired) already claim; `lines` says, per refused line, how many units can still be ' +
      'returned, and `errors` points at the lines. Nothing was stored.',
    extensions: {
      lines: z
        .array(
          z.object({
            sku: z.string(),
            requested: z.int(),
            shipped: z.int().meta({ description: 'Units of the SKU the order shipped' }),
            returnable: z.int().meta({ description: "Units not claimed by the order's open returns" }),
          }),
        )
        .meta({ description: 'The refused lines' }),
      errors: validationErrorsSchema,
    },
    example: {
      detail: 'TEE-BLK-M: 2 requested, 1 returnable (3 shipped, 2 in other returns)',
      lines: [{ sku: 'TEE-BLK-M', requested: 2, shipped: 3, returnable: 1 }],
      errors: [{ path: 'lines.0.quantity', message: '2 requested, 1 returnable (3 shipped, 2 in other returns)' }],
    },
  },
  ReturnNotAwaitingReceipt: {
    uri: `${PROBLEM_TYPE_BASE}return-not-awaiting-receipt`,
    title: 'Return does not wait for a receipt',
    statuses: [409],
    description:
      'A receipt for a return that does not wait for one: it was withdrawn or expired, or it ended; `returnStatus` is ' +
      'its status (a parcel that arrives before its label is recorded is taken). (A repeated receipt with the same `Idempotency-Key`, or any second ' +
      'receipt while the return runs, answers the first receipt instead.)',
    extensions: { returnStatus: returnStatusSchema },
    example: { detail: 'Return 5b0e… does not wait for a receipt: it is withdrawn', returnStatus: 'withdrawn' },
  },
  ReturnReceiptInvalid: {
    uri: `${PROBLEM_TYPE_BASE}return-receipt-invalid`,
    title: 'Receipt does not match the return',
    statuses: [422],
    description:
      'The receipt names a SKU that is not in the return, or more units than the return line has. Nothing was ' +
      'recorded: send the receipt again, corrected.',
    example: { detail: 'The receipt was refused: TEE-BLK-M: 3 received, the return has 2' },
  },
  ReturnNotWithdrawable: {
    uri: `${PROBLEM_TYPE_BASE}return-not-withdrawable`,
    title: 'Return cannot be withdrawn',
    statuses: [409],
    description:
      'A withdrawal of a return whose units were received already, or that ended (completed, expired); ' +
      '`returnStatus` is its status.',
    extensions: { returnStatus: returnStatusSchema },
    example: { detail: 'Return 5b0e… can no longer be withdrawn: it is received', returnStatus: 'received' },
  },
  ReturnNotAwaitingRetry: {
    uri: `${PROBLEM_TYPE_BASE}return-not-awaiting-retry`,
    title: 'Return is not awaiting a retry',
    statuses: [409],
    description:
      'An operator retry of a return that does not wait for one (it is not `attention_required`, or it ended); ' +
      '`returnStatus` is its status.',
    extensions: { returnStatus: returnStatusSchema },
    example: { detail: 'Return 5b0e… does not wait for a retry: it is label_created', returnStatus: 'label_created' },
  },
});

/** The URIs of {@link ReturnProblemTypes}. */
export const ReturnProblemType = problemTypeUris(ReturnProblemTypes);
export type ReturnProblemType = (typeof ReturnProblemType)[keyof typeof ReturnProblemType];
