/**
 * A payments provider with several operations that depend on each other, and the steps that use it, for the suites
 * that prove the kit serves such a provider (issue 25): the generic provider specs (its client and simulator, with
 * an example chain and path parameters kept out of the body) and the conformance self-check (a step placed first,
 * whose compensation reads the forward effect's id, and a step after the pivot that reads an earlier step's answer).
 *
 * - `testpay.authorize`: `POST /v1/authorizations` `{ reference, amountMinor, currency }` → 201 `{ id: 'auth_…',
 *   status: 'authorized', amountMinor }`, effect `payment.authorized`;
 * - `testpay.capture`: `POST /v1/authorizations/:authorizationId/capture` `{ amountMinor }` → 201 `{ id: 'cap_…',
 *   authorizationId, amountMinor }`, effect `payment.captured`; 404 for an unknown authorization, 422 for one that is
 *   not `authorized` or an amount above it;
 * - `testpay.void`: `POST /v1/authorizations/:authorizationId/void` `{}` → 200 `{ id, status: 'voided' }`, effect
 *   `payment.voided`; 404 unknown, 422 once captured.
 *
 * Its name (`testpay`) and its steps' names are the fixture's own, so they never collide with a provider or a step
 * someone adds to the registries (docs/extending.md's payments example is `payments`).
 */
import { z } from 'zod';
import { defineProviderCompensation, defineProviderStep, StepPhase } from '../../activities/kit/define.js';
import { defineProvider, SimulatedRefusal } from '../../providers/kit/define.js';

const minor = z.number().int().min(1).max(Number.MAX_SAFE_INTEGER);

/** An authorization as the simulated provider stores it. */
interface Authorization {
  id: string;
  status: 'authorized' | 'captured' | 'voided';
  reference: string;
  amountMinor: number;
  currency: string;
}

/** The stored authorization `id`, or a 404 refusal. */
function authorization(state: Map<string, unknown>, id: string): Authorization {
  const found = state.get(id) as Authorization | undefined;
  if (!found) throw new SimulatedRefusal(404, 'not-found', `No authorization "${id}".`);
  return found;
}

export const testpay = defineProvider({
  name: 'testpay',
  title: 'Test payments provider',
  limits: { callsPerSecond: 50, concurrentCallsPerWorker: 10 },
  operations: {
    authorize: {
      description: 'Authorizes an amount on the customer’s card.',
      method: 'POST',
      path: '/v1/authorizations',
      request: z.object({
        reference: z.string().min(1).max(255),
        amountMinor: minor,
        currency: z.string().regex(/^[A-Z]{3}$/),
      }),
      response: z.object({ id: z.string().min(1), status: z.string(), amountMinor: z.number().int() }),
      providerId: (res) => res.id,
      simulate: ({ request, state, newId }) => {
        const auth: Authorization = { id: newId('auth'), status: 'authorized', ...request };
        state.set(auth.id, auth);
        return {
          status: 201,
          body: { id: auth.id, status: auth.status, amountMinor: auth.amountMinor },
          effect: 'payment.authorized',
        };
      },
      example: {
        request: { reference: 'ord_42', amountMinor: 2_598, currency: 'EUR' },
        answer: {
          status: 201,
          body: { id: 'auth_0123456789abcdef01234567', status: 'authorized', amountMinor: 2_598 },
        },
      },
    },
    capture: {
      description: 'Captures an authorized amount (at most the authorized one).',
      method: 'POST',
      path: '/v1/authorizations/:authorizationId/capture',
      paramsInBody: false,
      request: z.object({ authorizationId: z.string().min(1), amountMinor: minor }),
      response: z.object({ id: z.string().min(1), authorizationId: z.string(), amountMinor: z.number().int() }),
      providerId: (res) => res.id,
      simulate: ({ request, state, newId }) => {
        const auth = authorization(state, request.authorizationId);
        if (auth.status !== 'authorized' || request.amountMinor > auth.amountMinor) {
          throw new SimulatedRefusal(422, 'not-capturable', `Authorization ${auth.id} is ${auth.status}.`);
        }
        auth.status = 'captured';
        const body = { id: newId('cap'), authorizationId: auth.id, amountMinor: request.amountMinor };
        return { status: 201, body, effect: 'payment.captured' };
      },
      example: {
        after: ['authorize'],
        requestFrom: (earlier) => ({ authorizationId: String(earlier.authorize.id), amountMinor: 2_598 }),
        answer: {
          status: 201,
          body: {
            id: 'cap_0123456789abcdef01234567',
            authorizationId: 'auth_0123456789abcdef01234567',
            amountMinor: 2_598,
          },
        },
      },
    },
    void: {
      description: 'Voids an authorization that was not captured.',
      method: 'POST',
      path: '/v1/authorizations/:authorizationId/void',
      paramsInBody: false,
      request: z.object({ authorizationId: z.string().min(1) }),
      response: z.object({ id: z.string().min(1), status: z.literal('voided') }),
      providerId: (res) => res.id,
      simulate: ({ request, state }) => {
        const auth = authorization(state, request.authorizationId);
        if (auth.status === 'captured') {
          throw new SimulatedRefusal(422, 'not-voidable', `Authorization ${auth.id} was captured.`);
        }
        auth.status = 'voided';
        return { status: 200, body: { id: auth.id, status: 'voided' }, effect: 'payment.voided' };
      },
      example: {
        after: ['authorize'],
        requestFrom: (earlier) => ({ authorizationId: String(earlier.authorize.id) }),
        answer: { status: 200, body: { id: 'auth_0123456789abcdef01234567', status: 'voided' } },
      },
    },
  },
  reads: {
    authorization: {
      path: '/v1/authorizations/:id',
      simulate: ({ params, state }) => ({ status: 200, body: authorization(state, params.id ?? '') }),
    },
  },
});

/**
 * Authorizes the order's total before anything else (placed first, before the pivot); its compensation voids the
 * authorization, reading its id from the forward effect's answer.
 */
export const authorizeTestPayment = defineProviderStep({
  name: 'authorizeTestPayment',
  phase: StepPhase.BeforePivot,
  status: 'test_payment_authorized',
  label: 'Test payment authorized',
  description: 'Authorizes the order total (test fixture).',
  provider: testpay,
  operation: 'authorize',
  key: (orderId) => `test-payment-authorization:${orderId}`,
  request: ({ orderId, order }) => ({ reference: orderId, amountMinor: order.totalMinor, currency: order.currency }),
  compensation: defineProviderCompensation({
    name: 'voidTestPayment',
    description: 'Voids the authorization (test fixture).',
    provider: testpay,
    operation: 'void',
    key: (orderId) => `test-payment-void:${orderId}`,
    request: ({ forward }) => ({ authorizationId: forward.providerId }),
  }),
});

/** Captures the authorized total after the pivot, reading the authorization id from the earlier step's answer. */
export const captureTestPayment = defineProviderStep({
  name: 'captureTestPayment',
  phase: StepPhase.AfterPivot,
  status: 'test_payment_captured',
  label: 'Test payment captured',
  description: 'Captures the authorized total (test fixture).',
  provider: testpay,
  operation: 'capture',
  key: (orderId) => `test-payment-capture:${orderId}`,
  request: async ({ order, answers }) => ({
    authorizationId: await answers.providerId(authorizeTestPayment),
    amountMinor: order.totalMinor,
  }),
});
