/**
 * E2E: every doubt has an exit (issue 20) on the whole stack: the Nest API, a Worker on the suite's task queue of the
 * shared dev server, a fresh PostgreSQL database and the provider simulators over real HTTP, with a proxy in front of
 * the email provider that answers the first request of each key 502 without forwarding it. Effects are counted where
 * they land: the simulators' ledgers, the inventory, the invoices, the claims and the audit of operator decisions.
 * - A refusal of the same request under the same key settles the unknown outcome the 502 left: the order compensates.
 * - A cancel accepted while the confirmation is held between its claim and its call stops the call (the fence).
 * - An unknown outcome no provider answer settles (a 401 after the 502) gets an operator's audited resolution.
 * - A step after the point of no return that the carrier refuses for good can be closed with a reason.
 * - An order waiting on a compensation that failed for good is counted by its gauge and shown by its step track.
 * - Operator decisions keep the stock true (shipped by hand: the shipment and its movements; closed: the reservation
 *   released), a reused Idempotency-Key with another body is 422, and concurrent actions' losers say why.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StepDefinition } from '../../activities/kit/define.js';
import { registryPlan } from '../../activities/catalogue/plan.js';
import { STEPS } from '../../activities/steps/index.js';
import { orderStatusQuery, orderWorkflowId } from '../../workflows/order-fulfilment.contract.js';
import { COMPENSATION_ATTENTION_RANK } from '../../workflows/order-plan.js';
import { startFirstRequestProxy, type FirstRequestProxy } from '../helpers/first-request-proxy.js';
import { stockOf } from '../helpers/fixtures.js';
import { SHIPPED_STEPS } from '../helpers/shipped-steps.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';
import { sleep, until } from '../helpers/poll.js';

const PROBLEMS = 'https://order-fulfilment.dev/problems/';

/** The confirmation's body is built between its claim and its call: held there while `hold` is pending. */
let hold: Promise<void> | null = null;
const pivot = STEPS.find((s) => s.name === 'sendOrderConfirmation')!;
if (pivot.kind !== 'provider') throw new Error('the pivot is a provider step');
/** The registry's steps an order placed without `payment` (on account) runs: no conditional card steps. */
const ON_ACCOUNT = STEPS.filter((s) => !s.when);
const held: StepDefinition[] = STEPS.map((s): StepDefinition =>
  s === pivot
    ? {
        ...pivot,
        request: async (ctx) => {
          if (hold) await hold;
          return pivot.request(ctx);
        },
      }
    : s,
);

let proxy: FirstRequestProxy;
/** The same in front of the carrier: every shipment's first request is answered 502 (unknown, not performed). */
let carrierProxy: FirstRequestProxy;
let stack: TestStack;
/** What the suite measured, printed at the end. */
const figures: Record<string, number> = {};

beforeAll(async () => {
  proxy = await startFirstRequestProxy();
  carrierProxy = await startFirstRequestProxy();
  stack = await startTestStack({
    steps: held,
    overrides: {
      EMAIL_PROVIDER_URL: proxy.url,
      CARRIER_PROVIDER_URL: carrierProxy.url,
      CANCEL_WAIT_MS: '15000',
    } as never,
  });
  proxy.target = stack.email.url;
  carrierProxy.target = stack.carrier.url;
});
afterAll(async () => {
  console.info('doubts e2e figures (ms):', JSON.stringify(figures));
  await stack?.close();
  await proxy?.close();
  await carrierProxy?.close();
});

type Order = Record<string, unknown> & { id: string; status: string };

/** The entries of a step track for the five shipped steps, in the track's order. */
const shipped = (track: string[][]) => track.filter(([name]) => SHIPPED_STEPS.some((s) => s.name === name));

async function placeOrder(sku = 'MUG-WHT', quantity = 1): Promise<string> {
  const res = await stack.http
    .post('/orders')
    .send({ customer: { email: 'grace@example.com' }, lines: [{ sku, quantity }] })
    .expect(202);
  return res.body.id as string;
}

const getOrder = async (id: string) => (await stack.ops.get(`/orders/${id}`).expect(200)).body as Order;
const claim = (key: string) => stack.db.prisma.sideEffectClaim.findUnique({ where: { key } });
const confirmationKey = (id: string) => `order-confirmation:${id}`;
const emailsSent = (id: string) => stack.email.ledger.count(confirmationKey(id));

describe('a refusal of the same request under the same key settles the unknown outcome', () => {
  it('502 (not forwarded), then the provider refuses: the order compensates, nothing was sent', async () => {
    const before = await stockOf(stack.db.prisma, 'MUG-WHT');
    stack.email.injectFault({ mode: 'reject', keyPrefix: 'order-confirmation:', times: 1 });
    const id = await placeOrder();
    const order = await stack.waitForOrder(id, 60_000);
    expect(order.status).toBe('failed');
    expect(order.failure).toMatchObject({ code: 'provider_failed' });
    expect(proxy.requests.get(confirmationKey(id))).toBe(2);
    expect(emailsSent(id)).toBe(0);
    expect(await stockOf(stack.db.prisma, 'MUG-WHT')).toEqual(before);
    expect((await stack.db.prisma.invoice.findUniqueOrThrow({ where: { orderId: id } })).status).toBe('void');
    expect((await claim(confirmationKey(id)))?.status).toBe('cancelled');
  });
});

describe('a cancel stops a call that was not made yet', () => {
  it('the confirmation held between its claim and its call never calls: fenced at once, compensated', async () => {
    let release!: () => void;
    hold = new Promise<void>((r) => (release = r));
    try {
      const before = await stockOf(stack.db.prisma, 'MUG-WHT');
      const id = await placeOrder();
      await until(
        () => claim(confirmationKey(id)),
        (c) => c?.status === 'claimed',
      );
      const sentAt = Date.now();
      const cancel = stack.http
        .post(`/orders/${id}/cancel`)
        .set('Idempotency-Key', `cancel-held-${id}`)
        .send({ reason: 'customer asked' });
      const fenced = until(
        () => claim(confirmationKey(id)),
        (c) => c?.status === 'cancelled',
        20_000,
      ).then((c) => ({ claim: c, at: Date.now() }));
      const res = await cancel;
      const fence = await fenced;
      figures.cancelToFence = fence.at - sentAt;
      figures.cancelAnswer = Date.now() - sentAt;
      expect(fence.claim?.status).toBe('cancelled');
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('cancelled');
      release();
      await sleep(500);
      expect(emailsSent(id)).toBe(0);
      expect(proxy.requests.get(confirmationKey(id))).toBeUndefined();
      expect(await stockOf(stack.db.prisma, 'MUG-WHT')).toEqual(before);
      expect((await stack.db.prisma.invoice.findUniqueOrThrow({ where: { orderId: id } })).status).toBe('void');
      const handle = stack.client.workflow.getHandle(orderWorkflowId(id));
      await handle.result();
    } finally {
      release?.();
      hold = null;
    }
  });
});

describe('an operator resolves what no provider answer settles (audited)', () => {
  it('502, then 401: the order waits; resolve not_performed with who and why; it compensates', async () => {
    stack.email.injectFault({ mode: 'unauthorized', keyPrefix: 'order-confirmation:', times: 1 });
    const id = await placeOrder();
    const waiting = await until(
      () => getOrder(id),
      (o) => o.status === 'attention_required',
      60_000,
    );
    expect(waiting.status).toBe('attention_required');
    expect((await claim(confirmationKey(id)))?.status).toBe('sending');
    const state = await stack.client.workflow.getHandle(orderWorkflowId(id)).query(orderStatusQuery);
    expect(state.attention).toMatchObject({
      step: 'sendOrderConfirmation',
      outcomeUnknown: true,
      resolutions: ['performed', 'not_performed'],
      closable: false,
    });

    // A shop's key may not; the wrong step or a close is refused with what the order offers.
    await stack.http
      .post(`/orders/${id}/resolve`)
      .send({ step: 'sendOrderConfirmation', outcome: 'not_performed', reason: 'x' })
      .expect(403);
    const wrong = await stack.ops
      .post(`/orders/${id}/resolve`)
      .send({ step: 'shipOrder', outcome: 'not_performed', reason: 'x' })
      .expect(409);
    expect(wrong.body).toMatchObject({
      type: `${PROBLEMS}order-not-awaiting-resolution`,
      orderStatus: 'attention_required',
      waitingFor: 'sendOrderConfirmation',
      resolutions: ['performed', 'not_performed'],
      closable: false,
    });
    const close = await stack.ops.post(`/orders/${id}/close`).send({ reason: 'x' }).expect(409);
    expect(close.body).toMatchObject({ type: `${PROBLEMS}order-not-awaiting-resolution`, closable: false });

    const body = { step: 'sendOrderConfirmation', outcome: 'not_performed', reason: 'no such message at the provider' };
    const resolved = await stack.ops
      .post(`/orders/${id}/resolve`)
      .set('Idempotency-Key', `resolve-${id}`)
      .send(body)
      .expect(200);
    expect(resolved.body).toMatchObject({
      orderId: id,
      step: 'sendOrderConfirmation',
      outcome: 'not_performed',
      by: 'test-ops',
    });
    const final = await stack.waitForOrder(id, 60_000);
    expect(final.status).toBe('failed');
    expect(emailsSent(id)).toBe(0);
    const audit = await stack.db.prisma.orderResolution.findMany({ where: { orderId: id } });
    expect(audit.map((a) => [a.step, a.decision, a.decidedBy, a.reason, a.claimKey])).toEqual([
      ['sendOrderConfirmation', 'not_performed', 'test-ops', body.reason, confirmationKey(id)],
    ]);
    // The same key again: the same answer, nothing recorded twice.
    const again = await stack.ops
      .post(`/orders/${id}/resolve`)
      .set('Idempotency-Key', `resolve-${id}`)
      .send(body)
      .expect(200);
    expect(again.body).toMatchObject({ orderId: id, step: 'sendOrderConfirmation', outcome: 'not_performed' });
    expect(await stack.db.prisma.orderResolution.count({ where: { orderId: id } })).toBe(1);
  });
});

describe('after the point of no return a refused step may be closed with a reason', () => {
  it('accounting refuses for good: close ends the order closed (audited), the remaining steps do not run', async () => {
    stack.accounting.injectFault({ mode: 'reject', keyPrefix: 'accounting-invoice:', times: 1 });
    const id = await placeOrder();
    await until(
      () => getOrder(id),
      (o) => o.status === 'attention_required',
      60_000,
    );
    const res = await stack.ops
      .post(`/orders/${id}/close`)
      .set('Idempotency-Key', `close-${id}`)
      .send({ reason: 'address refused; refunded by hand' })
      .expect(200);
    expect(res.body).toMatchObject({ id, status: 'closed', failure: { code: 'closed' } });
    const track = res.body.steps.map((s: { name: string; state: string }) => [s.name, s.state]);
    // Whatever the registry holds (the extending check adds steps): the steps before the sync done, the rest skipped.
    const syncAt = ON_ACCOUNT.findIndex((s) => s.name === 'syncInvoiceToAccounting');
    expect(track).toEqual(ON_ACCOUNT.map((s, i) => [s.name, i < syncAt ? 'done' : 'skipped']));
    expect(shipped(track)).toEqual([
      ['reserveInventory', 'done'],
      ['createInvoice', 'done'],
      ['sendOrderConfirmation', 'done'],
      ['shipOrder', 'done'],
      ['syncInvoiceToAccounting', 'skipped'],
    ]);
    const again = await stack.ops
      .post(`/orders/${id}/close`)
      .set('Idempotency-Key', `close-${id}`)
      .send({ reason: 'address refused; refunded by hand' })
      .expect(200);
    expect(again.body.status).toBe('closed');
    expect(await stack.client.workflow.getHandle(orderWorkflowId(id)).result()).toMatchObject({
      status: 'closed',
      step: 'syncInvoiceToAccounting',
      by: 'test-ops',
    });
    expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(0);
    const audit = await stack.db.prisma.orderResolution.findMany({ where: { orderId: id } });
    expect(audit.map((a) => [a.step, a.decision, a.decidedBy])).toEqual([
      ['syncInvoiceToAccounting', 'closed', 'test-ops'],
    ]);
  });
});

describe('operator decisions keep the stock true, and a key names one decision', () => {
  const sku = 'TEE-BLK-M';
  const movements = async (id: string) =>
    (await stack.db.prisma.inventoryMovement.findMany({ where: { orderId: id }, orderBy: { id: 'asc' } })).map((m) => [
      m.id,
      m.reason,
      m.onHandDelta,
      m.reservedDelta,
    ]);
  /** An order whose shipment (the pivot) has an unknown outcome: 502 (not forwarded), then 401: a person decides. */
  const waitAtShipOrder = async (quantity: number) => {
    stack.carrier.injectFault({ mode: 'unauthorized', keyPrefix: 'shipment:', times: 1 });
    const id = await placeOrder(sku, quantity);
    const waiting = await until(
      () => getOrder(id),
      (o) => o.status === 'attention_required',
      60_000,
    );
    expect(waiting.status).toBe('attention_required');
    return id;
  };

  it('shipOrder resolved performed (shipped by hand) records its shipment and consumes the reservation; another body under the key is 422', async () => {
    const [onHand, reserved] = await stockOf(stack.db.prisma, sku);
    const id = await waitAtShipOrder(2);
    expect(await stockOf(stack.db.prisma, sku)).toEqual([onHand, reserved + 2]);

    const key = `ship-by-hand-${id}`;
    const body = {
      step: 'shipOrder',
      outcome: 'performed',
      reason: 'shipped with another carrier',
      providerId: 'DHL-1',
    };
    const resolved = await stack.ops.post(`/orders/${id}/resolve`).set('Idempotency-Key', key).send(body).expect(200);
    expect(resolved.body).toMatchObject({ orderId: id, step: 'shipOrder', outcome: 'performed', by: 'test-ops' });
    const final = await stack.waitForOrder(id, 60_000);
    expect(final.status).toBe('completed');

    // What shipOrder records when the carrier answers, recorded by the decision: the shipment and its movements.
    const updateId = `resolve:test-ops:${key}`;
    expect(await stack.db.prisma.shipment.findUnique({ where: { orderId: id } })).toMatchObject({
      carrierId: 'DHL-1',
      trackingNumber: `resolved:${updateId}`,
    });
    expect(await movements(id)).toEqual([
      [`reserve:${id}:${sku}`, 'reservation', 0, 2],
      [`ship:${id}:${sku}`, 'shipment', -2, -2],
    ]);
    expect(await stockOf(stack.db.prisma, sku)).toEqual([onHand - 2, reserved]);
    expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(0);

    // The same key with another body: 422 as POST /orders answers, nothing recorded or changed.
    for (const other of [
      { ...body, reason: 'another reason' },
      { ...body, providerId: 'UPS-2' },
      { step: 'shipOrder', outcome: 'performed', reason: body.reason },
    ]) {
      const reused = await stack.ops.post(`/orders/${id}/resolve`).set('Idempotency-Key', key).send(other).expect(422);
      expect(reused.body).toMatchObject({ type: `${PROBLEMS}idempotency-key-reused`, status: 422 });
      expect(reused.body.detail).toContain(`"${key}"`);
    }
    // The same key on another order: 422, and that order is not touched.
    const other = await placeOrder(sku, 1);
    const elsewhere = await stack.ops.post(`/orders/${other}/resolve`).set('Idempotency-Key', key).send(body);
    expect(elsewhere.status).toBe(422);
    expect(elsewhere.body.type).toBe(`${PROBLEMS}idempotency-key-reused`);
    expect((await stack.waitForOrder(other, 60_000)).status).toBe('completed');
    expect(await stack.db.prisma.orderResolution.count({ where: { orderId: other } })).toBe(0);

    // The same key with the same body: the first answer again.
    const again = await stack.ops.post(`/orders/${id}/resolve`).set('Idempotency-Key', key).send(body).expect(200);
    expect(again.body).toMatchObject({ orderId: id, step: 'shipOrder', outcome: 'performed', by: 'test-ops' });
    const audit = await stack.db.prisma.orderResolution.findMany({ where: { orderId: id } });
    expect(audit.map((a) => [a.id, a.decision, a.reason, a.providerId])).toEqual([
      [updateId, 'performed', body.reason, 'DHL-1'],
    ]);
    expect(await stockOf(stack.db.prisma, sku)).toEqual([onHand - 3, reserved]);
  });

  it('an unknown shipment is not closable (the pivot is not passed); resolved not performed it compensates: stock back, one notice; another reason under the key is 422', async () => {
    const [onHand, reserved] = await stockOf(stack.db.prisma, sku);
    const id = await waitAtShipOrder(3);
    const state = await stack.client.workflow.getHandle(orderWorkflowId(id)).query(orderStatusQuery);
    expect(state.attention).toMatchObject({
      step: 'shipOrder',
      outcomeUnknown: true,
      resolutions: ['performed', 'not_performed'],
      closable: false,
    });
    const key = `not-shipped-${id}`;
    const body = { step: 'shipOrder', outcome: 'not_performed', reason: 'carrier support: no shipment under this key' };
    await stack.ops.post(`/orders/${id}/resolve`).set('Idempotency-Key', key).send(body).expect(200);
    expect((await stack.waitForOrder(id, 60_000)).status).toBe('failed');
    expect(await movements(id)).toEqual([
      [`release:${id}:${sku}`, 'release', 0, -3],
      [`reserve:${id}:${sku}`, 'reservation', 0, 3],
    ]);
    expect(await stockOf(stack.db.prisma, sku)).toEqual([onHand, reserved]);
    expect(await stack.db.prisma.shipment.findUnique({ where: { orderId: id } })).toBeNull();
    expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(0);
    expect(stack.email.ledger.count(`order-cancellation:${id}`)).toBe(1);

    const reused = await stack.ops
      .post(`/orders/${id}/resolve`)
      .set('Idempotency-Key', key)
      .send({ ...body, reason: 'another reason' })
      .expect(422);
    expect(reused.body.type).toBe(`${PROBLEMS}idempotency-key-reused`);
    const audit = await stack.db.prisma.orderResolution.findMany({ where: { orderId: id } });
    expect(audit.map((a) => [a.decision, a.reason])).toEqual([['not_performed', body.reason]]);
    expect(await stockOf(stack.db.prisma, sku)).toEqual([onHand, reserved]);
  });

  it('retry and two resolves sent at once: one wins, the others say the order no longer waits (409)', async () => {
    const id = await waitAtShipOrder(1);
    const answers = await Promise.all([
      stack.ops.post(`/orders/${id}/retry`).send({}),
      stack.ops.post(`/orders/${id}/resolve`).send({ step: 'shipOrder', outcome: 'performed', reason: 'by hand' }),
      stack.ops.post(`/orders/${id}/resolve`).send({ step: 'shipOrder', outcome: 'not_performed', reason: 'no' }),
    ]);
    const won = answers.filter((a) => a.status < 300);
    const lost = answers.filter((a) => a.status >= 300);
    expect(won).toHaveLength(1);
    expect(lost.map((a) => a.status)).toEqual([409, 409]);
    for (const loser of lost) {
      expect(loser.body.waitingFor).toBeNull();
      expect(loser.body.detail).not.toContain('waits for a retry of');
      expect(loser.body.detail).toMatch(/no longer waits for an operator|is not waiting for an operator|is already/);
    }
    expect(['completed', 'failed']).toContain((await stack.waitForOrder(id, 60_000)).status);
  });
});

describe('a compensation that failed for good is counted, and its order shows what waits', () => {
  it('order_fulfilment_compensation_failed_orders counts the orders waiting on voidInvoice; the track shows it', async () => {
    // What the workflow writes when voidInvoice fails for good (the workflow's side is in the workflow tests).
    const id = await placeOrder();
    await stack.waitForOrder(id, 60_000);
    await stack.db.prisma.order.update({
      where: { id },
      data: {
        status: 'attention_required',
        statusStep: COMPENSATION_ATTENTION_RANK,
        haltedAt: new Date(),
        haltedRank: registryPlan(ON_ACCOUNT).steps.find((s) => s.name === 'createInvoice')!.rank,
        failureReason:
          'compensation_failed: voidInvoice failed: ValidationError: invoice locked (the order halted: cancelled: x)',
      },
    });
    const metrics = (await stack.http.get('/metrics').expect(200)).text;
    const line = (compensation: string) =>
      metrics
        .split('\n')
        .find((l) => l.startsWith(`order_fulfilment_compensation_failed_orders{compensation="${compensation}"}`));
    expect(line('voidInvoice')).toMatch(/ 1$/);
    expect(line('releaseInventory')).toMatch(/ 0$/);
    const order = await getOrder(id);
    expect(order.failure).toMatchObject({ code: 'needs_attention' });
    const track = (order.steps as Array<{ name: string; state: string }>).map((s) => [s.name, s.state]);
    // Whatever the registry holds: the steps up to createInvoice undone (done when they have nothing to undo),
    // createInvoice waiting on voidInvoice, the rest skipped.
    const invoiceAt = ON_ACCOUNT.findIndex((s) => s.name === 'createInvoice');
    expect(track).toEqual(
      ON_ACCOUNT.map((s, i) => [
        s.name,
        i > invoiceAt ? 'skipped' : i === invoiceAt ? 'waiting' : s.compensation ? 'undone' : 'done',
      ]),
    );
    expect(shipped(track)).toEqual([
      ['reserveInventory', 'undone'],
      ['createInvoice', 'waiting'],
      ['sendOrderConfirmation', 'skipped'],
      ['shipOrder', 'skipped'],
      ['syncInvoiceToAccounting', 'skipped'],
    ]);
  });
});
