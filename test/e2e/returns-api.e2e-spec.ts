/**
 * E2E: the returns API (issue 24, "Returns and refunds") on the real stack: the Nest API, a worker, the Temporal dev
 * server, PostgreSQL and the simulators over HTTP (the simulated warehouse reports orders packed).
 * - a return of 2 of 3 shipped units of a card order: 202 + Location, the same Idempotency-Key replays the same
 *   return; the carrier's label; a receipt that does not match → 422; the receipt with 1 damaged unit → completed,
 *   refund = 1 × unit price (damaged refund 0 %), one unit back in stock (on hand = the sum of the movements),
 *   `payments.refunded_minor` = the refund, one effect per key at every provider;
 * - what can be returned: 2 more units → 422; two requests for the last unit at once → one 202, one 422; a
 *   withdrawal before the receipt frees the unit again; no withdrawal, receipt or retry once the return ended (409);
 * - an order that has not shipped → 409; after the return window → 409; another client's key → 404;
 * - the sweeper starts the workflow of an accepted return whose start was lost.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readLedgers } from '../../scripts/lib/ledgers.js';
import { ReturnWorkflowSweeper } from '../../src/returns/return-workflow-sweeper.service.js';
import { isWithinShippedViolation } from '../../src/returns/returns.service.js';
import { testKeys } from '../helpers/api-keys.js';
import { TEST_CATALOGUE } from '../helpers/fixtures.js';
import { until } from '../helpers/poll.js';
import { startTestStack, type TestStack, waitForOrderBody } from '../helpers/test-stack.js';

const PROBLEMS = 'https://order-fulfilment.dev/problems/';
const SKU = 'TEE-BLK-M';
const PRICE = TEST_CATALOGUE[SKU][1];

type Body = Record<string, unknown>;

describe('returns API', () => {
  let stack: TestStack;
  /** A completed card order of 3 × TEE-BLK-M. */
  let cardOrder: string;
  /** A completed order on account of 1 × MUG-WHT. */
  let accountOrder: string;
  /** The first return (2 of the card order's 3 units). */
  let firstReturn: string;

  const warehouse = () => stack.as(testKeys().warehouse.key);
  const otherShop = () => stack.as(testKeys().otherShop.key);
  const returnBody = (quantity: number, sku = SKU) => ({
    lines: [{ sku, quantity }],
    reason: { code: 'wrong_size', text: 'Too small' },
  });
  const getReturn = async (id: string): Promise<Body> => (await stack.ops.get(`/returns/${id}`).expect(200)).body;
  const waitForReturn = async (id: string, ok: (r: Body) => boolean, timeoutMs = 30_000): Promise<Body> => {
    const last = await until(() => getReturn(id), ok, timeoutMs);
    if (!ok(last)) throw new Error(`return ${id} still ${String(last.status)} after ${timeoutMs} ms`);
    return last;
  };
  const placeCompleted = async (body: Body): Promise<string> => {
    const id = (await stack.http.post('/orders').send(body).expect(202)).body.id as string;
    const order = await stack.waitForOrder(id);
    expect(order.status).toBe('completed');
    return id;
  };

  beforeAll(async () => {
    stack = await startTestStack();
    [cardOrder, accountOrder] = await Promise.all([
      placeCompleted({
        customer: { email: 'ada@example.com', name: 'Ada' },
        lines: [{ sku: SKU, quantity: 3 }],
        payment: { method: 'pm_card_ok' },
      }),
      placeCompleted({ customer: { email: 'bob@example.com' }, lines: [{ sku: 'MUG-WHT', quantity: 1 }] }),
    ]);
  });
  afterAll(async () => stack?.close());

  it('a return of 2 of 3 units: label, receipt with 1 damaged, refund of 1 unit, 1 unit restocked, one effect per key', async () => {
    const [onHandBefore] = await stockOnHand();
    const key = randomUUID();
    const res = await stack.http.post(`/orders/${cardOrder}/returns`).set('Idempotency-Key', key).send(returnBody(2));
    expect(res.status).toBe(202);
    const id = res.body.id as string;
    firstReturn = id;
    expect(res.headers.location).toBe(`/returns/${id}`);
    expect(res.body).toMatchObject({
      orderId: cardOrder,
      rmaNumber: expect.stringMatching(/^RMA-\d{6}$/),
      reason: { code: 'wrong_size', text: 'Too small' },
      lines: [{ sku: SKU, quantity: 2, unitPriceMinor: PRICE, receivedQuantity: null, damagedQuantity: null }],
      refund: null,
      receivedAt: null,
      endedAt: null,
    });
    // The same Idempotency-Key again: the first answer, no second return.
    const again = await stack.http.post(`/orders/${cardOrder}/returns`).set('Idempotency-Key', key).send(returnBody(2));
    expect(again.status).toBe(202);
    expect(again.body.id).toBe(id);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(await stack.db.prisma.return.count({ where: { orderId: cardOrder } })).toBe(1);
    const row = await stack.db.prisma.return.findUniqueOrThrow({ where: { id } });
    expect(row).toMatchObject({ workflowId: `return-${id}`, damagedRefundPercent: 0, currency: 'EUR' });
    expect(row.workflowStartedAt).not.toBeNull();

    const labelled = await waitForReturn(id, (r) => r.status === 'label_created');
    expect(labelled.label).toEqual({ url: expect.stringMatching(/^https:\/\//), trackingNumber: expect.any(String) });
    expect(stack.carrier.ledger.count(`return-label:${id}`)).toBe(1);

    // A receipt that does not match the return is refused; nothing recorded.
    const tooMany = await warehouse()
      .post(`/returns/${id}/received`)
      .set('Idempotency-Key', randomUUID())
      .send({ lines: [{ sku: SKU, quantity: 3, damaged: 0 }] });
    expect(tooMany.status).toBe(422);
    expect(tooMany.body.type).toBe(`${PROBLEMS}return-receipt-invalid`);
    // A customer key may not report a receipt.
    await stack.http
      .post(`/returns/${id}/received`)
      .send({ lines: [{ sku: SKU, quantity: 2, damaged: 1 }] })
      .expect(403);

    const receiptKey = randomUUID();
    const receipt = { lines: [{ sku: SKU, quantity: 2, damaged: 1 }] };
    const received = await warehouse().post(`/returns/${id}/received`).set('Idempotency-Key', receiptKey).send(receipt);
    expect(received.status).toBe(200);
    expect(received.body.receipt).toMatchObject({
      returnId: id,
      lines: receipt.lines,
      by: testKeys().warehouse.client,
    });
    expect(received.body.return.id).toBe(id);
    const repeated = await warehouse().post(`/returns/${id}/received`).set('Idempotency-Key', receiptKey).send(receipt);
    expect(repeated.status).toBe(200);
    expect(repeated.body.receipt).toEqual(received.body.receipt);

    const done = await waitForReturn(id, (r) => r.status === 'completed');
    expect(done.lines).toEqual([
      { sku: SKU, quantity: 2, unitPriceMinor: PRICE, receivedQuantity: 2, damagedQuantity: 1 },
    ]);
    expect(done.refund).toMatchObject({
      amountMinor: PRICE,
      currency: 'EUR',
      refundId: expect.any(String),
      refundedAt: expect.any(String),
      creditNoteId: expect.any(String),
      creditedAt: expect.any(String),
    });
    expect(done.receivedAt).not.toBeNull();
    expect(done.endedAt).not.toBeNull();

    // One unit (the undamaged one) back in stock; on hand is still the sum of the ledger.
    const [onHandAfter, sumOfMovements] = await stockOnHand();
    expect(onHandAfter).toBe(onHandBefore + 1);
    expect(onHandAfter).toBe(sumOfMovements);
    const movements = await stack.db.prisma.inventoryMovement.findMany({
      where: { id: { startsWith: `return:${id}:` } },
    });
    expect(movements.map((m) => [m.id, m.reason, m.onHandDelta, m.reservedDelta])).toEqual([
      [`return:${id}:${SKU}`, 'return', 1, 0],
    ]);
    const payment = await stack.db.prisma.payment.findUniqueOrThrow({ where: { orderId: cardOrder } });
    expect(payment.refundedMinor).toBe(PRICE);

    // Exactly one effect per key of this return at every provider.
    const ledgers = await readLedgers(stack.sims.url);
    const ofReturn = Object.fromEntries(
      ledgers.flatMap((l) => Object.entries(l.countsByKey).filter(([k]) => k.includes(id))),
    );
    expect(ofReturn).toMatchObject({ [`refund:${id}`]: 1, [`credit-note:${id}`]: 1, [`return-label:${id}`]: 1 });
    expect(Object.values(ofReturn).every((n) => n === 1)).toBe(true);
    expect(stack.payments.ledger.effects(`refund:${id}`)[0]!.request).toMatchObject({ amountMinor: PRICE });

    // The order's returns, newest first; another client sees none of it.
    const list = await stack.http.get(`/orders/${cardOrder}/returns`).expect(200);
    expect(list.body.items.map((r: Body) => r.id)).toEqual([id]);
    await otherShop().get(`/returns/${id}`).expect(404);
    await otherShop().get(`/orders/${cardOrder}/returns`).expect(404);
  });

  it('an ended return: no withdrawal, receipt or retry (409)', async () => {
    const withdraw = await stack.http.post(`/returns/${firstReturn}/withdraw`).send({});
    expect(withdraw.status).toBe(409);
    expect(withdraw.body).toMatchObject({ type: `${PROBLEMS}return-not-withdrawable`, returnStatus: 'completed' });
    const receipt = await warehouse()
      .post(`/returns/${firstReturn}/received`)
      .send({ lines: [{ sku: SKU, quantity: 1, damaged: 0 }] });
    expect(receipt.status).toBe(409);
    expect(receipt.body).toMatchObject({ type: `${PROBLEMS}return-not-awaiting-receipt`, returnStatus: 'completed' });
    const retry = await stack.ops.post(`/returns/${firstReturn}/retry`).send({});
    expect(retry.status).toBe(409);
    expect(retry.body.type).toBe(`${PROBLEMS}return-not-awaiting-retry`);
    await stack.http.post(`/returns/${firstReturn}/retry`).send({}).expect(403);
  });

  it('at most what shipped: 2 more → 422; two requests for the last unit → one 202, one 422; a withdrawal frees it', async () => {
    const tooMany = await stack.http.post(`/orders/${cardOrder}/returns`).send(returnBody(2));
    expect(tooMany.status).toBe(422);
    expect(tooMany.body).toMatchObject({
      type: `${PROBLEMS}return-exceeds-shipped`,
      lines: [{ sku: SKU, requested: 2, shipped: 3, returnable: 1 }],
      errors: [{ path: 'lines.0.quantity', message: expect.stringContaining('1 returnable') }],
    });
    const notShippedSku = await stack.http.post(`/orders/${cardOrder}/returns`).send(returnBody(1, 'MUG-WHT'));
    expect(notShippedSku.status).toBe(422);
    expect(notShippedSku.body.errors).toEqual([
      { path: 'lines.0.sku', message: 'MUG-WHT was not shipped with this order' },
    ]);
    // Duplicate SKUs are a validation error.
    const duplicate = await stack.http.post(`/orders/${cardOrder}/returns`).send({
      lines: [
        { sku: SKU, quantity: 1 },
        { sku: SKU, quantity: 1 },
      ],
      reason: { code: 'other' },
    });
    expect(duplicate.status).toBe(400);
    expect(duplicate.body.type).toBe(`${PROBLEMS}validation-error`);

    const race = await Promise.all(
      [0, 1].map(() =>
        stack.http.post(`/orders/${cardOrder}/returns`).send({ ...returnBody(1), reason: { code: 'changed_mind' } }),
      ),
    );
    expect(race.map((r) => r.status).sort()).toEqual([202, 422]);
    const winner = race.find((r) => r.status === 202)!.body.id as string;
    expect(await stack.db.prisma.return.count({ where: { orderId: cardOrder } })).toBe(2);

    // Withdrawn before its receipt: ended, nothing refunded, and its unit can be returned again.
    await waitForReturn(winner, (r) => r.status === 'label_created');
    const withdrawn = await stack.http
      .post(`/returns/${winner}/withdraw`)
      .set('Idempotency-Key', randomUUID())
      .send({});
    expect(withdrawn.status).toBe(200);
    expect(withdrawn.body).toMatchObject({
      id: winner,
      status: 'withdrawn',
      refund: null,
      endedAt: expect.any(String),
    });
    // Again (another key): still withdrawn.
    const again = await stack.http.post(`/returns/${winner}/withdraw`).send();
    expect(again.status).toBe(200);
    expect(again.body.status).toBe('withdrawn');
    const late = await warehouse()
      .post(`/returns/${winner}/received`)
      .send({ lines: [{ sku: SKU, quantity: 1, damaged: 0 }] });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ type: `${PROBLEMS}return-not-awaiting-receipt`, returnStatus: 'withdrawn' });
    expect(stack.payments.ledger.count(`refund:${winner}`)).toBe(0);

    const freed = await stack.http.post(`/orders/${cardOrder}/returns`).send(returnBody(1));
    expect(freed.status).toBe(202);
    const list = await stack.http.get(`/orders/${cardOrder}/returns`).expect(200);
    expect(list.body.items.map((r: Body) => r.id)).toEqual([freed.body.id, winner, firstReturn]);
    // End it: nothing waits 30 days on the dev server.
    await waitForReturn(freed.body.id as string, (r) => r.status === 'label_created');
    await stack.ops
      .post(`/returns/${freed.body.id as string}/withdraw`)
      .send({})
      .expect(200);
  });

  it("another client's key: 404 for the order's returns, as if the order did not exist", async () => {
    const res = await otherShop().post(`/orders/${cardOrder}/returns`).send(returnBody(1));
    expect(res.status).toBe(404);
    expect(res.body.type).toBe(`${PROBLEMS}not-found`);
    await otherShop().post(`/returns/${firstReturn}/withdraw`).send({}).expect(404);
    await stack.http.post(`/orders/${randomUUID()}/returns`).send(returnBody(1)).expect(404);
    await stack.http.get(`/returns/${randomUUID()}`).expect(404);
  });

  it('an order that has not shipped: 409 order-not-shipped, nothing stored', async () => {
    stack.warehouse.configure({ WAREHOUSE_PACK_DELAY_MS: '0' }); // the warehouse does not report it packed
    try {
      const id = (
        await stack.http
          .post('/orders')
          .send({ customer: { email: 'cy@example.com' }, lines: [{ sku: SKU, quantity: 1 }] })
          .expect(202)
      ).body.id as string;
      await waitForOrderBody(stack, id, (o) => o.status === 'pick_requested');
      const res = await stack.http.post(`/orders/${id}/returns`).send(returnBody(1));
      expect(res.status).toBe(409);
      expect(res.body).toMatchObject({ type: `${PROBLEMS}order-not-shipped`, orderStatus: 'pick_requested' });
      expect(await stack.db.prisma.return.count({ where: { orderId: id } })).toBe(0);
      await stack.http.post(`/orders/${id}/cancel`).send({ reason: 'test over' }).expect(200);
    } finally {
      stack.warehouse.configure({ WAREHOUSE_PACK_DELAY_MS: '200' });
    }
  });

  it('the sweeper starts the workflow of an accepted return whose start was lost', async () => {
    const id = randomUUID();
    await stack.db.prisma.$executeRaw`
      INSERT INTO returns (id, order_id, client_id, status, reason_code, currency, damaged_refund_percent, workflow_id,
                           created_at)
      VALUES (${id}::uuid, ${accountOrder}::uuid, ${testKeys().shop.client}, 'requested', 'damaged', 'EUR', 0,
              ${`return-${id}`}, now() - interval '1 minute')`;
    await stack.db.prisma.$executeRaw`
      INSERT INTO return_lines (return_id, sku, quantity, unit_price_minor) VALUES (${id}::uuid, 'MUG-WHT', 1, 1250)`;
    const started = await stack.api.get(ReturnWorkflowSweeper).sweep();
    expect(started).toBeGreaterThanOrEqual(1);
    expect((await stack.db.prisma.return.findUniqueOrThrow({ where: { id } })).workflowStartedAt).not.toBeNull();
    await waitForReturn(id, (r) => r.status === 'label_created');
    await stack.http.post(`/returns/${id}/withdraw`).send({}).expect(200);
  });

  it('the check constraint refuses what the API would: more units than shipped (the 422 backstop)', async () => {
    const id = randomUUID();
    const insert = stack.db.prisma.$transaction(async (tx) => {
      await tx.$executeRaw`
        INSERT INTO returns (id, order_id, client_id, status, reason_code, currency, damaged_refund_percent, workflow_id)
        VALUES (${id}::uuid, ${accountOrder}::uuid, ${testKeys().shop.client}, 'requested', 'other', 'EUR', 0,
                ${`return-${id}`})`;
      await tx.$executeRaw`
        INSERT INTO return_lines (return_id, sku, quantity, unit_price_minor) VALUES (${id}::uuid, 'MUG-WHT', 2, 1250)`;
    });
    const err = await insert.then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).not.toBeNull();
    expect(isWithinShippedViolation(err)).toBe(true);
    expect(await stack.db.prisma.return.count({ where: { id } })).toBe(0);
  });

  it('the OpenAPI document describes the return operations and their problem types', async () => {
    const doc = (await stack.http.get('/docs-json').expect(200)).body as {
      paths: Record<string, Record<string, { operationId: string; responses: Record<string, unknown> }>>;
      components: { schemas: Record<string, unknown> };
    };
    const ops = Object.values(doc.paths).flatMap((p) => Object.values(p).map((o) => o.operationId));
    expect(ops).toEqual(
      expect.arrayContaining([
        'createReturn',
        'listOrderReturns',
        'getReturn',
        'reportReturnReceived',
        'withdrawReturn',
        'retryReturn',
      ]),
    );
    expect(Object.keys(doc.paths['/orders/{id}/returns']!.post!.responses)).toEqual(
      expect.arrayContaining(['202', '404', '409', '422']),
    );
    expect(Object.keys(doc.components.schemas)).toEqual(
      expect.arrayContaining(['Return', 'OrderNotShippedProblem', 'ReturnExceedsShippedProblem']),
    );
  });

  it('after the return window: 409 return-window-closed', async () => {
    await stack.db.prisma.$executeRaw`
      UPDATE shipments SET created_at = now() - interval '31 days' WHERE order_id = ${accountOrder}::uuid`;
    const res = await stack.http.post(`/orders/${accountOrder}/returns`).send(returnBody(1, 'MUG-WHT'));
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ type: `${PROBLEMS}return-window-closed`, windowDays: 30 });
  });

  it('a partial receipt: the units asked for and never received may be returned again', async () => {
    const order = await placeCompleted({
      customer: { email: 'cy@example.com' },
      lines: [{ sku: 'MUG-WHT', quantity: 2 }],
    });
    const first = (await stack.http.post(`/orders/${order}/returns`).send(returnBody(2, 'MUG-WHT')).expect(202)).body;
    await waitForReturn(first.id as string, (r) => r.status === 'label_created');
    // Nothing more while both units are asked for.
    await stack.http.post(`/orders/${order}/returns`).send(returnBody(1, 'MUG-WHT')).expect(422);
    await warehouse()
      .post(`/returns/${first.id as string}/received`)
      .send({ lines: [{ sku: 'MUG-WHT', quantity: 1, damaged: 0 }] })
      .expect(200);
    await waitForReturn(first.id as string, (r) => r.status === 'completed');
    // One came back: the other may be returned; two may not.
    const two = await stack.http.post(`/orders/${order}/returns`).send(returnBody(2, 'MUG-WHT'));
    expect(two.status).toBe(422);
    expect(two.body.lines).toEqual([{ sku: 'MUG-WHT', requested: 2, shipped: 2, returnable: 1 }]);
    await stack.http.post(`/orders/${order}/returns`).send(returnBody(1, 'MUG-WHT')).expect(202);
  });

  /** [on hand of SKU, the initial stock plus the sum of its movements' on-hand deltas]. */
  async function stockOnHand(): Promise<[number, number]> {
    const product = await stack.db.prisma.product.findUniqueOrThrow({ where: { sku: SKU } });
    const sum = await stack.db.prisma.inventoryMovement.aggregate({ where: { sku: SKU }, _sum: { onHandDelta: true } });
    return [product.onHand, TEST_CATALOGUE[SKU][2] + (sum._sum.onHandDelta ?? 0)];
  }
});
