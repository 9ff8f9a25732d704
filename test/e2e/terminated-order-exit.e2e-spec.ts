/**
 * Every doubt has an exit, also for an order whose workflow an operator terminated mid-way (the email simulator
 * down, the order invoiced, its confirmation being retried). The sweeper (short interval here) flags it
 * `attention_required` with the exit in its reason; the actions answer 409 naming the same exit; the exit, a
 * `temporal workflow reset --type LastWorkflowTask` with the real CLI against the test stack's server, starts a run
 * that goes on from where the old one stopped; the sweeper lifts its flag; and the order ends with one story: either
 * completed (one reservation, one issued invoice, one email, one shipment, one accounting record) or, cancelled after
 * the reset, compensated (stock released, the invoice void, no email).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTemporalCli } from '../../scripts/lib/temporal-cli.js';
import { stockOf } from '../helpers/fixtures.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';

let stack: TestStack;
let cli: string;

beforeAll(async () => {
  // The sweeper every 300 ms, on orders unchanged for 1 s.
  stack = await startTestStack({ overrides: { RECONCILE_INTERVAL_MS: '300', SWEEP_MIN_AGE_MS: '1000' } });
  const found = await findTemporalCli();
  if (!found) throw new Error('this test needs the Temporal CLI (TEMPORAL_CLI_PATH or .tools/; see README, Temporal)');
  cli = found;
});
afterAll(async () => stack?.close());

/** Polls GET /orders/:id until `done` holds; returns the body. */
async function waitFor(id: string, done: (order: Record<string, unknown>) => boolean, timeoutMs = 30_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const order = (await stack.ops.get(`/orders/${id}`).expect(200)).body as Record<string, unknown>;
    if (done(order)) return order;
    if (Date.now() > deadline) throw new Error(`order ${id}: still ${JSON.stringify(order.status)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Places an order with the email down, waits until it is invoiced and its confirmation is being retried. */
async function placeAndTerminate(sku: string): Promise<string> {
  stack.email.injectFault({ mode: 'unavailable', times: 1000, keyPrefix: 'order-confirmation:' });
  const res = await stack.http
    .post('/orders')
    .send({ customer: { email: 'ada@example.com' }, lines: [{ sku, quantity: 2 }] })
    .expect(202);
  const id = res.body.id as string;
  await waitFor(id, (o) => o.status === 'invoiced');
  const handle = stack.client.workflow.getHandle(`order-${id}`);
  const deadline = Date.now() + 20_000;
  while (!((await handle.describe()).raw.pendingActivities ?? []).some((a) => (a.attempt ?? 0) >= 2)) {
    if (Date.now() > deadline) throw new Error('the confirmation was not retried');
    await new Promise((r) => setTimeout(r, 200));
  }
  await promisify(execFile)(cli, [
    'workflow',
    'terminate',
    '--workflow-id',
    `order-${id}`,
    '--reason',
    'test: terminated mid-way',
    '--address',
    stack.config.TEMPORAL_ADDRESS,
  ]);
  return id;
}

/** The documented exit: a reset of the closed run to its last workflow task, with the real CLI. */
async function reset(id: string): Promise<void> {
  await promisify(execFile)(cli, [
    'workflow',
    'reset',
    '--workflow-id',
    `order-${id}`,
    '--type',
    'LastWorkflowTask',
    '--reason',
    'test: resume a terminated order',
    '--address',
    stack.config.TEMPORAL_ADDRESS,
  ]);
}

describe('an order whose workflow was terminated mid-way has an exit', () => {
  it('flagged with the exit named, reset, resumed and completed with one effect per key', async () => {
    const before = await stockOf(stack.db.prisma, 'MUG-WHT');
    const id = await placeAndTerminate('MUG-WHT');

    // The sweeper flags it, naming the exit; the public failure says it stopped; nothing offers a cancel.
    const flagged = await waitFor(id, (o) => o.status === 'attention_required');
    expect(flagged.cancellable).toBe(false);
    expect((flagged.failure as { message: string }).message).toMatch(/processing stopped/);
    const row = await stack.db.prisma.order.findUniqueOrThrow({ where: { id } });
    expect(row.failureReason).toContain('closed (terminated) while the order was invoiced');
    expect(row.failureReason).toContain(`temporal workflow reset --workflow-id order-${id} --type LastWorkflowTask`);
    for (const action of ['retry', 'cancel']) {
      const res = await stack.ops.post(`/orders/${id}/${action}`).send(action === 'cancel' ? { reason: 'x' } : {});
      expect(res.status).toBe(409);
      expect(res.body.detail).toContain(`temporal workflow reset --workflow-id order-${id} --type LastWorkflowTask`);
    }

    await reset(id);
    // The resumed run retries the confirmation; the sweeper lifts its flag while it runs.
    const resumed = await waitFor(id, (o) => o.status === 'invoiced');
    expect(resumed).toMatchObject({ failure: null, cancellable: true });

    stack.email.clearFaults();
    const done = await stack.waitForOrder(id, 60_000);
    expect(done.status).toBe('completed');
    expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(1);
    expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(1);
    expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(1);
    const invoices = await stack.db.prisma.invoice.findMany({ where: { orderId: id } });
    expect(invoices.map((i) => i.status)).toEqual(['issued']);
    expect(await stack.db.prisma.inventoryMovement.count({ where: { orderId: id, reason: 'reservation' } })).toBe(1);
    // Shipped once: two fewer on hand, nothing left reserved for it.
    expect(await stockOf(stack.db.prisma, 'MUG-WHT')).toEqual([before[0] - 2, before[1]]);
  }, 120_000);

  it('reset, then cancelled: compensated once, no email', async () => {
    const before = await stockOf(stack.db.prisma, 'TEE-BLK-M');
    const id = await placeAndTerminate('TEE-BLK-M');
    await waitFor(id, (o) => o.status === 'attention_required');
    await reset(id);
    await waitFor(id, (o) => o.status === 'invoiced' && o.cancellable === true);

    const res = await stack.ops.post(`/orders/${id}/cancel`).send({ reason: 'customer changed their mind' });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'cancelled', cancellable: false });
    stack.email.clearFaults();
    await stack.client.workflow.getHandle(`order-${id}`).result();
    expect(await stockOf(stack.db.prisma, 'TEE-BLK-M')).toEqual(before);
    const invoices = await stack.db.prisma.invoice.findMany({ where: { orderId: id } });
    expect(invoices.map((i) => i.status)).toEqual(['void']);
    expect(await stack.db.prisma.inventoryMovement.count({ where: { orderId: id, reason: 'reservation' } })).toBe(1);
    expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(0);
    expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(0);
    expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(0);
    expect((await stack.http.get(`/orders/${id}`).expect(200)).body.status).toBe('cancelled');
  }, 120_000);
});
