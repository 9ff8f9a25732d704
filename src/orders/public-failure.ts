/**
 * The public side of an order's failure: a stable `{ code, message }` for any caller, derived from the internal
 * `orders.failure_reason` (which keeps the workflow's full text: error types, provider answers, driver messages
 * with hosts and source paths; it stays in the database, the logs and the workflow history).
 *
 * The reason formats come from the workflow (`describeFailure`: `<ErrorType>: <message>`, compensation failures
 * appended as ` (voidInvoice failed: …)`, cancels as `cancelled: <reason>`, post-pivot waits) and the sweeper
 * (`workflow <id> closed (…) while the order was …`). Only the customer's own data is ever echoed: the SKUs and
 * quantities of an insufficient-stock failure (their order), and the reason given to `POST /orders/:id/cancel`.
 * Anything not recognised maps to a generic code, never to its text.
 */
import { ErrorType } from '../../workflows/errors.js';
import { OrderStatus } from '../../workflows/order-fulfilment.contract.js';
import { STEP_CATALOGUE } from '../../activities/catalogue/index.js';

/** Public failure codes (stable: clients may switch on them). */
export const FailureCode = {
  /** Some lines asked for more than was available; nothing was reserved. */
  InsufficientStock: 'insufficient_stock',
  /** The payment was declined (the card's decline code in the message); nothing was reserved, invoiced or emailed. */
  PaymentDeclined: 'payment_declined',
  /** The card's authorization expired (or was about to) before the order shipped; nothing shipped, compensated. */
  PaymentExpired: 'payment_expired',
  /** Cancelled before the order shipped (through the API or by an operator); compensated. */
  Cancelled: 'cancelled',
  /** A service the order depends on (a provider of providers/index.ts) refused or failed for good; compensated. */
  ProviderFailed: 'provider_failed',
  /** An internal error stopped the order; compensated. */
  InternalError: 'internal_error',
  /** The order waits for our staff (a step failed after it shipped, or an outcome is unknown); it continues after them. */
  NeedsAttention: 'needs_attention',
  /** Our staff closed the order after it shipped, before it was complete; nothing more happens to it. */
  Closed: 'closed',
} as const;
export type FailureCode = (typeof FailureCode)[keyof typeof FailureCode];

/** What `failure` shows: a code and a short message safe for any caller. */
export interface PublicFailure {
  code: FailureCode;
  message: string;
}

/** What failed for good before anything was reserved, invoiced or emailed (a business refusal of the first step). */
const NOTHING_DONE = 'Nothing was reserved, invoiced or charged.';

/** What a refusal before the hand-over adds: compensated, and no card charged. */
const NOTHING_SHIPPED = 'Nothing was shipped or charged; reserved stock was released and any invoice voided.';

/** What every compensated failure adds: the customer is not left with a reservation or an invoice. */
const COMPENSATED = 'Nothing was shipped; reserved stock was released and any invoice voided.';

const MESSAGES: Readonly<
  Record<Exclude<FailureCode, 'insufficient_stock' | 'cancelled' | 'payment_declined' | 'payment_expired'>, string>
> = {
  closed: 'Our staff closed the order before it was complete; nothing more will happen to it.',
  provider_failed: `The order could not be fulfilled because a partner service failed. ${COMPENSATED}`,
  internal_error: `The order could not be fulfilled because of an internal error. ${COMPENSATED}`,
  needs_attention:
    'The order is delayed: a step needs attention from our staff. It continues once they have resolved it.',
};

/** The sweeper's reason for an order whose workflow closed under it (src/orders/workflow/: `sweptReason`). */
const SWEPT = /^workflow \S+ closed \(/;

/** What an order the sweeper flagged says: its processing stopped, and staff resume it (a workflow reset). */
const STOPPED_MESSAGE =
  'The order is delayed: its processing stopped and needs our staff to resume it. It continues from where it ' +
  'stopped once they have.';

/** Provider failure types (workflows/errors.ts) and the activity timeout, as `describeFailure` writes them. */
const PROVIDER_TYPES: readonly string[] = [
  ErrorType.ProviderRejected,
  ErrorType.Unauthorized,
  ErrorType.ProviderUnavailable,
  'TimeoutFailure',
];

/**
 * ` (voidInvoice failed: …; releaseInventory failed: …)` as the workflow appends it to a compensated reason, for the
 * compensations of the step registry.
 */
const COMPENSATION_SUFFIX = new RegExp(
  ` \\((?:${STEP_CATALOGUE.flatMap((s) => (s.compensation ? [s.compensation.name] : [])).join('|') || '(?!)'}) failed: [\\s\\S]*\\)$`,
);

/** `CAP-RED: requested 4, available 3` items of the insufficient-stock message. */
const SHORTAGE = /(.+?): requested (\d+), available (-?\d+)/;

/**
 * The public failure of an order in `status` with the stored `failureReason`.
 * @returns null for an order that has not failed, is not cancelled and does not wait for attention.
 */
export function publicFailure(status: string, failureReason: string | null): PublicFailure | null {
  const reason = (failureReason ?? '').replace(COMPENSATION_SUFFIX, '');
  switch (status) {
    case OrderStatus.Cancelled: {
      const given = reason.startsWith('cancelled: ') ? reason.slice('cancelled: '.length).trim() : '';
      return {
        code: FailureCode.Cancelled,
        message: given ? `The order was cancelled: ${given}` : 'The order was cancelled.',
      };
    }
    case OrderStatus.AttentionRequired:
      return {
        code: FailureCode.NeedsAttention,
        message: SWEPT.test(reason) ? STOPPED_MESSAGE : MESSAGES.needs_attention,
      };
    case OrderStatus.Failed:
      return failedOrder(reason);
    case OrderStatus.Closed:
      // The operator's reason is internal (it may name people, providers, amounts): never echoed.
      return { code: FailureCode.Closed, message: MESSAGES.closed };
    default:
      return null;
  }
}

/**
 * The steps' refusals by public failure code, with what the customer reads and what was left done: a business
 * refusal (`refused` of a provider step, e.g. authorizePayment's `payment_declined`: the first step, so nothing was
 * done) and a failed precondition (`precondition`, e.g. shipOrder's `payment_expired`: compensated).
 */
const REFUSALS = new Map<string, { message: string; after: string }>();
for (const s of STEP_CATALOGUE) {
  if (s.kind !== 'provider') continue;
  if (s.refused) REFUSALS.set(s.refused.failure, { message: s.refused.message, after: NOTHING_DONE });
  if (s.precondition) REFUSALS.set(s.precondition.failure, { message: s.precondition.message, after: NOTHING_SHIPPED });
}

/** `RefusedError: <code>: <reason or ->; …` as activities/kit/failures.ts `refusalFailure` writes it. */
const REFUSED = new RegExp(`^${ErrorType.Refused}: ([a-z][a-z0-9_]*): ([a-z0-9_]{1,64}|-);`);

function failedOrder(reason: string): PublicFailure {
  const type = /^([A-Za-z]+): /.exec(reason)?.[1] ?? '';
  const refused = REFUSED.exec(reason);
  const refusal = refused ? REFUSALS.get(refused[1]!) : undefined;
  if (refused && refusal !== undefined && isFailureCode(refused[1]!)) {
    const why = refused[2] === '-' ? '' : ` (${refused[2]})`;
    return { code: refused[1], message: `${refusal.message}${why}. ${refusal.after}` };
  }
  if (type === ErrorType.InsufficientStock) {
    const prefix = `${ErrorType.InsufficientStock}: insufficient stock for `;
    const items = reason.startsWith(prefix)
      ? reason
          .slice(prefix.length)
          .split('; ')
          .map((item) => SHORTAGE.exec(item))
      : [];
    const parsed = items.length > 0 && items.every((m) => m !== null);
    const detail = parsed
      ? items.map((m) => `${m![1]} (requested ${m![2]}, available ${Math.max(0, Number(m![3]))})`).join(', ')
      : 'one or more items';
    return { code: FailureCode.InsufficientStock, message: `Not enough stock for ${detail}. Nothing was reserved.` };
  }
  if (PROVIDER_TYPES.includes(type)) return { code: FailureCode.ProviderFailed, message: MESSAGES.provider_failed };
  return { code: FailureCode.InternalError, message: MESSAGES.internal_error };
}

/** Whether `code` is one of the public failure codes. */
function isFailureCode(code: string): code is FailureCode {
  return (Object.values(FailureCode) as string[]).includes(code);
}
