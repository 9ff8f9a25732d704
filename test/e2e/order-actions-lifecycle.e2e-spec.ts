/**
 * E2E: cancel and operator retry against the real workflow: the Nest API (supertest), a Worker on the suite's own
 * task queue of the shared dev server, a fresh PostgreSQL database and the provider simulators over real HTTP with
 * injected faults. Effects are counted where they land: the simulators' ledgers, the inventory ledger, invoices.
 * The no-worker half of the contract (400/404/409 from the API's own checks, 202, 503) is in
 * order-actions.e2e-spec.ts.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OrderWorkflowReconciler } from '../../src/orders/workflow/order-workflow-reconciler.service.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/order-fulfilment.contract.js';
import { stockOf } from '../helpers/fixtures.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';

const PROBLEMS = 'https://order-fulfilment.dev/problems/';
const FINAL = ['completed', 'failed', 'cancelled'];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let stack: TestStack;
/** Wall-clock durations of cancel requests, ms, by outcome; printed at the end. */
const cancelLatencies: Record<string, number[]> = {};
/** Statuses of the cancels sent while the confirmation was in flight; printed at the end. */
const inFlightOutcomes: number[] = [];

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  console.info('cancel latencies (ms):', JSON.stringify(cancelLatencies));
  console.info('cancels while the confirmation was in flight:', inFlightOutcomes.join(' '));
  await stack?.close();
});

type Order = Record<string, unknown> & { id: string; status: string };

async function placeOrder(sku = 'MUG-WHT', quantity = 1): Promise<string> {
  const res = await stack.http
    .post('/orders')
    .send({ customer: { email: 'grace@example.com' }, lines: [{ sku, quantity }] })
    .expect(202);
  return res.body.id as string;
}

async function getOrder(id: string): Promise<Order> {
  const res = await stack.http.get(`/orders/${id}`).expect(200);
  return res.body as Order;
}

/** Polls GET /orders/:id every `everyMs` until `done(order)`; returns that order. */
async function waitFor(id: string, done: (o: Order) => boolean, timeoutMs = 45_000, everyMs = 50): Promise<Order> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const order = await getOrder(id);
    if (done(order)) return order;
    if (Date.now() > deadline) throw new Error(`order ${id} still ${order.status} after ${timeoutMs} ms`);
    await sleep(everyMs);
  }
}
const waitForFinal = (id: string) => waitFor(id, (o) => FINAL.includes(o.status));

/** Waits until the simulator holds an in-flight request under `key` (a slow fault is delaying it). */
async function waitInFlight(sim: TestStack['email'], key: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!sim.inFlightKeys().includes(key)) {
    if (Date.now() > deadline) throw new Error(`no request in flight under ${key}`);
    await sleep(5);
  }
}

async function cancel(id: string, key = randomUUID(), reason = 'customer changed their mind') {
  const started = Date.now();
  const res = await stack.http.post(`/orders/${id}/cancel`).set('Idempotency-Key', key).send({ reason });
  (cancelLatencies[String(res.status)] ??= []).push(Date.now() - started);
  return res;
}

/** The order is cancelled and compensated: stock back, invoice (if any) voided, no confirmation email. */
async function expectCompensated(id: string, reservedBefore: number, sku = 'MUG-WHT', emails = 0): Promise<void> {
  const order = await getOrder(id);
  expect(order.status).toBe('cancelled');
  expect((await stockOf(stack.db.prisma, sku))[1]).toBe(reservedBefore);
  const invoice = await stack.db.prisma.invoice.findUnique({ where: { orderId: id } });
  if (invoice) expect(invoice.status).toBe('void');
  expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(emails);
  expect(emails).toBeLessThanOrEqual(1);
}

/**
 * Places an order whose first confirmation attempt meets a 503 from the email provider, and resolves once that
 * attempt has failed: the confirmation then waits out the provider profile's first backoff (2 s), so a cancel sent
 * now reaches the order before the pivot. (Reserve and invoice are local activities: without a fault, the
 * confirmation is already in flight a few milliseconds after the 202.)
 */
async function placeOrderWaitingToResendConfirmation(): Promise<string> {
  const fault = stack.email.injectFault({ mode: 'unavailable', times: 1 });
  const id = await placeOrder();
  const deadline = Date.now() + 20_000;
  for (;;) {
    const res = await fetch(`${stack.email.url}/_sim/faults`);
    const { faults } = (await res.json()) as { faults: Array<{ id: string; remaining: number }> };
    if (!faults.some((f) => f.id === fault.id && f.remaining > 0)) return id;
    if (Date.now() > deadline) throw new Error('the confirmation never reached the email provider');
    await sleep(20);
  }
}

describe('cancel through the cancelOrder Update', () => {
  it('cancels an order whose confirmation waits for a retry: 200, compensated, no email', async () => {
    const [, reservedBefore] = await stockOf(stack.db.prisma, 'MUG-WHT');
    const id = await placeOrderWaitingToResendConfirmation();
    const res = await cancel(id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      id,
      status: 'cancelled',
      failure: { code: 'cancelled', message: 'The order was cancelled: customer changed their mind' },
    });
    expect(res.body).not.toHaveProperty('failureReason');
    expect((await stack.db.prisma.order.findUniqueOrThrow({ where: { id } })).failureReason).toBe(
      'cancelled: customer changed their mind',
    );
    await sleep(3_000); // past the first backoff: a retry that was not stopped would have sent it by now
    await expectCompensated(id, reservedBefore);
  });

  it.each([1, 2, 3])(
    'a cancel while the confirmation is in flight (before the pivot) (%i): cancelled, one notice exactly when the confirmation went out',
    async () => {
      const [, reservedBefore] = await stockOf(stack.db.prisma, 'MUG-WHT');
      stack.email.injectFault({ mode: 'slow', delayMs: 1_000, times: 1 });
      const id = await placeOrder();
      await waitInFlight(stack.email, `order-confirmation:${id}`);
      const res = await cancel(id);
      inFlightOutcomes.push(res.status);
      if (res.status === 200) {
        expect(res.body.status).toBe('cancelled');
        await sleep(1_500);
        // The call under way finishes (the slow provider performs it): the confirmation went out once, so the
        // compensation sends exactly one cancellation notice.
        await expectCompensated(id, reservedBefore, 'MUG-WHT', stack.email.ledger.count(`order-confirmation:${id}`));
        expect(stack.email.ledger.count(`order-cancellation:${id}`)).toBe(
          stack.email.ledger.count(`order-confirmation:${id}`),
        );
      } else {
        expect(res.status).toBe(409);
        expect(res.body.type).toBe(`${PROBLEMS}order-not-cancellable`);
        const done = await waitForFinal(id);
        expect(done.status).toBe('completed');
        expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(1);
      }
    },
  );

  it('cancels during an email provider outage: 200, and no email once the outage ends', async () => {
    const [, reservedBefore] = await stockOf(stack.db.prisma, 'MUG-WHT');
    const outage = stack.email.injectFault({ mode: 'unavailable', times: 10_000 });
    const id = await placeOrder();
    // Wait until the confirmation has failed at least twice against the outage.
    const deadline = Date.now() + 20_000;
    const remaining = async () => {
      const res = await fetch(`${stack.email.url}/_sim/faults`);
      const { faults } = (await res.json()) as { faults: Array<{ id: string; remaining: number }> };
      return faults.find((f) => f.id === outage.id)?.remaining ?? 0;
    };
    while ((await remaining()) > 10_000 - 2) {
      if (Date.now() > deadline) throw new Error('the confirmation never reached the email provider');
      await sleep(50);
    }
    const res = await cancel(id);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('cancelled');
    stack.email.clearFaults(); // the outage ends
    await sleep(4_000); // longer than the provider profile's first backoffs: a retry would have sent it by now
    await expectCompensated(id, reservedBefore);
    const handle = stack.client.workflow.getHandle(orderWorkflowId(id));
    expect((await handle.describe()).status.name).not.toBe('RUNNING');
  });

  it('refuses a cancel once the order shipped (409, saying so) and gives the same answer to the same key', async () => {
    const id = await placeOrder();
    // Hold the order past the pivot (the shipment): the accounting call is slow.
    stack.accounting.injectFault({ mode: 'slow', delayMs: 2_000, times: 1, keyPrefix: `accounting-invoice:${id}` });
    await waitFor(id, (o) => o.status === 'shipped', 45_000, 10);
    const key = randomUUID();
    const first = await cancel(id, key);
    expect(first.status).toBe(409);
    expect(first.body).toMatchObject({ type: `${PROBLEMS}order-not-cancellable`, status: 409, orderStatus: 'shipped' });
    expect(first.body.detail).toMatch(/it has shipped/);
    const again = await cancel(id, key);
    expect(again.status).toBe(409);
    expect(again.body.type).toBe(first.body.type);
    expect((await waitForFinal(id)).status).toBe('completed');
    expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(1);
  });

  it('answers a repeated cancel with the same Idempotency-Key with the same 200', async () => {
    const id = await placeOrderWaitingToResendConfirmation();
    const key = randomUUID();
    const first = await cancel(id, key);
    expect(first.status).toBe(200);
    const again = await cancel(id, key);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ id, status: 'cancelled', failure: first.body.failure });
  });
});

describe('operator retry through the retry Update', () => {
  it('refuses a retry while the order does not wait (409, saying what the workflow does)', async () => {
    stack.email.injectFault({ mode: 'slow', delayMs: 1_500, times: 1 });
    const id = await placeOrder();
    await waitInFlight(stack.email, `order-confirmation:${id}`);
    const res = await stack.ops.post(`/orders/${id}/retry`).send({});
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ type: `${PROBLEMS}order-not-awaiting-retry`, waitingFor: null });
    expect(res.body.detail).toContain('sendOrderConfirmation');
    expect((await waitForFinal(id)).status).toBe('completed');
  });

  it('completes an order whose accounting sync was rejected, retried the instant it shows attention_required (8 of 8)', async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < 8; i++) {
      const id = await placeOrder();
      stack.accounting.injectFault({ mode: 'reject', times: 1, keyPrefix: `accounting-invoice:${id}` });
      await waitFor(id, (o) => o.status === 'attention_required', 45_000, 5);
      const retry = await stack.ops.post(`/orders/${id}/retry`).set('Idempotency-Key', randomUUID());
      const done = await waitForFinal(id);
      outcomes.push(`${retry.status}/${done.status}`);
      expect(retry.status).toBe(202);
      expect(retry.body).toMatchObject({ orderId: id, step: 'syncInvoiceToAccounting', retry: 1 });
      expect(done.status).toBe('completed');
      expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(1);
      expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(1);
    }
    console.info('retry at the instant of attention_required:', outcomes.join(' '));
  }, 180_000);

  it('counts a repeated retry with the same Idempotency-Key once', async () => {
    const id = await placeOrder();
    stack.accounting.injectFault({ mode: 'reject', times: 2, keyPrefix: `accounting-invoice:${id}` });
    await waitFor(id, (o) => o.status === 'attention_required');
    const key = randomUUID();
    const first = await stack.ops.post(`/orders/${id}/retry`).set('Idempotency-Key', key).send({});
    expect(first.status).toBe(202);
    expect(first.body.retry).toBe(1);
    // The retried sync is rejected again (the fault is used up) and the workflow waits again. The same key is
    // still the first retry.
    const handle = stack.client.workflow.getHandle(orderWorkflowId(id));
    const deadline = Date.now() + 30_000;
    for (;;) {
      const state = await handle.query(orderStatusQuery);
      const { faults } = (await (await fetch(`${stack.accounting.url}/_sim/faults`)).json()) as {
        faults: Array<{ keyPrefix?: string }>;
      };
      const used = !faults.some((f) => f.keyPrefix === `accounting-invoice:${id}`);
      if (used && state.attention) break;
      if (Date.now() > deadline) throw new Error('the retried sync did not wait again');
      await sleep(50);
    }
    const repeat = await stack.ops.post(`/orders/${id}/retry`).set('Idempotency-Key', key).send({});
    expect([repeat.status, repeat.body.retry]).toEqual([202, 1]);
    await sleep(500);
    expect((await getOrder(id)).status).toBe('attention_required');
    // A new key is a new retry.
    const second = await stack.ops.post(`/orders/${id}/retry`).set('Idempotency-Key', randomUUID());
    expect(second.status).toBe(202);
    expect(second.body).toMatchObject({ orderId: id, retry: 2 });
    expect((await waitForFinal(id)).status).toBe('completed');
    expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(1);
  });
});

describe('the sweeper with finished workflows', () => {
  it('writes the final status of a completed or cancelled workflow behind a stale row', async () => {
    const reconciler = stack.api.get(OrderWorkflowReconciler);
    const completed = await placeOrder();
    expect((await waitForFinal(completed)).status).toBe('completed');
    await stack.client.workflow.getHandle(orderWorkflowId(completed)).result();

    const cancelled = await placeOrderWaitingToResendConfirmation();
    expect((await cancel(cancelled, randomUUID(), 'sweeper test')).status).toBe(200);
    await stack.client.workflow.getHandle(orderWorkflowId(cancelled)).result();

    // As if the last status writes had been lost: rows back at an earlier status, untouched for an hour.
    await stack.db.prisma.$executeRaw`
      UPDATE orders SET status = 'shipped', status_step = 40, updated_at = now() - interval '1 hour'
      WHERE id = ${completed}::uuid`;
    await stack.db.prisma.$executeRaw`
      UPDATE orders SET status = 'invoiced', status_step = 20, failure_reason = null,
        updated_at = now() - interval '1 hour'
      WHERE id = ${cancelled}::uuid`;
    const result = await reconciler.sweepOnce();
    expect(result.repaired).toBeGreaterThanOrEqual(2);
    expect(await getOrder(completed)).toMatchObject({ status: 'completed', failure: null });
    expect(await getOrder(cancelled)).toMatchObject({
      status: 'cancelled',
      failure: { code: 'cancelled', message: 'The order was cancelled: sweeper test' },
    });
  });
});
