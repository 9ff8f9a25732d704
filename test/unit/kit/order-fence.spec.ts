/**
 * What every step shares through the kit: the order-row fence (a halted or final order is refused before anything
 * happens, whatever the step), status writes at the plan's ranks (a late retry never moves an order backwards), the
 * kit's own setOrderStatus and planOrder, and the registry's plan run end to end. Activities run under
 * MockActivityEnvironment with fake providers; the database is a real PostgreSQL (a fresh migrated database for
 * this suite).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { reserveInventory } from '../../../activities/steps/reserve-inventory.step.js';
import { sendOrderConfirmation } from '../../../activities/steps/send-order-confirmation.step.js';
import type { InvoiceData } from '../../../activities/steps/create-invoice.step.js';
import type { MovementOutcome } from '../../../activities/steps/reserve-inventory.step.js';
import { ErrorType } from '../../../workflows/errors.js';
import { attentionRank, FINAL_FAILURE_RANK } from '../../../workflows/order-plan.js';
import { insertOrder, seedTestCatalogue, stockOf } from '../../helpers/fixtures.js';
import {
  activityInfo as info,
  failureOf,
  kitTestBed,
  PLAN,
  plannedStep,
  type KitTestBed,
} from '../../helpers/kit-test-bed.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.js';

let tdb: TestDatabase;
let bed: KitTestBed;

beforeAll(async () => {
  tdb = await createTestDatabase();
  await seedTestCatalogue(tdb.prisma);
});
afterAll(async () => tdb?.drop());
beforeEach(() => {
  bed = kitTestBed(tdb);
});

const orderRow = (orderId: string) => tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } });
const newOrder = () => insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
const rankOf = (step: string) => plannedStep(step).rank;

async function invoiced(): Promise<string> {
  const orderId = await newOrder();
  await bed.step('createInvoice', orderId);
  return orderId;
}

describe('the order fence: forward steps never act after a halt or on a final order', () => {
  it('reserveInventory refuses after the reservation was released (never "already done")', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 2 }]);
    const before = await stockOf(tdb.prisma, 'MUG-WHT');
    await bed.step('reserveInventory', orderId);
    await bed.compensate('releaseInventory', orderId);
    const late = await failureOf(bed.step('reserveInventory', orderId, info(orderId, 2)));
    expect([late.type, late.nonRetryable, late.details?.[0]]).toEqual([
      ErrorType.OrderHalted,
      true,
      { haltReason: 'compensating' },
    ]);
    expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual(before);

    // The step's own guard, on an order that was not halted: a released reservation is never re-made.
    const released = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    await tdb.prisma.inventoryMovement.create({
      data: {
        id: `release:${released}:MUG-WHT`,
        sku: 'MUG-WHT',
        orderId: released,
        reason: 'release',
        onHandDelta: 0,
        reservedDelta: 0,
      },
    });
    const own = await failureOf(bed.step('reserveInventory', released));
    expect([own.type, own.message]).toEqual([
      ErrorType.OrderHalted,
      expect.stringContaining('its reservation was released'),
    ]);
    expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual(before);
  });

  it('a late reserve racing its compensation leaves nothing reserved', async () => {
    for (let i = 0; i < 5; i++) {
      const orderId = await newOrder();
      const before = await stockOf(tdb.prisma, 'MUG-WHT');
      await Promise.allSettled([bed.step('reserveInventory', orderId), bed.compensate('releaseInventory', orderId)]);
      expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual(before);
    }
  });

  it('createInvoice refuses after voidInvoice', async () => {
    const orderId = await invoiced();
    await bed.compensate('voidInvoice', orderId);
    const again = await failureOf(bed.step('createInvoice', orderId, info(orderId, 2)));
    expect([again.type, again.nonRetryable]).toEqual([ErrorType.OrderHalted, true]);
    expect(await tdb.prisma.invoice.count({ where: { orderId } })).toBe(1);
  });

  it('every step refuses an order that is already final, changing nothing', async () => {
    const orderId = await invoiced();
    await bed.kit('setOrderStatus', {
      orderId,
      status: 'failed',
      rank: FINAL_FAILURE_RANK,
      failureReason: 'earlier run',
    });
    const before = await stockOf(tdb.prisma, 'MUG-WHT');
    for (const { name } of PLAN.steps) {
      const refused = await failureOf(bed.step(name, orderId));
      expect([name, refused.type, refused.nonRetryable, refused.details?.[0]]).toEqual([
        name,
        ErrorType.OrderClosed,
        true,
        { status: 'failed' },
      ]);
    }
    expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual(before);
    expect(await tdb.prisma.sideEffectClaim.count({ where: { key: { contains: orderId } } })).toBe(0);
    expect(Object.values(bed.fakes).flatMap((f) => f.calls)).toEqual([]);
    const order = await orderRow(orderId);
    expect([order.status, order.failureReason]).toEqual(['failed', 'earlier run']);
  });

  it('a late retry of an earlier step succeeds without moving the order back', async () => {
    const orderId = await invoiced();
    const invoice = (await bed.step('createInvoice', orderId, info(orderId, 2))).data as InvoiceData;
    await bed.step('reserveInventory', orderId);
    await bed.step('sendOrderConfirmation', orderId, info(orderId, 1, '3'));
    const stock = await stockOf(tdb.prisma, 'MUG-WHT');
    // Retries that arrive after the order moved on: the same result, no second effect, the status stays.
    const reserve = await bed.step('reserveInventory', orderId, info(orderId, 2, '1'));
    expect((reserve.data as { movements: MovementOutcome[] }).movements.map((m) => m.applied)).toEqual([false]);
    expect((await bed.step('createInvoice', orderId, info(orderId, 3, '2'))).data).toEqual({
      ...invoice,
      created: false,
    });
    expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual(stock);
    const order = await orderRow(orderId);
    expect([order.status, order.statusStep]).toEqual(['confirmation_sent', rankOf('sendOrderConfirmation')]);
  });

  it('after a halt every forward step refuses before it claims or changes anything', async () => {
    const orderId = await invoiced();
    // The rank the invoice wrote with its effect: the workflow compensates every step up to it.
    expect(await bed.halt(orderId, 'cancelled')).toEqual({ outcome: 'halted', rank: rankOf('createInvoice') });
    const before = await orderRow(orderId);
    for (const { name } of PLAN.steps) {
      const refused = await failureOf(bed.step(name, orderId, info(orderId, 2)));
      expect([name, refused.type, refused.nonRetryable]).toEqual([name, ErrorType.OrderHalted, true]);
    }
    expect(Object.values(bed.fakes).flatMap((f) => f.calls)).toEqual([]);
    const claims = await tdb.prisma.sideEffectClaim.findMany({ where: { key: { contains: orderId } } });
    // Every provider step up to the pivot (the confirmation, the shipment) is tombstoned.
    expect(claims.map((c) => [c.key.split(':')[0], c.status]).sort()).toEqual([
      ['order-confirmation', 'cancelled'],
      ['shipment', 'cancelled'],
    ]);
    expect(await tdb.prisma.inventoryMovement.count({ where: { orderId } })).toBe(0);
    const after = await orderRow(orderId);
    expect([after.status, after.statusStep, after.updatedAt]).toEqual([
      before.status,
      before.statusStep,
      before.updatedAt,
    ]);
  });

  it('runs the plan: each step writes its planned status and rank, the last one completes the order', async () => {
    const orderId = await newOrder();
    for (const step of PLAN.steps) {
      await bed.step(step.name, orderId);
      const order = await orderRow(orderId);
      expect([step.name, order.status, order.statusStep]).toEqual([step.name, step.status, step.rank]);
    }
    const order = await orderRow(orderId);
    expect([order.status, order.completedAt instanceof Date, order.haltedAt]).toEqual(['completed', true, null]);
    // One effect at each provider per provider step of the plan (the registry's, whatever steps it holds).
    const expected: Record<string, number> = Object.fromEntries(Object.values(bed.fakes).map((f) => [f.name, 0]));
    for (const step of PLAN.steps) if (step.provider) expected[step.provider] = (expected[step.provider] ?? 0) + 1;
    expect(expected).toMatchObject({ email: 1, carrier: 1, accounting: 1 });
    expect(Object.fromEntries(Object.values(bed.fakes).map((f) => [f.name, f.effects.size]))).toEqual(expected);
  });
});

describe('setOrderStatus', () => {
  it('ranks attention_required just below the status its step leads to', async () => {
    const orderId = await newOrder();
    const set = (status: string, rank: number, failureReason?: string) =>
      bed.kit('setOrderStatus', { orderId, status, rank, ...(failureReason ? { failureReason } : {}) });
    const ship = plannedStep('shipOrder');
    expect(await set('confirmation_sent', rankOf('sendOrderConfirmation'))).toEqual({ applied: true });
    expect(await set('attention_required', attentionRank(ship), 'carrier down')).toEqual({ applied: true });
    expect((await orderRow(orderId)).failureReason).toBe('carrier down');
    // A late write of an earlier status is ignored; the step's success after a retry wins and clears the reason.
    expect(await set('confirmation_sent', rankOf('sendOrderConfirmation'))).toEqual({ applied: false });
    expect(await set(ship.status, ship.rank)).toEqual({ applied: true });
    const order = await orderRow(orderId);
    expect([order.status, order.statusStep, order.failureReason]).toEqual(['shipped', 40, null]);
    // failed and cancelled never overwrite each other.
    expect(await set('cancelled', FINAL_FAILURE_RANK, 'customer')).toEqual({ applied: true });
    expect(await set('failed', FINAL_FAILURE_RANK, 'late failure')).toEqual({ applied: false });
    expect([(await orderRow(orderId)).status, (await orderRow(orderId)).failureReason]).toEqual([
      'cancelled',
      'customer',
    ]);
  });

  it('writes absolute values and ignores a stale (earlier-step) write', async () => {
    const orderId = await newOrder();
    const set = (status: string, rank: number) => bed.kit('setOrderStatus', { orderId, status, rank });
    expect(await set('invoiced', rankOf('createInvoice'))).toEqual({ applied: true });
    expect(await set('invoiced', rankOf('createInvoice'))).toEqual({ applied: true });
    expect(await set('inventory_reserved', rankOf('reserveInventory'))).toEqual({ applied: false });
    expect((await orderRow(orderId)).completedAt).toBeNull();
    await set('completed', rankOf('syncInvoiceToAccounting'));
    const order = await orderRow(orderId);
    expect(order.status).toBe('completed');
    expect(order.completedAt).toBeInstanceOf(Date);
  });

  it('stores at most 1000 characters of the reason', async () => {
    const orderId = await newOrder();
    await bed.kit('setOrderStatus', {
      orderId,
      status: 'failed',
      rank: FINAL_FAILURE_RANK,
      failureReason: 'x'.repeat(1500),
    });
    expect((await orderRow(orderId)).failureReason).toHaveLength(1000);
  });

  it('fails permanently for an unknown order', async () => {
    const failure = await failureOf(
      bed.kit('setOrderStatus', { orderId: '00000000-0000-4000-8000-000000000000', status: 'failed', rank: 1 }),
    );
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.NotFound, true]);
  });
});

describe('planOrder', () => {
  it("stores the registry's plan for an order stored without one, and returns the stored plan from then on", async () => {
    const orderId = await insertOrder(tdb.prisma, [
      { sku: 'MUG-WHT', quantity: 2 },
      { sku: 'TEE-BLK-M', quantity: 1 },
    ]);
    const plan = await bed.kit('planOrder', { orderId });
    expect(plan.steps.map((s) => [s.name, s.status, s.rank])).toEqual(
      PLAN.steps.map((s) => [s.name, s.status, s.rank]),
    );
    expect(plan.steps.find((s) => s.name === 'reserveInventory')?.summary).toBe('reserve 3 units of 2 SKUs');
    expect((await orderRow(orderId)).plan).toEqual(plan);

    // A registry changed since (a worker of a newer version): the order keeps the plan it started with.
    const newer = kitTestBed(tdb, { steps: [reserveInventory, sendOrderConfirmation] });
    expect(await newer.kit('planOrder', { orderId })).toEqual(plan);
  });

  it('fails permanently for an unknown order', async () => {
    const failure = await failureOf(bed.kit('planOrder', { orderId: '00000000-0000-4000-8000-000000000000' }));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.NotFound, true]);
  });
});
