/**
 * E2E: card payments (issue 23, the payments half) on the real stack: the Nest API, a worker, the Temporal dev server,
 * PostgreSQL and the simulators over HTTP (the simulated warehouse calling the API back).
 * - an approved card: one authorization (first, before the reservation), one capture after the shipment, of the total;
 * - a declined card: failed `payment_declined` with the decline code, nothing reserved, invoiced or emailed;
 * - a cancel during the warehouse wait: one void, the pick cancelled, stock released, invoice void, a cancellation
 *   notice; never a capture;
 * - a hold about to expire: attention_required before it expires (the deadline hook of awaitPacking), no shipment;
 *   a report after that stop: shipOrder's precondition refuses, failed `payment_expired`, compensated;
 * - a lost answer of the authorization: the retry with the same key, one effect per key;
 * - an order on account has no card steps and `payment: null`;
 * - 422s (a malformed token, a card number anywhere in the body) store nothing.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stockOf } from '../helpers/fixtures.js';
import { startTestStack, type TestStack, waitForOrderBody } from '../helpers/test-stack.js';

const PROBLEMS = 'https://order-fulfilment.dev/problems/';
const SKU = 'TEE-BLK-M';

function orderBody(method?: string, quantity = 1): Record<string, unknown> {
  return {
    customer: { email: 'ada@example.com', name: 'Ada' },
    lines: [{ sku: SKU, quantity }],
    ...(method === undefined ? {} : { payment: { method } }),
  };
}

async function placeOrder(stack: TestStack, method?: string, quantity = 1): Promise<Record<string, unknown>> {
  const res = await stack.http.post('/orders').send(orderBody(method, quantity)).expect(202);
  return res.body as Record<string, unknown>;
}

const keys = (id: string) => ({
  authorize: `payment-authorization:${id}`,
  capture: `payment-capture:${id}`,
  void: `payment-void:${id}`,
});

describe('card payments', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ overrides: { WAREHOUSE_PACK_DEADLINE_MARGIN: '20s' } });
  });
  afterAll(async () => stack?.close());
  const holdReports = () => stack.warehouse.configure({ WAREHOUSE_PACK_DELAY_MS: '0' });
  const callBack = () => stack.warehouse.configure({ WAREHOUSE_PACK_DELAY_MS: '200' });

  it('an approved card: authorized first, captured once after the shipment, of the total; the token never shown', async () => {
    callBack();
    const placed = await placeOrder(stack, 'pm_card_ok', 2);
    const id = placed.id as string;
    expect(placed.payment).toEqual({
      status: 'pending',
      currency: 'EUR',
      authorizedMinor: 0,
      capturedMinor: 0,
      voidedMinor: 0,
      refundedMinor: 0,
      captureBefore: null,
      declineCode: null,
    });
    const order = await stack.waitForOrder(id);
    expect(order.status).toBe('completed');
    const k = keys(id);
    expect(stack.payments.ledger.count(k.authorize)).toBe(1);
    expect(stack.payments.ledger.count(k.capture)).toBe(1);
    expect(stack.payments.ledger.count(k.void)).toBe(0);
    const [authorized] = stack.payments.ledger.effects(k.authorize);
    const [captured] = stack.payments.ledger.effects(k.capture);
    expect(authorized!.request).toMatchObject({ amountMinor: order.totalMinor, currency: 'EUR', reference: id });
    // The capture's body is the amount (the authorization's id travels in the path).
    expect(captured!.request).toEqual({ amountMinor: order.totalMinor });
    const idOf = (body: unknown) => (body as { id: string }).id;
    expect(idOf(captured!.response.body)).toBe(idOf(authorized!.response.body));
    // Authorized before anything was reserved; captured after the hand-over to the carrier.
    const reserved = await stack.db.prisma.inventoryMovement.findFirstOrThrow({ where: { orderId: id } });
    expect(Date.parse(authorized!.at)).toBeLessThanOrEqual(reserved.createdAt.getTime());
    const shipped = stack.carrier.ledger.effects(`shipment:${id}`)[0]!;
    expect(Date.parse(captured!.at)).toBeGreaterThanOrEqual(Date.parse(shipped.at));
    expect(order.payment).toMatchObject({
      status: 'captured',
      currency: 'EUR',
      authorizedMinor: order.totalMinor,
      capturedMinor: order.totalMinor,
      voidedMinor: 0,
      refundedMinor: 0,
      captureBefore: null,
      declineCode: null,
    });
    expect(JSON.stringify(order)).not.toContain('pm_card_ok');
    const steps = (order.steps as Array<{ name: string }>).map((s) => s.name);
    expect(steps[0]).toBe('authorizePayment');
    expect(steps.indexOf('capturePayment')).toBe(steps.indexOf('shipOrder') + 1);
    // The Temporal UI's summaries name the amount and mask the token.
    const plan = JSON.stringify((await stack.db.prisma.order.findUniqueOrThrow({ where: { id } })).plan);
    expect(plan).not.toContain('pm_card_ok');
    expect(plan).toContain('authorization of');
  });

  it('a declined card: failed payment_declined with the code; nothing reserved, invoiced or emailed', async () => {
    const [, reservedBefore] = await stockOf(stack.db.prisma, SKU);
    for (const [method, code] of [
      ['pm_card_declined', 'generic_decline'],
      ['pm_card_insufficient_funds', 'insufficient_funds'],
    ] as const) {
      const id = (await placeOrder(stack, method)).id as string;
      const order = await stack.waitForOrder(id);
      expect(order.status).toBe('failed');
      expect(order.failure).toEqual({
        code: 'payment_declined',
        message: `The payment was declined (${code}). Nothing was reserved, invoiced or charged.`,
      });
      expect(order.payment).toMatchObject({ status: 'declined', declineCode: code, authorizedMinor: 0 });
      expect(await stack.db.prisma.inventoryMovement.count({ where: { orderId: id } })).toBe(0);
      expect(await stack.db.prisma.invoice.count({ where: { orderId: id } })).toBe(0);
      expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(0);
      expect(stack.payments.ledger.count(`payment-authorization:${id}`)).toBe(0); // refused: no effect
      expect(stack.payments.ledger.count(`payment-void:${id}`)).toBe(0);
    }
    expect((await stockOf(stack.db.prisma, SKU))[1]).toBe(reservedBefore);
  });

  it('a cancel during the warehouse wait: one void, pick cancelled, stock released, invoice void, a notice', async () => {
    holdReports();
    const [, reservedBefore] = await stockOf(stack.db.prisma, SKU);
    const id = (await placeOrder(stack, 'pm_card_ok', 2)).id as string;
    await waitForOrderBody(stack, id, (o) => o.status === 'pick_requested');
    const res = await stack.http.post(`/orders/${id}/cancel`).set('Idempotency-Key', randomUUID()).send({
      reason: 'changed my mind',
    });
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('cancelled');
    const k = keys(id);
    expect(stack.payments.ledger.count(k.authorize)).toBe(1);
    expect(stack.payments.ledger.count(k.void)).toBe(1);
    expect(stack.payments.ledger.effects(k.void)[0]!.kind).toBe('payment.voided');
    expect(stack.payments.ledger.count(k.capture)).toBe(0);
    expect(stack.warehouse.ledger.count(`pick-cancel:${id}`)).toBe(1);
    expect((await stockOf(stack.db.prisma, SKU))[1]).toBe(reservedBefore);
    expect((await stack.db.prisma.invoice.findUniqueOrThrow({ where: { orderId: id } })).status).toBe('void');
    expect(stack.email.ledger.count(`order-cancellation:${id}`)).toBe(1);
    const order = (await stack.ops.get(`/orders/${id}`).expect(200)).body;
    expect(order.payment).toMatchObject({ status: 'voided', voidedMinor: order.totalMinor, capturedMinor: 0 });
  });

  it('a hold about to expire: attention_required before it expires; a late report fails it payment_expired, never shipped nor captured', async () => {
    holdReports();
    stack.payments.configure({ PAYMENTS_SIM_EXPIRING_CAPTURE_SECONDS: '30' });
    const id = (await placeOrder(stack, 'pm_card_expiring')).id as string;
    const order = await waitForOrderBody(stack, id, (o) => o.status === 'attention_required');
    const row = await stack.db.prisma.order.findUniqueOrThrow({ where: { id } });
    expect(row.failureReason).toMatch(/the payment authorization expires at .*; awaitPacking stopped waiting/);
    const payment = await stack.db.prisma.payment.findUniqueOrThrow({ where: { orderId: id } });
    expect(payment.status).toBe('authorized');
    expect(Date.now()).toBeLessThan(payment.captureBefore!.getTime()); // before it expired
    expect(order.payment).toMatchObject({ status: 'authorized', captureBefore: payment.captureBefore!.toISOString() });
    expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(0);
    expect(stack.payments.ledger.count(`payment-capture:${id}`)).toBe(0);

    // The warehouse's report still ends the wait, but shipOrder's precondition refuses a hold this close to its
    // deadline: nothing shipped, the order fails payment_expired, compensated (the hold voided, stock released).
    const [, reservedBefore] = await stockOf(stack.db.prisma, SKU);
    await stack.ops.post(`/orders/${id}/packed`).set('Idempotency-Key', randomUUID()).send({}).expect(200);
    const failed = await stack.waitForOrder(id);
    expect(failed.status).toBe('failed');
    expect(failed.failure).toEqual({
      code: 'payment_expired',
      message:
        'The payment authorization expired before the order shipped (authorization_expiring). Nothing was shipped ' +
        'or charged; reserved stock was released and any invoice voided.',
    });
    expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(0);
    expect(stack.payments.ledger.count(`payment-capture:${id}`)).toBe(0);
    expect(stack.payments.ledger.count(`payment-void:${id}`)).toBe(1);
    expect(stack.email.ledger.count(`order-cancellation:${id}`)).toBe(1);
    expect((await stockOf(stack.db.prisma, SKU))[1]).toBe(reservedBefore - 1);
    expect(failed.payment).toMatchObject({ status: 'voided', capturedMinor: 0 });
  });

  it('duplicates: a repeated POST, lost answers of the authorization and the capture: one effect per key', async () => {
    callBack();
    stack.payments.injectFault({ mode: 'drop-response', keyPrefix: 'payment-authorization:' });
    stack.payments.injectFault({ mode: 'drop-response', keyPrefix: 'payment-capture:' });
    const key = randomUUID();
    const first = await stack.http.post('/orders').set('Idempotency-Key', key).send(orderBody('pm_card_ok'));
    const again = await stack.http.post('/orders').set('Idempotency-Key', key).send(orderBody('pm_card_ok'));
    expect([first.status, again.status]).toEqual([202, 202]);
    expect(again.body.id).toBe(first.body.id);
    const id = first.body.id as string;
    const order = await stack.waitForOrder(id);
    expect(order.status).toBe('completed');
    expect(stack.payments.ledger.count(`payment-authorization:${id}`)).toBe(1);
    expect(stack.payments.ledger.count(`payment-capture:${id}`)).toBe(1);
    expect(order.payment).toMatchObject({ status: 'captured', capturedMinor: order.totalMinor });
  });

  it('an order on account: no card steps, payment null, nothing at the payments provider', async () => {
    callBack();
    const id = (await placeOrder(stack)).id as string;
    const order = await stack.waitForOrder(id);
    expect(order.status).toBe('completed');
    expect(order.payment).toBeNull();
    const steps = (order.steps as Array<{ name: string }>).map((s) => s.name);
    expect(steps).not.toContain('authorizePayment');
    expect(steps).not.toContain('capturePayment');
    expect(stack.payments.ledger.count(`payment-authorization:${id}`)).toBe(0);
  });

  it('a malformed token, or a card number anywhere in the body, is refused 422 and nothing is stored', async () => {
    const before = await stack.db.prisma.order.count();
    const recordsBefore = await stack.db.prisma.idempotencyRecord.count();
    for (const method of ['card_4242', 'pm_', 'pm_with space', `pm_${'x'.repeat(65)}`]) {
      const res = await stack.http.post('/orders').set('Idempotency-Key', randomUUID()).send(orderBody(method));
      expect(res.status).toBe(422);
      expect(res.body.type).toBe(`${PROBLEMS}payment-method-invalid`);
      if (method !== 'pm_') expect(JSON.stringify(res.body)).not.toContain(method); // never echoed
    }
    for (const body of [
      { ...orderBody('pm_card_ok'), note: '4242 4242 4242 4242' },
      { ...orderBody(), customer: { email: 'ada@example.com', name: '4000-0566-5566-5556' } },
      { ...orderBody(), payment: { method: '4111111111111111' } },
    ]) {
      const res = await stack.http.post('/orders').set('Idempotency-Key', randomUUID()).send(body);
      expect(res.status).toBe(422);
      expect(res.body.type).toBe(`${PROBLEMS}card-number-refused`);
      expect(res.text).not.toMatch(/4242|0566|1111/);
    }
    expect(await stack.db.prisma.order.count()).toBe(before);
    expect(await stack.db.prisma.idempotencyRecord.count()).toBe(recordsBefore);
  });
});
