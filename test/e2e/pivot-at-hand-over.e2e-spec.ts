/**
 * The point of no return is the hand-over to the carrier (issue 23): on the real dev server, the real API, worker,
 * activities and simulators, with the registry's steps (two of them held by the suite at will).
 * - A cancel after the confirmation went out and before the shipment: 200 `cancelled`, compensated newest first (the
 *   cancellation notice, then the invoice voided, then the stock released), exactly one `order-cancellation:<id>`
 *   email at the simulator, no shipment.
 * - A cancel once the order shipped: 409 `order-not-cancellable` whose detail says the order has shipped; the order
 *   goes on and completes, with no cancellation notice.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STEPS } from '../../activities/steps/index.js';
import type { StepDefinition } from '../../activities/kit/define.js';
import { stockOf } from '../helpers/fixtures.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';
import { sleep, until } from '../helpers/poll.js';

const PROBLEMS = 'https://order-fulfilment.dev/problems/';

/** Steps whose request is held (built between claim and call) while their promise is pending, by step name. */
const holds = new Map<string, Promise<void>>();
const held: StepDefinition[] = STEPS.map((s): StepDefinition => {
  if (s.kind !== 'provider' || !['shipOrder', 'syncInvoiceToAccounting'].includes(s.name)) return s;
  return {
    ...s,
    request: async (ctx) => {
      const hold = holds.get(s.name);
      if (hold) await hold;
      return s.request(ctx);
    },
  };
});

/** Holds step `name` between its claim and its call until the returned function is called. */
function hold(name: string): () => void {
  let release!: () => void;
  holds.set(name, new Promise<void>((r) => (release = r)));
  return () => {
    holds.delete(name);
    release();
  };
}

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack({ steps: held, overrides: { CANCEL_WAIT_MS: '15000' } as never });
});
afterAll(async () => stack?.close());

async function placeOrder(sku = 'MUG-WHT', quantity = 2): Promise<string> {
  const res = await stack.http
    .post('/orders')
    .send({ customer: { email: 'grace@example.com', name: 'Grace' }, lines: [{ sku, quantity }] })
    .expect(202);
  return res.body.id as string;
}

const claim = (key: string) => stack.db.prisma.sideEffectClaim.findUnique({ where: { key } });
const emails = (key: string) => stack.email.ledger.count(key);

describe('the pivot is the hand-over to the carrier', () => {
  it('a cancel after the confirmation and before the shipment: cancelled, one notice, invoice void, stock back', async () => {
    const release = hold('shipOrder');
    try {
      const before = await stockOf(stack.db.prisma, 'MUG-WHT');
      const id = await placeOrder();
      const shipment = await until(
        () => claim(`shipment:${id}`),
        (c) => c?.status === 'claimed',
      );
      expect(shipment?.status).toBe('claimed');
      expect(emails(`order-confirmation:${id}`)).toBe(1);
      const shown = (await stack.ops.get(`/orders/${id}`).expect(200)).body as { status: string; cancellable: boolean };
      // The status of the step before the shipment in the registry (`packed` since the warehouse wait).
      const beforeShipment = STEPS[STEPS.findIndex((s) => s.name === 'shipOrder') - 1]!.status;
      expect([shown.status, shown.cancellable]).toEqual([beforeShipment, true]);

      const res = await stack.http
        .post(`/orders/${id}/cancel`)
        .set('Idempotency-Key', `cancel-confirmed-${id}`)
        .send({ reason: 'customer changed their mind' });
      expect([res.status, res.body.status]).toEqual([200, 'cancelled']);
      release();
      await sleep(300);

      // Exactly one cancellation notice, the confirmation once, no shipment at the carrier.
      expect(emails(`order-cancellation:${id}`)).toBe(1);
      expect(emails(`order-confirmation:${id}`)).toBe(1);
      expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(0);
      expect((await claim(`shipment:${id}`))?.status).toBe('cancelled');
      const notice = await claim(`order-cancellation:${id}`);
      expect([notice?.kind, notice?.status]).toEqual(['sendCancellationNotice', 'sent']);
      // Invoice void, stock back.
      const invoice = await stack.db.prisma.invoice.findUniqueOrThrow({ where: { orderId: id } });
      expect(invoice.status).toBe('void');
      expect(await stockOf(stack.db.prisma, 'MUG-WHT')).toEqual(before);
      // Newest first: the notice (claimed before its call) went out before the invoice was voided, which was voided
      // before the stock was released.
      const released = await stack.db.prisma.inventoryMovement.findMany({ where: { orderId: id, reason: 'release' } });
      expect(released).toHaveLength(1);
      expect(notice!.claimedAt.getTime()).toBeLessThanOrEqual(invoice.voidedAt!.getTime());
      expect(invoice.voidedAt!.getTime()).toBeLessThanOrEqual(released[0]!.createdAt.getTime());
      // The same key again: the same answer, still one notice.
      const again = await stack.http
        .post(`/orders/${id}/cancel`)
        .set('Idempotency-Key', `cancel-confirmed-${id}`)
        .send({ reason: 'customer changed their mind' });
      expect([again.status, again.body.status]).toEqual([200, 'cancelled']);
      expect(emails(`order-cancellation:${id}`)).toBe(1);
    } finally {
      release();
    }
  });

  it('a cancel once the order shipped: 409 order-not-cancellable saying it shipped; the order completes', async () => {
    const release = hold('syncInvoiceToAccounting');
    try {
      const id = await placeOrder();
      await until(
        () => claim(`accounting-invoice:${id}`),
        (c) => c?.status === 'claimed',
      );
      const res = await stack.http
        .post(`/orders/${id}/cancel`)
        .set('Idempotency-Key', `cancel-shipped-${id}`)
        .send({ reason: 'too late' });
      expect(res.status).toBe(409);
      expect(res.body.type).toBe(`${PROBLEMS}order-not-cancellable`);
      expect(res.body.orderStatus).toBe('shipped');
      expect(res.body.detail).toMatch(/cannot be cancelled: it has shipped/);
      release();
      const order = await stack.waitForOrder(id, 60_000);
      expect(order.status).toBe('completed');
      expect(emails(`order-cancellation:${id}`)).toBe(0);
      expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(1);
    } finally {
      release();
    }
  });
});
