/**
 * What a step's code gets from the kit (activities/kit/define.ts): the order, read once per attempt
 * (`ctx.order`, activities/kit/order.ts), earlier steps' recorded answers (`ctx.answers`, activities/kit/answers.ts)
 * and, for a provider compensation, the answer of the effect it undoes (`ctx.forward`). Run through the kit with a
 * payments provider whose capture and void need the authorization id its authorize returned
 * (../../helpers/test-payments.ts), faked from its definition, over a real PostgreSQL.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  defineDatabaseStep,
  defineProviderStep,
  StepPhase,
  validateSteps,
  type RequestContext,
} from '../../../activities/kit/define.js';
import { readOrder } from '../../../activities/kit/order.js';
import { createInvoice } from '../../../activities/steps/create-invoice.step.js';
import { email } from '../../../providers/email.provider.js';
import { ErrorType } from '../../../workflows/errors.js';
import { insertOrder, seedTestCatalogue, TEST_CATALOGUE } from '../../helpers/fixtures.js';
import { activityInfo as info, failureOf, kitTestBed, type KitTestBed } from '../../helpers/kit-test-bed.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.js';
import { SHIPPED_PROVIDERS, SHIPPED_STEPS } from '../../helpers/shipped-steps.js';
import { authorizeTestPayment, captureTestPayment, testpay } from '../../helpers/test-payments.js';

/** A recorded database step whose result a later step reads. */
const countLoyaltyPoints = defineDatabaseStep({
  name: 'countLoyaltyPoints',
  phase: StepPhase.AfterPivot,
  status: 'loyalty_points_counted',
  label: 'Loyalty points counted',
  description: 'One point per full 100 minor units (test).',
  idempotency: 'recorded',
  async run({ orderId, tx }) {
    const [order] = await tx.$queryRaw<Array<{ total_minor: number }>>`
      SELECT total_minor FROM orders WHERE id = ${orderId}::uuid`;
    return { points: Math.floor(order!.total_minor / 100) };
  },
});

/** What the last request of `seen` got, by step (each attempt pushes its context). */
const seen: RequestContext[] = [];

/** A provider step that sends the loyalty points the earlier database step recorded, and keeps its context. */
const sendLoyaltyPoints = defineProviderStep({
  name: 'sendLoyaltyPoints',
  phase: StepPhase.AfterPivot,
  status: 'loyalty_points_sent',
  label: 'Loyalty points sent',
  description: 'Emails the points (test).',
  provider: email,
  operation: 'send',
  key: (orderId) => `loyalty-points:${orderId}`,
  request: async (ctx) => {
    seen.push(ctx);
    const { points } = await ctx.answers.data(countLoyaltyPoints);
    return { to: ctx.order.customerEmail, subject: 'Your points', text: `${points} points` };
  },
});

const STEPS = validateSteps([
  authorizeTestPayment,
  ...SHIPPED_STEPS.slice(0, 4),
  captureTestPayment,
  countLoyaltyPoints,
  sendLoyaltyPoints,
  ...SHIPPED_STEPS.slice(4),
]);

let tdb: TestDatabase;
let bed: KitTestBed;

beforeAll(async () => {
  tdb = await createTestDatabase();
  await seedTestCatalogue(tdb.prisma);
});
afterAll(async () => tdb?.drop());
beforeEach(() => {
  bed = kitTestBed(tdb, { steps: STEPS, providers: [...SHIPPED_PROVIDERS, testpay] });
  seen.length = 0;
});

describe('ctx.order: the order, read once per attempt', () => {
  it('holds the order, its lines in line order with the products’ names and prices, and its invoice once issued', async () => {
    const orderId = await insertOrder(tdb.prisma, [
      { sku: 'TEE-BLK-M', quantity: 2 },
      { sku: 'MUG-WHT', quantity: 1 },
    ]);
    const before = await readOrder(tdb.sql, orderId);
    expect(before).toEqual({
      orderId,
      customerEmail: 'ada@example.com',
      customerName: 'Ada Lovelace',
      currency: 'EUR',
      totalMinor: 2 * 1999 + 1250,
      createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T.*Z$/),
      lines: [
        { sku: 'TEE-BLK-M', quantity: 2, unitPriceMinor: 1999, name: TEST_CATALOGUE['TEE-BLK-M'][0] },
        { sku: 'MUG-WHT', quantity: 1, unitPriceMinor: 1250, name: TEST_CATALOGUE['MUG-WHT'][0] },
      ],
      invoice: null,
      payment: null,
    });
    await bed.step(createInvoice.name, orderId);
    const invoice = await tdb.prisma.invoice.findUniqueOrThrow({ where: { orderId } });
    expect((await readOrder(tdb.sql, orderId)).invoice).toEqual({
      id: invoice.id,
      number: invoice.number,
      status: 'issued',
      currency: 'EUR',
      totalMinor: 2 * 1999 + 1250,
      issuedAt: invoice.issuedAt.toISOString(),
    });
  });

  it('refuses an order that does not exist (RecordNotFoundError)', async () => {
    await expect(readOrder(tdb.sql, '00000000-0000-4000-8000-00000000dead')).rejects.toMatchObject({
      type: ErrorType.NotFound,
      nonRetryable: true,
    });
  });
});

describe('ctx.answers and ctx.forward: earlier steps’ answers', () => {
  it('a capture after the pivot reads the authorization id the step placed first got from the provider', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const authorized = await bed.step(authorizeTestPayment.name, orderId);
    for (const step of SHIPPED_STEPS.slice(0, 4)) await bed.step(step.name, orderId);
    const captured = await bed.step(captureTestPayment.name, orderId);
    const pay = bed.fakes.testpay!;
    expect(pay.calls.map((c) => [c.operation, c.request])).toEqual([
      ['authorize', { reference: orderId, amountMinor: 1250, currency: 'EUR' }],
      ['capture', { authorizationId: authorized.providerId, amountMinor: 1250 }],
    ]);
    expect(captured.providerId).toMatch(/^cap_/);
  });

  it('a void compensation gets the authorization id of the effect it undoes', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const authorized = await bed.step(authorizeTestPayment.name, orderId);
    expect((await bed.halt(orderId)).outcome).toBe('halted');
    const voided = await bed.compensate('voidTestPayment', orderId);
    expect(voided).toMatchObject({
      compensation: 'voidTestPayment',
      performed: true,
      providerId: authorized.providerId,
    });
    expect(bed.fakes.testpay!.calls.at(-1)).toMatchObject({
      operation: 'void',
      key: `test-payment-void:${orderId}`,
      request: { authorizationId: authorized.providerId },
    });
  });

  it('refuses, without a call, a request whose earlier step has not acted (RecordNotFoundError), and frees the claim', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const failure = await failureOf(bed.step(captureTestPayment.name, orderId, info(orderId)));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.NotFound, true]);
    expect(failure.message).toContain('the answer of authorizeTestPayment');
    expect(bed.fakes.testpay!.calls).toEqual([]);
    const claim = await tdb.prisma.sideEffectClaim.findUnique({ where: { key: `test-payment-capture:${orderId}` } });
    expect(claim?.status).toBe('failed');
  });

  it('a provider step reads what an earlier recorded database step returned, and gets the order in the same attempt', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'TEE-BLK-M', quantity: 3 }]);
    await bed.step(countLoyaltyPoints.name, orderId);
    await bed.step(sendLoyaltyPoints.name, orderId);
    expect(bed.fakes.email!.calls.at(-1)!.request).toMatchObject({ text: '59 points' });
    expect(seen).toHaveLength(1);
    expect(seen[0]!.order).toMatchObject({ orderId, totalMinor: 3 * 1999, lines: [{ sku: 'TEE-BLK-M', quantity: 3 }] });
  });

  it('names what is missing: a recorded result not yet there, a step idempotent by nature', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const failure = await failureOf(bed.step(sendLoyaltyPoints.name, orderId, info(orderId)));
    expect([failure.type, failure.message]).toEqual([
      ErrorType.NotFound,
      expect.stringContaining('the recorded result of countLoyaltyPoints'),
    ]);
    const ctx = seen[0]!;
    await expect(ctx.answers.data(createInvoice)).rejects.toThrow(/createInvoice is idempotent by nature/);
  });
});
