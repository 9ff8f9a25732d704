/**
 * Each activity run twice in a row (the second as attempt 2, as a Temporal retry would) and twice
 * concurrently: one effect either way. Activities run under MockActivityEnvironment with fake providers;
 * the database is a real PostgreSQL (a fresh migrated database for this suite), because the guarantees
 * under test (unique keys, conditional updates, row locks) live in the database.
 */
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import type { Info } from '@temporalio/activity';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createActivities, type OrderActivities } from '../../../activities/index.js';
import { formatInvoiceNumber } from '../../../activities/invoice.activities.js';
import { ErrorType } from '../../../workflows/errors.js';
import { statusRank } from '../../../workflows/order-fulfilment.contract.js';
import { FakeAccountingProvider, FakeCarrierProvider, FakeEmailProvider } from '../../helpers/fake-providers.js';
import { insertOrder, seedTestCatalogue, stockOf } from '../../helpers/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.js';

let tdb: TestDatabase;
let email: FakeEmailProvider;
let accounting: FakeAccountingProvider;
let acts: OrderActivities;

/** Activity info of attempt `attempt` of activity `activityId` in the order's workflow. */
function info(orderId: string, attempt = 1, activityId = '5'): Partial<Info> {
  return {
    attempt,
    activityId,
    workflowExecution: { workflowId: `order-${orderId}`, runId: 'run-1' },
  } as Partial<Info>;
}

function run<K extends keyof OrderActivities>(
  name: K,
  input: Parameters<OrderActivities[K]>[0],
  activityInfo: Partial<Info> = {},
): ReturnType<OrderActivities[K]> {
  const env = new MockActivityEnvironment(activityInfo);
  return env.run(acts[name] as (arg: typeof input) => ReturnType<OrderActivities[K]>, input) as ReturnType<
    OrderActivities[K]
  >;
}

async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

beforeAll(async () => {
  tdb = await createTestDatabase();
  await seedTestCatalogue(tdb.prisma);
});
afterAll(async () => tdb?.drop());
beforeEach(() => {
  email = new FakeEmailProvider();
  accounting = new FakeAccountingProvider();
  acts = createActivities({
    db: tdb.sql,
    email,
    accounting,
    carrier: new FakeCarrierProvider(),
    idempotencyRecords: { purgeExpired: async () => 0 },
    settings: { claimLeaseMs: 60_000 },
  });
});

async function invoiced(lines = [{ sku: 'MUG-WHT' as const, quantity: 1 }]): Promise<string> {
  const orderId = await insertOrder(tdb.prisma, lines);
  await run('createInvoice', { orderId });
  return orderId;
}

describe('reserveInventory', () => {
  it('reserves once when run twice in a row', async () => {
    const [, reservedBefore] = await stockOf(tdb.prisma, 'TEE-BLK-M');
    const orderId = await insertOrder(tdb.prisma, [
      { sku: 'TEE-BLK-M', quantity: 2 },
      { sku: 'MUG-WHT', quantity: 1 },
    ]);
    const first = await run('reserveInventory', { orderId }, info(orderId, 1));
    const second = await run('reserveInventory', { orderId }, info(orderId, 2));
    expect(first.movements.map((m) => m.applied)).toEqual([true, true]);
    expect(second.movements.map((m) => m.applied)).toEqual([false, false]);
    const movements = await tdb.prisma.inventoryMovement.findMany({ where: { orderId }, orderBy: { id: 'asc' } });
    expect(movements.map((m) => [m.id, m.reservedDelta])).toEqual([
      [`reserve:${orderId}:MUG-WHT`, 1],
      [`reserve:${orderId}:TEE-BLK-M`, 2],
    ]);
    expect((await stockOf(tdb.prisma, 'TEE-BLK-M'))[1]).toBe(reservedBefore + 2);
  });

  it('reserves once when two runs race', async () => {
    const [, reservedBefore] = await stockOf(tdb.prisma, 'TEE-BLK-M');
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'TEE-BLK-M', quantity: 3 }]);
    const results = await Promise.all([
      run('reserveInventory', { orderId }, info(orderId, 1)),
      run('reserveInventory', { orderId }, info(orderId, 2)),
    ]);
    expect(results.map((r) => r.movements[0]!.applied).sort()).toEqual([false, true]);
    expect(await tdb.prisma.inventoryMovement.count({ where: { orderId } })).toBe(1);
    expect((await stockOf(tdb.prisma, 'TEE-BLK-M'))[1]).toBe(reservedBefore + 3);
  });

  it('fails permanently on insufficient stock and leaves no partial reservation', async () => {
    const before = [await stockOf(tdb.prisma, 'TEE-BLK-M'), await stockOf(tdb.prisma, 'CAP-RED')];
    const orderId = await insertOrder(tdb.prisma, [
      { sku: 'TEE-BLK-M', quantity: 1 }, // available
      { sku: 'CAP-RED', quantity: 4 }, // only 3 on hand
    ]);
    const failure = await failureOf(run('reserveInventory', { orderId }));
    expect(failure.type).toBe(ErrorType.InsufficientStock);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('CAP-RED: requested 4, available 3');
    expect(await tdb.prisma.inventoryMovement.count({ where: { orderId } })).toBe(0);
    expect([await stockOf(tdb.prisma, 'TEE-BLK-M'), await stockOf(tdb.prisma, 'CAP-RED')]).toEqual(before);
  });

  it('never oversells when orders compete for the last units', async () => {
    await tdb.prisma.product.create({
      data: { sku: 'LAST-2', name: 'Last two', priceMinor: 100, currency: 'EUR', onHand: 2 },
    });
    const orders = await Promise.all([1, 2, 3].map(() => insertOrder(tdb.prisma, [{ sku: 'LAST-2', quantity: 1 }])));
    const outcomes = await Promise.allSettled(orders.map((orderId) => run('reserveInventory', { orderId })));
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(2);
    expect(await stockOf(tdb.prisma, 'LAST-2')).toEqual([2, 2]);
  });

  it('fails permanently for an unknown order', async () => {
    const failure = await failureOf(run('reserveInventory', { orderId: '00000000-0000-4000-8000-000000000000' }));
    expect(failure.type).toBe(ErrorType.NotFound);
    expect(failure.nonRetryable).toBe(true);
  });
});

describe('releaseInventory', () => {
  it('releases once what was reserved, when run twice and concurrently', async () => {
    const [, reservedBefore] = await stockOf(tdb.prisma, 'MUG-WHT');
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 2 }]);
    await run('reserveInventory', { orderId });
    await Promise.all([
      run('releaseInventory', { orderId }, info(orderId, 1)),
      run('releaseInventory', { orderId }, info(orderId, 1)),
    ]);
    await run('releaseInventory', { orderId }, info(orderId, 2));
    const ids = (await tdb.prisma.inventoryMovement.findMany({ where: { orderId } })).map((m) => m.id).sort();
    expect(ids).toEqual([`release:${orderId}:MUG-WHT`, `reserve:${orderId}:MUG-WHT`]);
    expect((await stockOf(tdb.prisma, 'MUG-WHT'))[1]).toBe(reservedBefore);
  });
});

describe('createInvoice', () => {
  it('returns the same invoice and number when run twice', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 2 }]);
    const first = await run('createInvoice', { orderId }, info(orderId, 1));
    const second = await run('createInvoice', { orderId }, info(orderId, 2));
    expect(first.created).toBe(true);
    expect(second).toEqual({ ...first, created: false });
    expect(first.invoiceNumber).toMatch(/^INV-\d{6}$/);
    expect(first.totalMinor).toBe(2500);
  });

  it('creates one invoice and burns no number when two runs race', async () => {
    const counterBefore = (await tdb.prisma.invoiceCounter.findUniqueOrThrow({ where: { series: 'INV' } })).next;
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const [a, b] = await Promise.all([run('createInvoice', { orderId }), run('createInvoice', { orderId })]);
    expect(a.invoiceNumber).toBe(b.invoiceNumber);
    expect([a.created, b.created].sort()).toEqual([false, true]);
    expect(await tdb.prisma.invoice.count({ where: { orderId } })).toBe(1);
    const counterAfter = (await tdb.prisma.invoiceCounter.findUniqueOrThrow({ where: { series: 'INV' } })).next;
    expect(counterAfter).toBe(counterBefore + 1);
  });

  it('numbers invoices as formatInvoiceNumber does, wider past 999999', async () => {
    const { next } = await tdb.prisma.invoiceCounter.findUniqueOrThrow({ where: { series: 'INV' } });
    try {
      await tdb.prisma.invoiceCounter.update({ where: { series: 'INV' }, data: { next: 999_999 } });
      const a = await run('createInvoice', {
        orderId: await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]),
      });
      const b = await run('createInvoice', {
        orderId: await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]),
      });
      expect([a.invoiceNumber, b.invoiceNumber]).toEqual([
        formatInvoiceNumber('INV', 999_999),
        formatInvoiceNumber('INV', 1_000_000),
      ]);
      expect(b.invoiceNumber).toBe('INV-1000000');
    } finally {
      await tdb.prisma.invoiceCounter.update({ where: { series: 'INV' }, data: { next } });
    }
  });

  it('voids once', async () => {
    const orderId = await invoiced();
    expect((await run('voidInvoice', { orderId })).voided).toBe(true);
    expect((await run('voidInvoice', { orderId })).voided).toBe(false);
    expect((await tdb.prisma.invoice.findUniqueOrThrow({ where: { orderId } })).status).toBe('void');
  });
});

describe('sendOrderConfirmation', () => {
  it('sends once when run twice in a row', async () => {
    const orderId = await invoiced();
    const first = await run('sendOrderConfirmation', { orderId }, info(orderId, 1));
    const second = await run('sendOrderConfirmation', { orderId }, info(orderId, 2));
    expect(first.sentNow).toBe(true);
    expect(second).toEqual({ ...first, sentNow: false });
    expect(email.calls.map((c) => c.key)).toEqual([`order-confirmation:${orderId}`]);
    const claim = await tdb.prisma.sideEffectClaim.findUniqueOrThrow({
      where: { key: `order-confirmation:${orderId}` },
    });
    expect([claim.status, claim.providerId]).toEqual(['sent', first.messageId]);
  });

  it('calls the provider once when two runs race; the loser retries later and finds it sent', async () => {
    const orderId = await invoiced();
    email.delayMs = 200;
    const outcomes = await Promise.allSettled([
      run('sendOrderConfirmation', { orderId }, info(orderId, 1)),
      run('sendOrderConfirmation', { orderId }, info(orderId, 1)),
    ]);
    expect(email.calls).toHaveLength(1);
    const rejected = outcomes.filter((o) => o.status === 'rejected');
    expect(rejected).toHaveLength(1);
    const failure = (rejected[0] as PromiseRejectedResult).reason as ApplicationFailure;
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.ClaimInProgress, false]);
    const retry = await run('sendOrderConfirmation', { orderId }, info(orderId, 2));
    expect(retry.sentNow).toBe(false);
    expect(email.calls).toHaveLength(1);
  });

  it("re-sends with the same key when a retry finds its own earlier attempt's claim (outcome unknown)", async () => {
    const orderId = await invoiced();
    email.dropNextResponse(); // sent, but the answer was lost
    const failure = await failureOf(run('sendOrderConfirmation', { orderId }, info(orderId, 1)));
    expect([failure.type, failure.nonRetryable, failure.details?.[0]]).toEqual([
      ErrorType.ProviderUnavailable,
      false,
      { status: undefined, mayHaveActed: true },
    ]);
    const claim = await tdb.prisma.sideEffectClaim.findUniqueOrThrow({
      where: { key: `order-confirmation:${orderId}` },
    });
    expect(claim.status).toBe('sending');
    // The halt fence cannot tombstone it: the provider may have acted.
    expect(await run('haltOrder', { orderId, reason: 'test' })).toMatchObject({ outcome: 'unknown' });
    const retry = await run('sendOrderConfirmation', { orderId }, info(orderId, 2));
    expect(retry.sentNow).toBe(true);
    expect(email.calls.map((c) => c.key)).toEqual([`order-confirmation:${orderId}`, `order-confirmation:${orderId}`]);
    expect(email.effects.size).toBe(1);
    expect((await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } })).status).toBe('confirmation_sent');
  });

  it('marks the claim failed after a definite 503, so a halt can tombstone it and nothing is ever sent', async () => {
    const orderId = await invoiced();
    email.failNext('unavailable', 1, 503);
    const failure = await failureOf(run('sendOrderConfirmation', { orderId }, info(orderId, 1)));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.ProviderUnavailable, false]);
    const key = `order-confirmation:${orderId}`;
    expect((await tdb.prisma.sideEffectClaim.findUniqueOrThrow({ where: { key } })).status).toBe('failed');
    expect(await run('haltOrder', { orderId, reason: 'cancelled: customer asked' })).toEqual({ outcome: 'halted' });
    expect((await tdb.prisma.sideEffectClaim.findUniqueOrThrow({ where: { key } })).status).toBe('cancelled');
    // A late retry of the confirmation (the provider is back) refuses and calls nothing.
    const late = await failureOf(run('sendOrderConfirmation', { orderId }, info(orderId, 2)));
    expect([late.type, late.nonRetryable]).toEqual([ErrorType.OrderHalted, true]);
    expect(email.calls).toHaveLength(1);
    expect(email.effects.size).toBe(0);
  });

  it('takes a failed claim again on retry and sends once', async () => {
    const orderId = await invoiced();
    email.failNext('unavailable', 2, 503);
    await failureOf(run('sendOrderConfirmation', { orderId }, info(orderId, 1)));
    await failureOf(run('sendOrderConfirmation', { orderId }, info(orderId, 2)));
    const sent = await run('sendOrderConfirmation', { orderId }, info(orderId, 3));
    expect(sent.sentNow).toBe(true);
    expect(email.effects.size).toBe(1);
    const claim = await tdb.prisma.sideEffectClaim.findUniqueOrThrow({
      where: { key: `order-confirmation:${orderId}` },
    });
    expect([claim.status, claim.attempts]).toEqual(['sent', 3]);
  });

  it('reclaims a claim whose owner died once the lease expired, and not before', async () => {
    const orderId = await invoiced();
    const key = `order-confirmation:${orderId}`;
    await tdb.prisma.sideEffectClaim.create({
      data: {
        key,
        kind: 'email',
        status: 'sending',
        owner: 'order-other/9#1',
        claimedAt: new Date(Date.now() - 5_000),
      },
    });
    const fresh = await failureOf(run('sendOrderConfirmation', { orderId }, info(orderId, 1)));
    expect(fresh.type).toBe(ErrorType.ClaimInProgress);
    expect(email.calls).toHaveLength(0);

    await tdb.prisma.sideEffectClaim.update({ where: { key }, data: { claimedAt: new Date(Date.now() - 61_000) } });
    // Two reclaimers at once (e.g. attempts of the same activity on two workers): exactly one wins.
    const results = await Promise.allSettled([
      run('sendOrderConfirmation', { orderId }, info(orderId, 1, '5')),
      run('sendOrderConfirmation', { orderId }, info(orderId, 1, '5')),
    ]);
    // The loser finds the claim in progress (retryable), or already sent when the winner finished first (then it
    // returns the winner's message without sending).
    const sentNow = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    expect(sentNow.filter((r) => r.sentNow)).toHaveLength(1);
    for (const r of results) {
      if (r.status === 'rejected') expect((r.reason as ApplicationFailure).type).toBe(ErrorType.ClaimInProgress);
    }
    expect(new Set(sentNow.map((r) => r.messageId)).size).toBe(1);
    expect(email.calls).toHaveLength(1);
    const claim = await tdb.prisma.sideEffectClaim.findUniqueOrThrow({ where: { key } });
    expect([claim.status, claim.attempts]).toEqual(['sent', 2]);
  });

  it('a later activity of the same workflow takes over a sending claim at once (operator retry after a crash)', async () => {
    const orderId = await invoiced();
    const key = `order-confirmation:${orderId}`;
    await tdb.prisma.sideEffectClaim.create({
      data: { key, kind: 'email', status: 'sending', owner: `order-${orderId}/3#2`, claimedAt: new Date() },
    });
    const sent = await run('sendOrderConfirmation', { orderId }, info(orderId, 1, '11'));
    expect(sent.sentNow).toBe(true);
    expect(email.effects.size).toBe(1);
    const claim = await tdb.prisma.sideEffectClaim.findUniqueOrThrow({ where: { key } });
    expect([claim.status, claim.owner]).toEqual(['sent', `order-${orderId}/11#1`]);
  });

  it('fails permanently on a provider rejection and marks the claim failed (definitely not sent)', async () => {
    const orderId = await invoiced();
    email.failNext('rejected');
    const failure = await failureOf(run('sendOrderConfirmation', { orderId }));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.ProviderRejected, true]);
    const claim = await tdb.prisma.sideEffectClaim.findUniqueOrThrow({
      where: { key: `order-confirmation:${orderId}` },
    });
    expect(claim.status).toBe('failed');
  });

  it('the halt fence reports a sent confirmation and changes nothing', async () => {
    const orderId = await invoiced();
    const sent = await run('sendOrderConfirmation', { orderId }, info(orderId, 1));
    expect(await run('haltOrder', { orderId, reason: 'cancelled' })).toEqual({
      outcome: 'sent',
      messageId: sent.messageId,
    });
    const order = await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } });
    expect([order.status, order.haltedAt]).toEqual(['confirmation_sent', null]);
  });

  it('halt and send race: either the email goes out and the halt says sent, or the halt wins and nothing is sent', async () => {
    for (let i = 0; i < 6; i++) {
      const orderId = await invoiced();
      email.delayMs = i % 2 ? 20 : 0;
      const [sendResult, halt] = await Promise.allSettled([
        run('sendOrderConfirmation', { orderId }, info(orderId, 1)),
        run('haltOrder', { orderId, reason: 'cancelled' }),
      ]);
      const haltOutcome = (halt as PromiseFulfilledResult<{ outcome: string }>).value.outcome;
      const effects = email.calls.filter((c) => c.key === `order-confirmation:${orderId}`).length;
      if (sendResult.status === 'fulfilled') {
        expect(['sent', 'unknown']).toContain(haltOutcome);
        expect(effects).toBe(1);
      } else {
        expect((sendResult.reason as ApplicationFailure).type).toBe(ErrorType.OrderHalted);
        expect(haltOutcome).toBe('halted');
        expect(effects).toBe(0);
      }
    }
  });
});

describe('syncInvoiceToAccounting', () => {
  it('upserts once when run twice in a row', async () => {
    const orderId = await invoiced();
    const first = await run('syncInvoiceToAccounting', { orderId }, info(orderId, 1));
    const second = await run('syncInvoiceToAccounting', { orderId }, info(orderId, 2));
    expect(second).toEqual({ ...first, syncedNow: false });
    expect(accounting.calls).toHaveLength(1);
    expect(accounting.calls[0]!.key).toBe(`accounting-invoice:${orderId}`);
    const sync = await tdb.prisma.accountingSync.findUniqueOrThrow({ where: { orderId } });
    expect(sync.accountingId).toBe(first.accountingId);
  });

  it('makes one effect when two runs race: same key, same body, one record', async () => {
    const orderId = await invoiced();
    accounting.delayMs = 100;
    const [a, b] = await Promise.all([
      run('syncInvoiceToAccounting', { orderId }, info(orderId, 1)),
      run('syncInvoiceToAccounting', { orderId }, info(orderId, 2)),
    ]);
    expect(a.accountingId).toBe(b.accountingId);
    expect(accounting.effects.size).toBe(1);
    expect(new Set(accounting.calls.map((c) => JSON.stringify(c.request))).size).toBe(1);
    expect(await tdb.prisma.accountingSync.count({ where: { orderId } })).toBe(1);
  });

  it('fails permanently when the order has no invoice', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const failure = await failureOf(run('syncInvoiceToAccounting', { orderId }));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.NotFound, true]);
  });
});

describe('the order tombstone: forward steps never act after a halt or on a final order', () => {
  it('reserveInventory refuses after the reservation was released (never "already done")', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 2 }]);
    const before = await stockOf(tdb.prisma, 'MUG-WHT');
    await run('reserveInventory', { orderId });
    await run('releaseInventory', { orderId });
    const late = await failureOf(run('reserveInventory', { orderId }, info(orderId, 2)));
    expect([late.type, late.nonRetryable]).toEqual([ErrorType.OrderHalted, true]);
    expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual(before);
  });

  it('a late reserve racing its compensation leaves nothing reserved', async () => {
    for (let i = 0; i < 5; i++) {
      const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
      const before = await stockOf(tdb.prisma, 'MUG-WHT');
      await Promise.allSettled([run('reserveInventory', { orderId }), run('releaseInventory', { orderId })]);
      expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual(before);
    }
  });

  it('createInvoice refuses a void invoice; syncInvoiceToAccounting never syncs one', async () => {
    const orderId = await invoiced();
    await run('voidInvoice', { orderId });
    const again = await failureOf(run('createInvoice', { orderId }, info(orderId, 2)));
    expect([again.type, again.nonRetryable]).toEqual([ErrorType.OrderHalted, true]);
    const sync = await failureOf(run('syncInvoiceToAccounting', { orderId }));
    expect(sync.type).toBe(ErrorType.OrderHalted);
    expect(accounting.calls).toHaveLength(0);
  });

  it('the first step refuses an order that is already final', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    await run('setOrderStatus', { orderId, status: 'failed', failureReason: 'earlier run' });
    const before = await stockOf(tdb.prisma, 'MUG-WHT');
    const refused = await failureOf(run('reserveInventory', { orderId }));
    expect([refused.type, refused.nonRetryable, refused.details?.[0]]).toEqual([
      ErrorType.OrderClosed,
      true,
      { status: 'failed' },
    ]);
    expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual(before);
  });

  it('a late retry of an earlier step succeeds without moving the order back', async () => {
    const orderId = await invoiced();
    const invoice = await run('createInvoice', { orderId }, info(orderId, 2));
    await run('reserveInventory', { orderId });
    await run('sendOrderConfirmation', { orderId }, info(orderId, 1, '3'));
    const stock = await stockOf(tdb.prisma, 'MUG-WHT');
    // Retries that arrive after the order moved on: the same result, no second effect, the status stays.
    const reserve = await run('reserveInventory', { orderId }, info(orderId, 2, '1'));
    expect(reserve.movements.map((m) => m.applied)).toEqual([false]);
    expect(await run('createInvoice', { orderId }, info(orderId, 3, '2'))).toEqual({ ...invoice, created: false });
    expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual(stock);
    const order = await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } });
    expect([order.status, order.statusStep]).toEqual(['confirmation_sent', statusRank('confirmation_sent')]);
  });

  it('after a halt every forward step refuses before it claims or changes anything', async () => {
    const orderId = await invoiced();
    expect(await run('haltOrder', { orderId, reason: 'cancelled' })).toEqual({ outcome: 'halted' });
    const before = await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } });
    for (const step of ['reserveInventory', 'createInvoice', 'sendOrderConfirmation', 'shipOrder'] as const) {
      const refused = await failureOf(run(step, { orderId }, info(orderId, 2)));
      expect([step, refused.type, refused.nonRetryable]).toEqual([step, ErrorType.OrderHalted, true]);
    }
    expect(email.calls).toHaveLength(0);
    const claims = await tdb.prisma.sideEffectClaim.findMany({ where: { key: { contains: orderId } } });
    expect(claims.map((c) => [c.key.split(':')[0], c.status])).toEqual([['order-confirmation', 'cancelled']]);
    expect(await tdb.prisma.inventoryMovement.count({ where: { orderId } })).toBe(0);
    const after = await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } });
    expect([after.status, after.statusStep, after.updatedAt]).toEqual([
      before.status,
      before.statusStep,
      before.updatedAt,
    ]);
  });

  it('forward steps write their own status, with the database clock', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    await run('reserveInventory', { orderId });
    expect((await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } })).status).toBe('inventory_reserved');
    const invoice = await run('createInvoice', { orderId });
    expect((await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } })).status).toBe('invoiced');
    const [{ now }] = await tdb.prisma.$queryRaw<Array<{ now: Date }>>`SELECT now() AS now`;
    expect(Math.abs(new Date(invoice.issuedAt).getTime() - now.getTime())).toBeLessThan(5_000);
    await run('syncInvoiceToAccounting', { orderId });
    const sync = await tdb.prisma.accountingSync.findUniqueOrThrow({ where: { orderId } });
    expect(Math.abs(sync.syncedAt.getTime() - now.getTime())).toBeLessThan(5_000);
    expect((await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } })).status).toBe('completed');
  });
});

describe('setOrderStatus', () => {
  it('ranks attention_required just before the status its step leads to', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    await run('setOrderStatus', { orderId, status: 'confirmation_sent' });
    expect(
      await run('setOrderStatus', { orderId, status: 'attention_required', step: 'shipOrder', failureReason: 'x' }),
    ).toEqual({ applied: true });
    // A late write of an earlier status is ignored; the step's success after a retry wins.
    expect(await run('setOrderStatus', { orderId, status: 'confirmation_sent' })).toEqual({ applied: false });
    expect(await run('setOrderStatus', { orderId, status: 'shipped' })).toEqual({ applied: true });
    const order = await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } });
    expect([order.status, order.failureReason]).toEqual(['shipped', null]);
    // failed and cancelled never overwrite each other.
    await run('setOrderStatus', { orderId, status: 'cancelled', failureReason: 'customer' });
    expect(await run('setOrderStatus', { orderId, status: 'failed' })).toEqual({ applied: false });
  });

  it('writes absolute values and ignores a stale (earlier-step) write', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    expect(await run('setOrderStatus', { orderId, status: 'invoiced' })).toEqual({ applied: true });
    expect(await run('setOrderStatus', { orderId, status: 'invoiced' })).toEqual({ applied: true });
    expect(await run('setOrderStatus', { orderId, status: 'inventory_reserved' })).toEqual({ applied: false });
    await run('setOrderStatus', { orderId, status: 'completed' });
    const order = await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } });
    expect(order.status).toBe('completed');
    expect(order.completedAt).toBeInstanceOf(Date);
  });
});
