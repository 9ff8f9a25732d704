/**
 * The database steps of the registry (reserveInventory, createInvoice) and their compensations (releaseInventory,
 * voidInvoice), run through the kit (runDatabaseStep, runDatabaseCompensation) twice in a row (the second as attempt
 * 2, as a Temporal retry would) and twice concurrently: one effect either way. And the kit's `recorded` protocol on a
 * step defined here: it acts once, a re-run returns the recorded result. Activities run under
 * MockActivityEnvironment; the database is a real PostgreSQL (a fresh migrated database for this suite), because the
 * guarantees under test (unique keys, conditional updates, row locks) live in the database.
 */
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defineDatabaseStep, defineProviderStep, StepPhase, validateSteps } from '../../../activities/kit/define.js';
import { formatInvoiceNumber, type InvoiceData } from '../../../activities/steps/create-invoice.step.js';
import type { MovementOutcome } from '../../../activities/steps/reserve-inventory.step.js';
import { email } from '../../../providers/email.provider.js';
import { ErrorType } from '../../../workflows/errors.js';
import { FINAL_FAILURE_RANK } from '../../../workflows/order-plan.js';
import { insertOrder, seedTestCatalogue, stockOf } from '../../helpers/fixtures.js';
import { activityInfo as info, failureOf, kitTestBed, type KitTestBed } from '../../helpers/kit-test-bed.js';
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

/** The movements a reserveInventory or releaseInventory run reports. */
function movementsOf(result: { data?: unknown }): MovementOutcome[] {
  return (result.data as { movements: MovementOutcome[] }).movements;
}

/** The invoice a createInvoice run reports. */
function invoiceOf(result: { data?: unknown }): InvoiceData {
  return result.data as InvoiceData;
}

async function orderRow(orderId: string) {
  return tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } });
}

describe('reserveInventory', () => {
  it('reserves once when run twice in a row, writing its planned status', async () => {
    const [, reservedBefore] = await stockOf(tdb.prisma, 'TEE-BLK-M');
    const orderId = await insertOrder(tdb.prisma, [
      { sku: 'TEE-BLK-M', quantity: 2 },
      { sku: 'MUG-WHT', quantity: 1 },
    ]);
    const first = await bed.step('reserveInventory', orderId, info(orderId, 1));
    const second = await bed.step('reserveInventory', orderId, info(orderId, 2));
    expect(first).toMatchObject({ step: 'reserveInventory', data: { orderId } });
    expect(movementsOf(first).map((m) => m.applied)).toEqual([true, true]);
    expect(movementsOf(second).map((m) => m.applied)).toEqual([false, false]);
    const movements = await tdb.prisma.inventoryMovement.findMany({ where: { orderId }, orderBy: { id: 'asc' } });
    expect(movements.map((m) => [m.id, m.reservedDelta])).toEqual([
      [`reserve:${orderId}:MUG-WHT`, 1],
      [`reserve:${orderId}:TEE-BLK-M`, 2],
    ]);
    expect((await stockOf(tdb.prisma, 'TEE-BLK-M'))[1]).toBe(reservedBefore + 2);
    const order = await orderRow(orderId);
    expect([order.status, order.statusStep]).toEqual(['inventory_reserved', 10]);
  });

  it('reserves once when two runs race', async () => {
    const [, reservedBefore] = await stockOf(tdb.prisma, 'TEE-BLK-M');
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'TEE-BLK-M', quantity: 3 }]);
    const results = await Promise.all([
      bed.step('reserveInventory', orderId, info(orderId, 1)),
      bed.step('reserveInventory', orderId, info(orderId, 2)),
    ]);
    expect(results.map((r) => movementsOf(r)[0]!.applied).sort()).toEqual([false, true]);
    expect(await tdb.prisma.inventoryMovement.count({ where: { orderId } })).toBe(1);
    expect((await stockOf(tdb.prisma, 'TEE-BLK-M'))[1]).toBe(reservedBefore + 3);
  });

  it('fails permanently on insufficient stock and leaves no partial reservation (nor its status)', async () => {
    const before = [await stockOf(tdb.prisma, 'TEE-BLK-M'), await stockOf(tdb.prisma, 'CAP-RED')];
    const orderId = await insertOrder(tdb.prisma, [
      { sku: 'TEE-BLK-M', quantity: 1 }, // available
      { sku: 'CAP-RED', quantity: 4 }, // only 3 on hand
    ]);
    const failure = await failureOf(bed.step('reserveInventory', orderId));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.InsufficientStock, true]);
    expect(failure.message).toContain('CAP-RED: requested 4, available 3');
    expect(failure.details).toEqual([{ sku: 'CAP-RED', requested: 4, available: 3 }]);
    expect(await tdb.prisma.inventoryMovement.count({ where: { orderId } })).toBe(0);
    expect([await stockOf(tdb.prisma, 'TEE-BLK-M'), await stockOf(tdb.prisma, 'CAP-RED')]).toEqual(before);
    const order = await orderRow(orderId);
    expect([order.status, order.statusStep]).toEqual(['received', 0]);
  });

  it('never oversells when orders compete for the last units', async () => {
    await tdb.prisma.product.create({
      data: { sku: 'LAST-2', name: 'Last two', priceMinor: 100, currency: 'EUR', onHand: 2 },
    });
    const orders = await Promise.all([1, 2, 3].map(() => insertOrder(tdb.prisma, [{ sku: 'LAST-2', quantity: 1 }])));
    const outcomes = await Promise.allSettled(orders.map((orderId) => bed.step('reserveInventory', orderId)));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(2);
    expect(await stockOf(tdb.prisma, 'LAST-2')).toEqual([2, 2]);
  });

  it('fails permanently for an unknown order', async () => {
    const failure = await failureOf(bed.step('reserveInventory', '00000000-0000-4000-8000-000000000000'));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.NotFound, true]);
  });
});

describe('releaseInventory', () => {
  it('releases once what was reserved, when run twice and concurrently, and halts the order first', async () => {
    const [, reservedBefore] = await stockOf(tdb.prisma, 'MUG-WHT');
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 2 }]);
    await bed.step('reserveInventory', orderId);
    const concurrent = await Promise.all([
      bed.compensate('releaseInventory', orderId, info(orderId, 1)),
      bed.compensate('releaseInventory', orderId, info(orderId, 1)),
    ]);
    const again = await bed.compensate('releaseInventory', orderId, info(orderId, 2));
    expect(concurrent.map((r) => movementsOf(r)[0]!.applied).sort()).toEqual([false, true]);
    expect(again).toMatchObject({ compensation: 'releaseInventory', performed: true });
    expect(movementsOf(again).map((m) => m.applied)).toEqual([false]);
    const ids = (await tdb.prisma.inventoryMovement.findMany({ where: { orderId } })).map((m) => m.id).sort();
    expect(ids).toEqual([`release:${orderId}:MUG-WHT`, `reserve:${orderId}:MUG-WHT`]);
    expect((await stockOf(tdb.prisma, 'MUG-WHT'))[1]).toBe(reservedBefore);
    // A compensation marks the order halted (if nothing did before), so no late attempt of the step acts after it.
    const order = await orderRow(orderId);
    expect(order.haltedAt).toBeInstanceOf(Date);
    expect([order.haltReason, order.haltedRank]).toEqual(['compensating', 10]);
  });

  it('keeps the reason of an earlier halt, and releases nothing when nothing was reserved', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const stock = await stockOf(tdb.prisma, 'MUG-WHT');
    // Nothing committed: the rank is the new order's (0), so the workflow compensates only what it started.
    expect(await bed.halt(orderId, 'cancelled: customer asked')).toEqual({ outcome: 'halted', rank: 0 });
    const released = await bed.compensate('releaseInventory', orderId);
    expect(movementsOf(released)).toEqual([]);
    expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual(stock);
    expect((await orderRow(orderId)).haltReason).toBe('cancelled: customer asked');
  });

  it('fails permanently for an unknown order', async () => {
    const failure = await failureOf(bed.compensate('releaseInventory', '00000000-0000-4000-8000-000000000000'));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.NotFound, true]);
  });
});

describe('createInvoice', () => {
  it('returns the same invoice and number when run twice', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 2 }]);
    const first = invoiceOf(await bed.step('createInvoice', orderId, info(orderId, 1)));
    const second = invoiceOf(await bed.step('createInvoice', orderId, info(orderId, 2)));
    expect(first.created).toBe(true);
    expect(second).toEqual({ ...first, created: false });
    expect(first.invoiceNumber).toMatch(/^INV-\d{6}$/);
    expect([first.totalMinor, first.currency]).toEqual([2500, 'EUR']);
    const order = await orderRow(orderId);
    expect([order.status, order.statusStep]).toEqual(['invoiced', 20]);
  });

  it('creates one invoice and burns no number when two runs race', async () => {
    const counterBefore = (await tdb.prisma.invoiceCounter.findUniqueOrThrow({ where: { series: 'INV' } })).next;
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const [a, b] = (await Promise.all([bed.step('createInvoice', orderId), bed.step('createInvoice', orderId)])).map(
      invoiceOf,
    );
    expect(a!.invoiceNumber).toBe(b!.invoiceNumber);
    expect([a!.created, b!.created].sort()).toEqual([false, true]);
    expect(await tdb.prisma.invoice.count({ where: { orderId } })).toBe(1);
    const counterAfter = (await tdb.prisma.invoiceCounter.findUniqueOrThrow({ where: { series: 'INV' } })).next;
    expect(counterAfter).toBe(counterBefore + 1);
  });

  it('numbers invoices as formatInvoiceNumber does, wider past 999999', async () => {
    const { next } = await tdb.prisma.invoiceCounter.findUniqueOrThrow({ where: { series: 'INV' } });
    try {
      await tdb.prisma.invoiceCounter.update({ where: { series: 'INV' }, data: { next: 999_999 } });
      const a = invoiceOf(
        await bed.step('createInvoice', await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }])),
      );
      const b = invoiceOf(
        await bed.step('createInvoice', await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }])),
      );
      expect([a.invoiceNumber, b.invoiceNumber]).toEqual([
        formatInvoiceNumber('INV', 999_999),
        formatInvoiceNumber('INV', 1_000_000),
      ]);
      expect(b.invoiceNumber).toBe('INV-1000000');
    } finally {
      await tdb.prisma.invoiceCounter.update({ where: { series: 'INV' }, data: { next } });
    }
  });

  it('issues the invoice at the database clock', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const invoice = invoiceOf(await bed.step('createInvoice', orderId));
    const [{ now }] = await tdb.prisma.$queryRaw<Array<{ now: Date }>>`SELECT now() AS now`;
    expect(Math.abs(new Date(invoice.issuedAt).getTime() - now.getTime())).toBeLessThan(5_000);
  });

  it('voids once', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const { invoiceNumber } = invoiceOf(await bed.step('createInvoice', orderId));
    expect((await bed.compensate('voidInvoice', orderId)).data).toEqual({ invoiceNumber, voided: true });
    expect((await bed.compensate('voidInvoice', orderId)).data).toEqual({ invoiceNumber, voided: false });
    expect((await tdb.prisma.invoice.findUniqueOrThrow({ where: { orderId } })).status).toBe('void');
  });

  it('voids nothing when there is no invoice', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    expect((await bed.compensate('voidInvoice', orderId)).data).toEqual({ invoiceNumber: null, voided: false });
    expect(await tdb.prisma.invoice.count({ where: { orderId } })).toBe(0);
  });

  it('refuses a void invoice itself (never "already done"), even on an order that is not halted', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    await bed.step('createInvoice', orderId);
    await tdb.prisma.invoice.update({ where: { orderId }, data: { status: 'void' } });
    const refused = await failureOf(bed.step('createInvoice', orderId, info(orderId, 2)));
    expect([refused.type, refused.nonRetryable]).toEqual([ErrorType.OrderHalted, true]);
    expect(refused.message).toContain('is void');
  });
});

describe("a 'recorded' database step", () => {
  /** How many times the step's transaction ran (committed or not). */
  let runs = 0;
  let failNext = false;
  let slowMs = 0;
  /** Called once the step's transaction holds the order-row lock (it runs after the kit locked the row). */
  let onLocked: (() => void) | undefined;
  const stampOrder = defineDatabaseStep({
    name: 'stampOrder',
    phase: StepPhase.BeforePivot,
    status: 'stamped',
    label: 'Stamped',
    description: 'Inserts one stamp per order (not idempotent by nature: a second insert is a second stamp).',
    idempotency: 'recorded',
    async run({ orderId, tx }) {
      runs += 1;
      onLocked?.();
      const [stamp] = await tx.$queryRaw<Array<{ id: number }>>`
        INSERT INTO test_stamps (order_id) VALUES (${orderId}::uuid) RETURNING id`;
      if (slowMs) await tx.$queryRaw`SELECT pg_sleep(${slowMs / 1000}::float8)`;
      if (failNext) {
        failNext = false;
        throw new Error('the stamp machine jammed');
      }
      return { stampId: stamp!.id, note: 'stamped' };
    },
  });
  const steps = validateSteps([
    stampOrder,
    defineProviderStep({
      name: 'notifyCustomer',
      phase: StepPhase.Pivot,
      status: 'notified',
      label: 'Notified',
      description: 'Emails the customer.',
      provider: email,
      operation: 'send',
      key: (orderId) => `notify:${orderId}`,
      request: async () => ({ to: 'ada@example.com', subject: 'Hello', text: 'Stamped.' }),
    }),
  ]);
  let stamps: KitTestBed;

  beforeAll(async () => {
    await tdb.prisma.$executeRaw`CREATE TABLE test_stamps (id serial PRIMARY KEY, order_id uuid NOT NULL)`;
  });
  beforeEach(() => {
    runs = 0;
    failNext = false;
    slowMs = 0;
    onLocked = undefined;
    stamps = kitTestBed(tdb, { steps });
  });

  const stampCount = async (orderId: string) =>
    Number(
      (
        await tdb.prisma.$queryRaw<Array<{ n: bigint }>>`
          SELECT count(*) AS n FROM test_stamps WHERE order_id = ${orderId}::uuid`
      )[0]!.n,
    );
  const recorded = (orderId: string) => tdb.prisma.orderStepResult.findMany({ where: { orderId } });

  /** Runs attempt 1, and attempt 2 once attempt 1 holds the order-row lock (for `slowMs` more), as they race. */
  async function race(orderId: string) {
    slowMs = 300;
    const locked = new Promise<void>((resolve) => (onLocked = resolve));
    const first = stamps.step('stampOrder', orderId, info(orderId, 1));
    await locked;
    onLocked = undefined;
    const second = stamps.step('stampOrder', orderId, info(orderId, 2));
    return Promise.allSettled([first, second]);
  }

  it('acts once; a re-run returns the recorded result without running its transaction again', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const first = await stamps.step('stampOrder', orderId, info(orderId, 1));
    expect(first).toEqual({
      step: 'stampOrder',
      performed: true,
      data: { stampId: expect.any(Number), note: 'stamped' },
    });
    const order = await orderRow(orderId);
    expect([order.status, order.statusStep]).toEqual(['stamped', 10]);

    const second = await stamps.step('stampOrder', orderId, info(orderId, 2));
    expect(second).toEqual({ ...first, performed: false });
    expect(runs).toBe(1);
    expect(await stampCount(orderId)).toBe(1);
    expect((await recorded(orderId)).map((r) => [r.step, r.result])).toEqual([['stampOrder', first.data]]);
  });

  it('returns the recorded result even once the order is halted or final', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const first = await stamps.step('stampOrder', orderId);
    expect(await stamps.halt(orderId, 'cancelled: test')).toEqual({ outcome: 'halted', rank: expect.any(Number) });
    expect(await stamps.step('stampOrder', orderId, info(orderId, 2))).toEqual({ ...first, performed: false });
    await stamps.kit('setOrderStatus', { orderId, status: 'cancelled', rank: FINAL_FAILURE_RANK });
    expect(await stamps.step('stampOrder', orderId, info(orderId, 3))).toEqual({ ...first, performed: false });
    expect(runs).toBe(1);
  });

  it('refuses an order that is final or halted before it ran, running nothing', async () => {
    const closed = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    await stamps.kit('setOrderStatus', { orderId: closed, status: 'failed', rank: FINAL_FAILURE_RANK });
    const refused = await failureOf(stamps.step('stampOrder', closed));
    expect([refused.type, refused.nonRetryable, refused.details?.[0]]).toEqual([
      ErrorType.OrderClosed,
      true,
      { status: 'failed' },
    ]);

    const stopped = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    await stamps.halt(stopped, 'cancelled: before the stamp');
    const haltedFailure = await failureOf(stamps.step('stampOrder', stopped));
    expect([haltedFailure.type, haltedFailure.nonRetryable, haltedFailure.details?.[0]]).toEqual([
      ErrorType.OrderHalted,
      true,
      { haltReason: 'cancelled: before the stamp' },
    ]);
    expect(runs).toBe(0);
    expect(await recorded(closed)).toEqual([]);
    expect(await recorded(stopped)).toEqual([]);
  });

  it('records nothing when its transaction fails: the retry acts', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    failNext = true;
    await expect(stamps.step('stampOrder', orderId, info(orderId, 1))).rejects.toThrow('the stamp machine jammed');
    expect(await stampCount(orderId)).toBe(0);
    expect(await recorded(orderId)).toEqual([]);
    expect((await orderRow(orderId)).status).toBe('received');

    const retry = await stamps.step('stampOrder', orderId, info(orderId, 2));
    expect(retry.performed).toBe(true);
    expect(await stampCount(orderId)).toBe(1);
  });

  it('acts once when two runs race: one commits, the other rolls back and its retry returns the recorded result', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const outcomes = await race(orderId);
    const results = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    const winner = results.find((r) => r.performed);
    expect(results.filter((r) => r.performed)).toHaveLength(1);
    for (const o of outcomes) {
      // A loser fails retryably (not an ApplicationFailure: the retry profile retries it).
      if (o.status === 'rejected') expect(o.reason).not.toBeInstanceOf(ApplicationFailure);
    }
    expect(await stampCount(orderId)).toBe(1);
    expect(await recorded(orderId)).toHaveLength(1);
    const retry = await stamps.step('stampOrder', orderId, info(orderId, 3));
    expect(retry).toEqual({ ...winner, performed: false });
  });

  // The run that waited for the order-row lock reads the recorded result after the wait (in a statement of its own,
  // whose snapshot is taken after the lock), so it returns it instead of running the step's transaction again.
  it('a run that waited for the lock returns the recorded result without running the step again', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const outcomes = await race(orderId);
    expect(outcomes.map((o) => (o.status === 'fulfilled' ? o.value.performed : o.reason))).toEqual([true, false]);
    expect(runs).toBe(1);
  });

  it('fails permanently for an unknown order', async () => {
    const failure = await failureOf(stamps.step('stampOrder', '00000000-0000-4000-8000-000000000000'));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.NotFound, true]);
    expect(runs).toBe(0);
  });
});

describe("a 'byNature' database step with a compensation", () => {
  // No guard of its own against re-acting after its compensation (unlike reserveInventory's `released` check or
  // createInvoice's `void` check): the kit's halt fence is all that stops a late re-run.
  const awardPoints = defineDatabaseStep({
    name: 'awardPoints',
    phase: StepPhase.BeforePivot,
    status: 'points_awarded',
    label: 'Points awarded',
    description: 'Awards loyalty points once per order.',
    idempotency: { byNature: 'the order id is the natural key of test_points' },
    async run({ orderId, tx }) {
      const inserted = await tx.$executeRaw`
        INSERT INTO test_points (order_id, points) VALUES (${orderId}::uuid, 10) ON CONFLICT (order_id) DO NOTHING`;
      return { awarded: inserted === 1 };
    },
    compensation: {
      kind: 'database',
      name: 'revokePoints',
      description: 'Revokes the points.',
      async run({ orderId, tx }) {
        return { revoked: (await tx.$executeRaw`DELETE FROM test_points WHERE order_id = ${orderId}::uuid`) === 1 };
      },
    },
  });
  const steps = validateSteps([
    awardPoints,
    defineProviderStep({
      name: 'notifyCustomer',
      phase: StepPhase.Pivot,
      status: 'notified',
      label: 'Notified',
      description: 'Emails the customer.',
      provider: email,
      operation: 'send',
      key: (orderId) => `notify:${orderId}`,
      request: async () => ({ to: 'ada@example.com', subject: 'Hello', text: 'Points.' }),
    }),
  ]);
  let points: KitTestBed;

  beforeAll(async () => {
    await tdb.prisma.$executeRaw`CREATE TABLE test_points (order_id uuid PRIMARY KEY, points int NOT NULL)`;
  });
  beforeEach(() => {
    points = kitTestBed(tdb, { steps });
  });

  const pointsOf = async (orderId: string) =>
    (
      await tdb.prisma.$queryRaw<Array<{ points: number }>>`
        SELECT points FROM test_points WHERE order_id = ${orderId}::uuid`
    ).map((r) => r.points);

  it('re-runs as a no-op while the order is open', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    expect((await points.step('awardPoints', orderId, info(orderId, 1))).data).toEqual({ awarded: true });
    expect((await points.step('awardPoints', orderId, info(orderId, 2))).data).toEqual({ awarded: false });
    expect(await pointsOf(orderId)).toEqual([10]);
  });

  it('a late re-run after its compensation is refused by the halt fence and does not act again', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    await points.step('awardPoints', orderId, info(orderId, 1));
    expect((await points.compensate('revokePoints', orderId)).data).toEqual({ revoked: true });
    expect(await pointsOf(orderId)).toEqual([]);

    // e.g. an attempt that waited for the order-row lock while the compensation held it
    const late = await failureOf(points.step('awardPoints', orderId, info(orderId, 2)));
    expect([late.type, late.nonRetryable]).toEqual([ErrorType.OrderHalted, true]);
    expect(await pointsOf(orderId)).toEqual([]);
  });
});
