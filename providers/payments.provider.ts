/**
 * The card payments provider, shaped like Stripe's PaymentIntents with manual capture: an amount is authorized (a
 * hold on the customer's card, with a capture deadline), captured at the hand-over to the carrier, voided when the
 * order is cancelled or fails, and refunded (partly) after a capture. Amounts are integer minor units. Operations:
 * - `authorize`: `POST /v1/payments` `{ amountMinor, currency, method, reference }` → 201 `{ id: 'pi_…', status:
 *   'authorized', amountMinor, currency, captureBefore }`, effect `payment.authorized`; or a definite 402 problem
 *   `card-declined` with a `declineCode` (`generic_decline`, `insufficient_funds`): nothing is held;
 * - `capture`: `POST /v1/payments/:paymentId/capture` `{ amountMinor }` → 200 `{ id, status: 'captured',
 *   amountCapturedMinor }`, effect `payment.captured`; refused definitely (409 `authorization-voided`,
 *   `authorization-expired` after `captureBefore`, `already-captured`; 422 `amount-exceeds-authorized`);
 * - `void`: `POST /v1/payments/:paymentId/void` `{}` → 200 `{ id, status: 'voided' }`, effect `payment.voided`
 *   (a second void answers the same); refused definitely once captured (409 `payment-captured`);
 * - `refund`: `POST /v1/refunds` `{ paymentId, amountMinor }` → 201 `{ id: 're_…', paymentId, amountMinor, status:
 *   'succeeded' }`, effect `payment.refunded`: partial refunds whose sum stays within the captured amount (422
 *   `refund-exceeds-captured`), only of a captured payment (409 `payment-not-captured`).
 *
 * The simulator's test payment-method tokens: `pm_card_ok` (approved), `pm_card_declined` (declined,
 * `generic_decline`), `pm_card_insufficient_funds` (declined, `insufficient_funds`), `pm_card_expiring` (approved, but
 * the hold must be captured within `PAYMENTS_SIM_EXPIRING_CAPTURE_SECONDS`, default 60); any other `pm_…` token is
 * approved. A hold is otherwise capturable for `PAYMENTS_SIM_CAPTURE_WINDOW_SECONDS` (default 7 days, as card
 * networks allow). The token is the customer's: the simulator keeps it in its state, never in an answer.
 */
import { z } from 'zod';
import { defineProvider, SimulatedRefusal } from './kit/define.js';

/** The simulator's test tokens and what they do. */
export const TEST_PAYMENT_METHODS = {
  ok: 'pm_card_ok',
  declined: 'pm_card_declined',
  insufficientFunds: 'pm_card_insufficient_funds',
  expiring: 'pm_card_expiring',
} as const;

/** Default `PAYMENTS_SIM_EXPIRING_CAPTURE_SECONDS`: how long a `pm_card_expiring` hold may be captured. */
export const DEFAULT_EXPIRING_CAPTURE_SECONDS = 60;
/** Default `PAYMENTS_SIM_CAPTURE_WINDOW_SECONDS`: how long any other hold may be captured (7 days). */
export const DEFAULT_CAPTURE_WINDOW_SECONDS = 7 * 24 * 3600;

/** The decline codes of the test tokens (Stripe's names). */
const DECLINES: Readonly<Record<string, string>> = {
  [TEST_PAYMENT_METHODS.declined]: 'generic_decline',
  [TEST_PAYMENT_METHODS.insufficientFunds]: 'insufficient_funds',
};

/** A payment as the simulator stores it (by id). */
interface Payment {
  id: string;
  reference: string;
  method: string;
  currency: string;
  amountMinor: number;
  status: 'authorized' | 'captured' | 'voided';
  capturedMinor: number;
  refundedMinor: number;
  captureBefore: string;
}

/** A whole number from a setting, or `fallback` when it is unset or not a number. */
function numberSetting(settings: Readonly<Record<string, string | undefined>>, name: string, fallback: number): number {
  const raw = settings[name]?.trim();
  const value = raw ? Number(raw) : NaN;
  return Number.isFinite(value) ? value : fallback;
}

/** The payment `id`, or a 404 refusal. */
function paymentOf(state: Map<string, unknown>, id: string): Payment {
  const payment = state.get(id) as Payment | undefined;
  if (!payment?.id?.startsWith('pi_')) throw new SimulatedRefusal(404, 'not-found', `No payment "${id}".`);
  return payment;
}

/** The payment's public face (never the token). */
function view(payment: Payment): Record<string, unknown> {
  const { method: _method, ...rest } = payment;
  return rest;
}

const amount = z.number().int().min(1).max(2_147_483_647);
const paymentId = z.string().min(1).max(255);

export const payments = defineProvider({
  name: 'payments',
  title: 'Payments provider',
  limits: { callsPerSecond: 50, concurrentCallsPerWorker: 20 },
  operations: {
    authorize: {
      description: 'Authorizes (holds) an amount on a payment method; declined definitely with a decline code.',
      method: 'POST',
      path: '/v1/payments',
      request: z.object({
        amountMinor: amount,
        currency: z.string().regex(/^[A-Z]{3}$/),
        method: z.string().regex(/^pm_[A-Za-z0-9_]{1,64}$/),
        reference: z.string().min(1).max(255),
      }),
      response: z.object({
        id: z.string().min(1),
        status: z.literal('authorized'),
        amountMinor: z.number().int(),
        currency: z.string(),
        captureBefore: z.iso.datetime({ offset: true }),
      }),
      providerId: (res) => res.id,
      simulate: ({ request, state, newId, settings }) => {
        const declineCode = DECLINES[request.method];
        if (declineCode) {
          throw new SimulatedRefusal(402, 'card-declined', `The card was declined (${declineCode}).`, {
            declineCode,
          });
        }
        const seconds =
          request.method === TEST_PAYMENT_METHODS.expiring
            ? numberSetting(settings ?? {}, 'PAYMENTS_SIM_EXPIRING_CAPTURE_SECONDS', DEFAULT_EXPIRING_CAPTURE_SECONDS)
            : numberSetting(settings ?? {}, 'PAYMENTS_SIM_CAPTURE_WINDOW_SECONDS', DEFAULT_CAPTURE_WINDOW_SECONDS);
        const payment: Payment = {
          id: newId('pi'),
          reference: request.reference,
          method: request.method,
          currency: request.currency,
          amountMinor: request.amountMinor,
          status: 'authorized',
          capturedMinor: 0,
          refundedMinor: 0,
          captureBefore: new Date(Date.now() + seconds * 1000).toISOString(),
        };
        state.set(payment.id, payment);
        const { id, status, amountMinor, currency, captureBefore } = payment;
        return {
          status: 201,
          body: { id, status, amountMinor, currency, captureBefore },
          effect: 'payment.authorized',
        };
      },
      example: {
        request: { amountMinor: 2500, currency: 'EUR', method: 'pm_card_ok', reference: 'ord_42' },
        answer: {
          status: 201,
          body: {
            id: 'pi_0123456789abcdef01234567',
            status: 'authorized',
            amountMinor: 2500,
            currency: 'EUR',
            captureBefore: '2026-12-10T09:00:00.000Z',
          },
        },
      },
    },
    capture: {
      description: 'Captures an authorized amount (at most the authorization); refused once voided or expired.',
      method: 'POST',
      path: '/v1/payments/:paymentId/capture',
      paramsInBody: false,
      request: z.object({ paymentId, amountMinor: amount }),
      response: z.object({ id: z.string().min(1), status: z.literal('captured'), amountCapturedMinor: z.number() }),
      providerId: (res) => res.id,
      simulate: ({ request, state }) => {
        const payment = paymentOf(state, request.paymentId);
        if (payment.status === 'voided') {
          throw new SimulatedRefusal(409, 'authorization-voided', `Payment ${payment.id} was voided.`);
        }
        if (payment.status === 'captured') {
          throw new SimulatedRefusal(409, 'already-captured', `Payment ${payment.id} was captured already.`);
        }
        if (Date.now() > Date.parse(payment.captureBefore)) {
          throw new SimulatedRefusal(
            409,
            'authorization-expired',
            `The authorization ${payment.id} expired at ${payment.captureBefore}.`,
          );
        }
        if (request.amountMinor > payment.amountMinor) {
          throw new SimulatedRefusal(
            422,
            'amount-exceeds-authorized',
            `Cannot capture ${request.amountMinor}: ${payment.amountMinor} was authorized.`,
          );
        }
        payment.status = 'captured';
        payment.capturedMinor = request.amountMinor;
        return {
          status: 200,
          body: { id: payment.id, status: payment.status, amountCapturedMinor: payment.capturedMinor },
          effect: 'payment.captured',
        };
      },
      example: {
        after: ['authorize'],
        requestFrom: (earlier) => ({ paymentId: String(earlier.authorize.id), amountMinor: 2500 }),
        answer: {
          status: 200,
          body: { id: 'pi_0123456789abcdef01234567', status: 'captured', amountCapturedMinor: 2500 },
        },
      },
    },
    void: {
      description: 'Voids (releases) an authorization; refused once it was captured.',
      method: 'POST',
      path: '/v1/payments/:paymentId/void',
      paramsInBody: false,
      request: z.object({ paymentId }),
      response: z.object({ id: z.string().min(1), status: z.literal('voided') }),
      providerId: (res) => res.id,
      simulate: ({ request, state }) => {
        const payment = paymentOf(state, request.paymentId);
        if (payment.status === 'captured') {
          throw new SimulatedRefusal(409, 'payment-captured', `Payment ${payment.id} was captured: refund it instead.`);
        }
        payment.status = 'voided';
        return { status: 200, body: { id: payment.id, status: payment.status }, effect: 'payment.voided' };
      },
      example: {
        after: ['authorize'],
        requestFrom: (earlier) => ({ paymentId: String(earlier.authorize.id) }),
        answer: { status: 200, body: { id: 'pi_0123456789abcdef01234567', status: 'voided' } },
      },
    },
    refund: {
      description: 'Refunds part or all of a captured payment (the refunds together at most the captured amount).',
      method: 'POST',
      path: '/v1/refunds',
      request: z.object({ paymentId, amountMinor: amount }),
      response: z.object({
        id: z.string().min(1),
        paymentId: z.string(),
        amountMinor: z.number(),
        status: z.literal('succeeded'),
      }),
      providerId: (res) => res.id,
      simulate: ({ request, state, newId }) => {
        const payment = paymentOf(state, request.paymentId);
        if (payment.status !== 'captured') {
          throw new SimulatedRefusal(409, 'payment-not-captured', `Payment ${payment.id} is ${payment.status}.`);
        }
        if (payment.refundedMinor + request.amountMinor > payment.capturedMinor) {
          throw new SimulatedRefusal(
            422,
            'refund-exceeds-captured',
            `Cannot refund ${request.amountMinor}: ${payment.capturedMinor - payment.refundedMinor} of the captured ` +
              `${payment.capturedMinor} is left.`,
          );
        }
        payment.refundedMinor += request.amountMinor;
        const refund = {
          id: newId('re'),
          paymentId: payment.id,
          amountMinor: request.amountMinor,
          status: 'succeeded',
        };
        state.set(refund.id, refund);
        return { status: 201, body: refund, effect: 'payment.refunded' };
      },
      example: {
        after: ['capture'],
        requestFrom: (earlier) => ({ paymentId: String(earlier.capture.id), amountMinor: 1000 }),
        answer: {
          status: 201,
          body: {
            id: 're_0123456789abcdef01234567',
            paymentId: 'pi_0123456789abcdef01234567',
            amountMinor: 1000,
            status: 'succeeded',
          },
        },
      },
    },
  },
  reads: {
    payment: {
      path: '/v1/payments/:id',
      simulate: ({ params, state }) => ({ status: 200, body: view(paymentOf(state, params.id ?? '')) }),
    },
  },
});
