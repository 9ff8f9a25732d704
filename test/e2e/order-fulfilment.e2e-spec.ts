/**
 * The whole order path: POST /orders over HTTP → PostgreSQL → Temporal workflow on a real dev server →
 * five activities against real PostgreSQL and the provider simulators (email, carrier, accounting) over real HTTP. Effects are
 * counted where they land: the inventory ledger, the invoices table and the simulators' ledgers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stockOf } from '../helpers/fixtures.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';

let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => stack?.close());

async function placeOrder(lines: Array<{ sku: string; quantity: number }>): Promise<string> {
  const res = await stack.http
    .post('/orders')
    .send({ customer: { email: 'grace@example.com', name: 'Grace Hopper' }, lines })
    .expect(202);
  expect(res.headers.location).toBe(`/orders/${res.body.id}`);
  return res.body.id as string;
}

describe('order fulfilment, end to end', () => {
  it('completes an order with exactly one effect per step; shipping consumes the reservation', async () => {
    const [onHandBefore, reservedBefore] = await stockOf(stack.db.prisma, 'TEE-BLK-M');
    const id = await placeOrder([
      { sku: 'TEE-BLK-M', quantity: 2 },
      { sku: 'MUG-WHT', quantity: 1 },
    ]);
    const order = await stack.waitForOrder(id);
    expect(order.status).toBe('completed');
    expect(order.invoiceNumber).toMatch(/^INV-\d{6}$/);
    expect(order.totalMinor).toBe(2 * 1999 + 1250);
    expect(order.workflowId).toBe(`order-${id}`);
    expect(order.temporalUiUrl).toBe(`${stack.config.TEMPORAL_UI_URL}/namespaces/default/workflows/order-${id}`);

    const movements = await stack.db.prisma.inventoryMovement.findMany({
      where: { orderId: id },
      orderBy: { id: 'asc' },
    });
    expect(movements.map((m) => [m.id, m.onHandDelta, m.reservedDelta])).toEqual([
      [`reserve:${id}:MUG-WHT`, 0, 1],
      [`reserve:${id}:TEE-BLK-M`, 0, 2],
      [`ship:${id}:MUG-WHT`, -1, -1],
      [`ship:${id}:TEE-BLK-M`, -2, -2],
    ]);
    // Shipped: on hand lowered, the reservation consumed (reserved back where it was).
    expect(await stockOf(stack.db.prisma, 'TEE-BLK-M')).toEqual([onHandBefore - 2, reservedBefore]);
    const shipment = await stack.db.prisma.shipment.findUniqueOrThrow({ where: { orderId: id } });
    expect(shipment.trackingNumber).toMatch(/^1Z/);
    expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(1);
    expect(await stack.db.prisma.invoice.count({ where: { orderId: id } })).toBe(1);
    expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(1);
    expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(1);
    const sync = await stack.db.prisma.accountingSync.findUniqueOrThrow({ where: { orderId: id } });
    expect(order.accountingId).toBe(sync.accountingId);

    // The status row is written by the last activity; the workflow closes one workflow task later.
    const handle = stack.client.workflow.getHandle(`order-${id}`);
    await handle.result();
    expect((await handle.describe()).status.name).toBe('COMPLETED');
  });

  it('fails an order for more than the stock, with the reason, and leaves stock unchanged', async () => {
    const before = await stockOf(stack.db.prisma, 'CAP-RED');
    const id = await placeOrder([{ sku: 'CAP-RED', quantity: before[0] + 1 }]);
    const order = await stack.waitForOrder(id);
    expect(order.status).toBe('failed');
    // The public failure: a code, and the customer's own SKU and quantities; the internal reason stays inside.
    expect(order.failure).toEqual({
      code: 'insufficient_stock',
      message: `Not enough stock for CAP-RED (requested ${before[0] + 1}, available ${before[0] - before[1]}). Nothing was reserved.`,
    });
    expect(order).not.toHaveProperty('failureReason');
    const row = await stack.db.prisma.order.findUniqueOrThrow({ where: { id } });
    expect(row.failureReason).toContain('InsufficientStockError');
    expect(await stockOf(stack.db.prisma, 'CAP-RED')).toEqual(before);
    expect(await stack.db.prisma.inventoryMovement.count({ where: { orderId: id } })).toBe(0);
    expect(await stack.db.prisma.invoice.count({ where: { orderId: id } })).toBe(0);
    expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(0);
    const handle = stack.client.workflow.getHandle(`order-${id}`);
    await expect(handle.result()).rejects.toThrow();
    expect((await handle.describe()).status.name).toBe('FAILED');
  });

  it('sends one email when the provider succeeds but the response is lost', async () => {
    stack.email.injectFault({ mode: 'drop-response', times: 1 });
    const id = await placeOrder([{ sku: 'MUG-WHT', quantity: 1 }]);
    const order = await stack.waitForOrder(id);
    expect(order.status).toBe('completed');
    expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(1);
    const claim = await stack.db.prisma.sideEffectClaim.findUniqueOrThrow({
      where: { key: `order-confirmation:${id}` },
    });
    expect([claim.status, claim.attempts]).toEqual(['sent', 2]);
  });

  it('rides out a provider outage (503s) with one effect per key', async () => {
    stack.accounting.injectFault({ mode: 'unavailable', times: 2 });
    const id = await placeOrder([{ sku: 'TEE-BLK-M', quantity: 1 }]);
    const order = await stack.waitForOrder(id);
    expect(order.status).toBe('completed');
    expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(1);
  });

  it('keeps a confirmed order when accounting rejects it, and completes it after an operator retry', async () => {
    stack.accounting.injectFault({ mode: 'reject', times: 1 });
    const id = await placeOrder([{ sku: 'MUG-WHT', quantity: 1 }]);
    let order = (await stack.http.get(`/orders/${id}`)).body;
    for (let i = 0; i < 300 && order.status !== 'attention_required'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      order = (await stack.http.get(`/orders/${id}`)).body;
    }
    expect(order.status).toBe('attention_required');
    expect(order.failure.code).toBe('needs_attention');
    expect(JSON.stringify(order)).not.toContain('ProviderRejectedError');
    expect((await stack.db.prisma.order.findUniqueOrThrow({ where: { id } })).failureReason).toContain(
      'ProviderRejectedError',
    );
    expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(1);
    expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(0);
    expect((await stack.db.prisma.invoice.findUniqueOrThrow({ where: { orderId: id } })).status).toBe('issued');
    expect(await stack.db.prisma.inventoryMovement.count({ where: { orderId: id, reason: 'release' } })).toBe(0);

    const retry = await stack.ops.post(`/orders/${id}/retry`).send({ step: 'syncInvoiceToAccounting' }).expect(202);
    expect(retry.body).toMatchObject({ orderId: id, step: 'syncInvoiceToAccounting', retry: 1 });
    const done = await stack.waitForOrder(id);
    expect([done.status, done.failure]).toEqual(['completed', null]);
    expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(1);
    expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(1);

    const again = await stack.ops.post(`/orders/${id}/retry`).expect(409);
    expect(again.body.type).toBe('https://order-fulfilment.dev/problems/order-not-awaiting-retry');
  });
});
