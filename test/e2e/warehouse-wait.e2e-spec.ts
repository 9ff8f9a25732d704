/**
 * E2E: the warehouse wait (issue 23, item 4) on the real stack: the Nest API listening on a port, a worker, the
 * Temporal dev server, PostgreSQL and the simulators over HTTP, the simulated warehouse calling the API back.
 * - an order waits for packing, the warehouse reports packed (its callback), it ships and completes;
 * - the bound passes: attention_required with the reason; a retry waits again; a report ends it;
 * - a cancel during the wait: 200 cancelled within ~1 s, one pick cancel, stock released, invoice void;
 * - a cancel once picking started: 409 with the warehouse's reason, and the order goes on;
 * - a duplicate report answers the same; an early report (before the wait) is kept; reports to orders that do not
 *   wait are 409;
 * - the deadline hook (a fake deadline in a test registry) shortens the bound and names the deadline.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StepDefinition } from '../../activities/kit/define.js';
import { STEPS } from '../../activities/steps/index.js';
import { testKeys } from '../helpers/api-keys.js';
import { stockOf } from '../helpers/fixtures.js';
import { startTestStack, type TestStack, waitForOrderBody } from '../helpers/test-stack.js';

const PROBLEMS = 'https://order-fulfilment.dev/problems/';

async function placeOrder(stack: TestStack, quantity = 1): Promise<string> {
  const res = await stack.http
    .post('/orders')
    .send({ customer: { email: 'ada@example.com', name: 'Ada' }, lines: [{ sku: 'TEE-BLK-M', quantity }] })
    .expect(202);
  return res.body.id as string;
}

/** The order's stored failure reason (the API shows a public code and message instead). */
async function failureReason(stack: TestStack, id: string): Promise<string | null> {
  return (await stack.db.prisma.order.findUniqueOrThrow({ where: { id } })).failureReason;
}

const waiting = (o: Record<string, unknown>) => o.status === 'pick_requested';

function reportPacked(stack: TestStack, id: string, key = randomUUID(), body: object = { parcels: 1 }) {
  return stack.as(testKeys().warehouse.key).post(`/orders/${id}/packed`).set('Idempotency-Key', key).send(body);
}

describe('the warehouse wait', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack({ overrides: { WAREHOUSE_PACK_TIMEOUT: '3s' } });
  });
  afterAll(async () => stack?.close());
  const holdReports = () => stack.warehouse.configure({ WAREHOUSE_PACK_DELAY_MS: '0' });
  const callBack = () => stack.warehouse.configure({ WAREHOUSE_PACK_DELAY_MS: '200' });

  it('waits for packing; the warehouse reports packed (its callback); the order ships and completes', async () => {
    callBack();
    const id = await placeOrder(stack);
    const order = await stack.waitForOrder(id);
    expect(order.status).toBe('completed');
    expect(stack.warehouse.ledger.count(`pick:${id}`)).toBe(1);
    const [event] = await stack.db.prisma.orderEvent.findMany({ where: { orderId: id } });
    expect(event).toMatchObject({ event: 'packed', reportedBy: 'test-warehouse' });
    expect(event!.reportId).toMatch(/^packed:test-warehouse:packed:pick_/);
    // Packed before the shipment: the report's time is before the carrier's effect.
    const shipped = stack.carrier.ledger.effects(`shipment:${id}`)[0]!;
    expect(event!.receivedAt.getTime()).toBeLessThanOrEqual(Date.parse(shipped.at));
  });

  it('the bound passes: attention_required with the reason; a retry waits again; a report ends the wait', async () => {
    holdReports();
    const id = await placeOrder(stack);
    await waitForOrderBody(stack, id, (o) => o.status === 'attention_required');
    const first = await failureReason(stack, id);
    expect(first).toMatch(
      /awaitPacking waited 3 s \(WAREHOUSE_PACK_TIMEOUT\) for the "packed" event since \d{4}-\d\d-\d\dT.*; it did not come/,
    );
    await stack.ops.post(`/orders/${id}/retry`).set('Idempotency-Key', randomUUID()).send({}).expect(202);
    // The retry waited again: its bound passed too, with a wait of its own (a later "since").
    const deadline = Date.now() + 20_000;
    while ((await failureReason(stack, id)) === first && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 100));
    const second = await failureReason(stack, id);
    expect(second).toMatch(/awaitPacking waited 3 s .* since .*; it did not come/);
    expect(second).not.toBe(first);
    // Waiting for an operator, a report (an operator's "mark packed") ends the wait.
    const report = await stack.ops.post(`/orders/${id}/packed`).set('Idempotency-Key', randomUUID()).send({});
    expect(report.status).toBe(200);
    expect(report.body.by).toBe('test-ops');
    expect((await stack.waitForOrder(id)).status).toBe('completed');
    expect(stack.warehouse.ledger.count(`pick:${id}`)).toBe(1);
  });

  it('a cancel during the wait answers 200 cancelled within ~1 s: one pick cancel, stock released, invoice void', async () => {
    holdReports();
    const [, reservedBefore] = await stockOf(stack.db.prisma, 'TEE-BLK-M');
    const id = await placeOrder(stack, 2);
    await waitForOrderBody(stack, id, waiting);
    const started = performance.now();
    const res = await stack.http.post(`/orders/${id}/cancel`).set('Idempotency-Key', randomUUID()).send({
      reason: 'changed my mind',
    });
    const tookMs = performance.now() - started;
    console.log(`cancel during the wait answered ${res.status} in ${Math.round(tookMs)} ms`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('cancelled');
    expect(tookMs).toBeLessThan(1_500);
    expect(stack.warehouse.ledger.count(`pick-cancel:${id}`)).toBe(1);
    expect(stack.warehouse.ledger.effects(`pick-cancel:${id}`)[0]!.kind).toBe('pick.cancelled');
    expect((await stockOf(stack.db.prisma, 'TEE-BLK-M'))[1]).toBe(reservedBefore);
    const invoice = await stack.db.prisma.invoice.findUniqueOrThrow({ where: { orderId: id } });
    expect(invoice.status).toBe('void');
    expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(0);
    // Nothing waits for packing any more.
    const late = await reportPacked(stack, id);
    expect(late.status).toBe(409);
    expect(late.body.type).toBe(`${PROBLEMS}order-not-awaiting-packing`);
  });

  it('a cancel once picking started answers 409 with the reason; the order goes on and completes', async () => {
    holdReports();
    const id = await placeOrder(stack);
    await waitForOrderBody(stack, id, waiting);
    expect(stack.warehouse.act('startPicking', { reference: id }).status).toBe(200);
    const res = await stack.http.post(`/orders/${id}/cancel`).set('Idempotency-Key', randomUUID()).send({
      reason: 'too late?',
    });
    expect(res.status).toBe(409);
    expect(res.body.type).toBe(`${PROBLEMS}order-not-cancellable`);
    expect(res.body.detail).toMatch(/the warehouse started picking order .*can no longer be cancelled/);
    expect(stack.warehouse.ledger.count(`pick-cancel:${id}`)).toBe(0);
    await reportPacked(stack, id).expect(200);
    expect((await stack.waitForOrder(id)).status).toBe('completed');
  });

  it('a second report answers the same as the first; the same key again too', async () => {
    holdReports();
    const id = await placeOrder(stack);
    await waitForOrderBody(stack, id, waiting);
    const key = randomUUID();
    const first = await reportPacked(stack, id, key).expect(200);
    const again = await reportPacked(stack, id, key).expect(200);
    const other = await stack.ops.post(`/orders/${id}/packed`).set('Idempotency-Key', randomUUID()).send({});
    expect(other.status).toBe(200);
    const answer = (b: Record<string, unknown>) => [b.orderId, b.event, b.reportId, b.receivedAt, b.by];
    expect(answer(again.body)).toEqual(answer(first.body));
    expect(answer(other.body)).toEqual(answer(first.body));
    expect(first.body.reportId).toBe(`packed:test-warehouse:${key}`);
    await stack.waitForOrder(id);
    // After the workflow closed: the stored report answers.
    const closed = await reportPacked(stack, id).expect(200);
    expect(answer(closed.body)).toEqual(answer(first.body));
  });

  it('an early report (before the wait started) is kept and ends the wait at once', async () => {
    holdReports();
    // The pick request takes 1.5 s: the report comes while requestPick is still under way.
    stack.warehouse.injectFault({ mode: 'slow', delayMs: 1_500, keyPrefix: 'pick:' });
    const id = await placeOrder(stack);
    await waitForOrderBody(stack, id, (o) => o.status === 'confirmation_sent');
    const early = await reportPacked(stack, id).expect(200);
    expect(early.body.order.status).toBe('confirmation_sent');
    const order = await stack.waitForOrder(id);
    expect(order.status).toBe('completed');
    const event = await stack.db.prisma.orderEvent.findFirstOrThrow({ where: { orderId: id } });
    expect(event.reportId).toBe(early.body.reportId);
  });

  it('refuses reports without the scope, with a bad body, or for an unknown order', async () => {
    callBack();
    const id = await placeOrder(stack);
    const shop = await stack.http.post(`/orders/${id}/packed`).send({});
    expect(shop.status).toBe(403);
    const bad = await reportPacked(stack, id, randomUUID(), { parcels: 0, extra: true });
    expect(bad.status).toBe(400);
    const unknown = await reportPacked(stack, randomUUID());
    expect(unknown.status).toBe(404);
    await stack.waitForOrder(id);
  });
});

describe('the deadline hook of the wait', () => {
  let stack: TestStack;
  /** The registry with awaitPacking given a fake deadline 2.5 s ahead of each wait. */
  const steps: StepDefinition[] = STEPS.map((s) =>
    s.kind === 'event'
      ? {
          ...s,
          deadlineWhat: 'the payment authorization expires',
          deadline: async () => new Date(Date.now() + 2_500).toISOString(),
        }
      : s,
  );
  beforeAll(async () => {
    stack = await startTestStack({
      steps,
      overrides: { WAREHOUSE_PACK_TIMEOUT: '1h', WAREHOUSE_PACK_DEADLINE_MARGIN: '1s' },
    });
    stack.warehouse.configure({ WAREHOUSE_PACK_DELAY_MS: '0' });
  });
  afterAll(async () => stack?.close());

  it('the bound is min(timeout, deadline − margin); passing it names the deadline', async () => {
    const id = await placeOrder(stack);
    const started = Date.now();
    await waitForOrderBody(stack, id, (o) => o.status === 'attention_required', 15_000);
    // 1 h of timeout, but the deadline (2.5 s) less the margin (1 s): about 1.5 s.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await failureReason(stack, id)).toMatch(
      /the payment authorization expires at \d{4}-.*Z; awaitPacking stopped waiting for the "packed" event 1 s before it/,
    );
    await reportPacked(stack, id).expect(200);
    expect((await stack.waitForOrder(id)).status).toBe('completed');
  });
});
