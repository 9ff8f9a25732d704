/**
 * The provider steps of the registry (sendOrderConfirmation, the pivot; syncInvoiceToAccounting), the halt fence
 * (haltOrder) and provider compensations, run through the kit (runProviderStep, haltOrder, runProviderCompensation):
 * claim first, act second, once per idempotency key whatever the retries, races and failures. Activities run under
 * MockActivityEnvironment with the fake providers derived from the provider definitions; the database is a real
 * PostgreSQL (a fresh migrated database for this suite), because the guarantees under test (unique keys, conditional
 * updates, row locks) live in the database.
 */
import { type ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { activitiesByTaskQueue } from '../../../activities/index.js';
import {
  defineProviderCompensation,
  defineProviderStep,
  StepPhase,
  validateSteps,
} from '../../../activities/kit/define.js';
import { carrier } from '../../../providers/carrier.provider.js';
import { email } from '../../../providers/email.provider.js';
import { ErrorType } from '../../../workflows/errors.js';
import { FINAL_FAILURE_RANK } from '../../../workflows/order-plan.js';
import type { FakeProvider } from '../../helpers/fake-providers.js';
import { insertOrder, seedTestCatalogue } from '../../helpers/fixtures.js';
import {
  activityInfo as info,
  failureOf,
  fencedSteps,
  kitTestBed,
  plannedStep,
  type KitTestBed,
} from '../../helpers/kit-test-bed.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.js';

let tdb: TestDatabase;
let bed: KitTestBed;
let mail: FakeProvider;
let accounting: FakeProvider;

beforeAll(async () => {
  tdb = await createTestDatabase();
  await seedTestCatalogue(tdb.prisma);
});
afterAll(async () => tdb?.drop());
beforeEach(() => {
  bed = kitTestBed(tdb);
  mail = bed.fakes.email!;
  accounting = bed.fakes.accounting!;
});

const claimOf = (key: string) => tdb.prisma.sideEffectClaim.findUnique({ where: { key } });
const orderRow = (orderId: string) => tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } });

/** An order with its invoice (createInvoice run through the kit). */
async function invoiced(lines = [{ sku: 'MUG-WHT' as const, quantity: 1 }]): Promise<string> {
  const orderId = await insertOrder(tdb.prisma, lines);
  await bed.step('createInvoice', orderId);
  return orderId;
}

const confirmationKey = (orderId: string) => `order-confirmation:${orderId}`;

describe('sendOrderConfirmation (before the pivot: compensated by a cancellation notice)', () => {
  it('sends once when run twice in a row: one call, the claim sent under the step name, the planned status', async () => {
    const orderId = await invoiced();
    const first = await bed.step('sendOrderConfirmation', orderId, info(orderId, 1));
    const second = await bed.step('sendOrderConfirmation', orderId, info(orderId, 2));
    expect(first).toEqual({
      step: 'sendOrderConfirmation',
      performed: true,
      providerId: expect.stringMatching(/^msg_[0-9a-f]{24}$/),
      key: confirmationKey(orderId),
    });
    expect(second).toEqual({ ...first, performed: false });
    expect(mail.calls.map((c) => [c.operation, c.key])).toEqual([['send', confirmationKey(orderId)]]);
    const invoice = await tdb.prisma.invoice.findUniqueOrThrow({ where: { orderId } });
    expect(mail.calls[0]!.request).toMatchObject({
      to: 'ada@example.com',
      subject: `Order confirmed: invoice ${invoice.number}`,
      metadata: { orderId, invoiceNumber: invoice.number },
    });
    const claim = await claimOf(confirmationKey(orderId));
    expect([claim?.kind, claim?.status, claim?.providerId, claim?.attempts]).toEqual([
      'sendOrderConfirmation',
      'sent',
      first.providerId,
      1,
    ]);
    const order = await orderRow(orderId);
    expect([order.status, order.statusStep]).toEqual(['confirmation_sent', plannedStep('sendOrderConfirmation').rank]);
  });

  it('calls the provider once when two runs race; the loser retries later and finds it sent', async () => {
    const orderId = await invoiced();
    mail.delayMs = 200;
    const outcomes = await Promise.allSettled([
      bed.step('sendOrderConfirmation', orderId, info(orderId, 1)),
      bed.step('sendOrderConfirmation', orderId, info(orderId, 1)),
    ]);
    expect(mail.calls).toHaveLength(1);
    const rejected = outcomes.filter((o) => o.status === 'rejected');
    expect(rejected).toHaveLength(1);
    const failure = (rejected[0] as PromiseRejectedResult).reason as ApplicationFailure;
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.ClaimInProgress, false]);
    const retry = await bed.step('sendOrderConfirmation', orderId, info(orderId, 2));
    expect(retry.performed).toBe(false);
    expect(mail.calls).toHaveLength(1);
  });

  it("re-sends with the same key when a retry finds its own earlier attempt's claim (outcome unknown)", async () => {
    const orderId = await invoiced();
    mail.dropNextResponse(); // sent, but the answer was lost
    const failure = await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 1)));
    expect([failure.type, failure.nonRetryable, failure.details?.[0]]).toEqual([
      ErrorType.ProviderUnavailable,
      false,
      { status: undefined, mayHaveActed: true },
    ]);
    expect((await claimOf(confirmationKey(orderId)))?.status).toBe('sending');
    // The halt fence cannot tombstone it: the provider may have acted. It changes nothing and names the owner.
    expect(await bed.halt(orderId)).toEqual({
      outcome: 'unknown',
      step: 'sendOrderConfirmation',
      claimOwner: `order-${orderId}/run-1/5#1`,
    });
    expect((await orderRow(orderId)).haltedAt).toBeNull();
    const retry = await bed.step('sendOrderConfirmation', orderId, info(orderId, 2));
    expect(retry.performed).toBe(true);
    expect(retry.providerId).toBe(mail.effects.get(confirmationKey(orderId))?.providerId);
    expect(mail.calls.map((c) => c.key)).toEqual([confirmationKey(orderId), confirmationKey(orderId)]);
    expect(mail.effects.size).toBe(1);
    expect((await orderRow(orderId)).status).toBe('confirmation_sent');
  });

  it('marks the claim failed after a definite 503, so a halt can tombstone it and nothing is ever sent', async () => {
    const orderId = await invoiced();
    mail.failNext('unavailable', 1, 503);
    const failure = await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 1)));
    expect([failure.type, failure.nonRetryable, failure.details?.[0]]).toEqual([
      ErrorType.ProviderUnavailable,
      false,
      { status: 503, mayHaveActed: false },
    ]);
    const key = confirmationKey(orderId);
    expect((await claimOf(key))?.status).toBe('failed');
    expect(await bed.halt(orderId, 'cancelled: customer asked')).toEqual({
      outcome: 'halted',
      rank: expect.any(Number),
    });
    expect((await claimOf(key))?.status).toBe('cancelled');
    const order = await orderRow(orderId);
    expect([order.haltReason, order.haltedRank, order.status]).toEqual(['cancelled: customer asked', 20, 'invoiced']);
    // A late retry of the confirmation (the provider is back) refuses and calls nothing.
    const late = await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 2)));
    expect([late.type, late.nonRetryable]).toEqual([ErrorType.OrderHalted, true]);
    expect(mail.calls).toHaveLength(1);
    expect(mail.effects.size).toBe(0);
  });

  it('spreads its retries: a transient failure carries a jittered next retry delay from the retry policy', async () => {
    const orderId = await invoiced();
    mail.failNext('unavailable');
    const retryPolicy = { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '60 seconds' };
    const failure = await failureOf(
      bed.step('sendOrderConfirmation', orderId, info(orderId, 3, '5', { retryPolicy } as never)),
    );
    // Attempt 3: backoff 2 s x 2^2 = 8 s, of which the jitter waits between half and all.
    expect(failure.nextRetryDelay).toBeGreaterThanOrEqual(4_000);
    expect(failure.nextRetryDelay).toBeLessThanOrEqual(8_000);
  });

  it('takes a failed claim again on retry and sends once', async () => {
    const orderId = await invoiced();
    mail.failNext('unavailable', 2, 503);
    await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 1)));
    await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 2)));
    const sent = await bed.step('sendOrderConfirmation', orderId, info(orderId, 3));
    expect(sent.performed).toBe(true);
    expect(mail.effects.size).toBe(1);
    const claim = await claimOf(confirmationKey(orderId));
    expect([claim?.status, claim?.attempts]).toEqual(['sent', 3]);
  });

  it('reclaims a claim whose owner died once the lease expired, and not before', async () => {
    const orderId = await invoiced();
    const key = confirmationKey(orderId);
    await tdb.prisma.sideEffectClaim.create({
      data: {
        key,
        kind: 'sendOrderConfirmation',
        status: 'sending',
        owner: 'order-other/9#1',
        claimedAt: new Date(Date.now() - 5_000),
      },
    });
    const fresh = await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 1)));
    expect([fresh.type, fresh.nonRetryable]).toEqual([ErrorType.ClaimInProgress, false]);
    expect(mail.calls).toHaveLength(0);

    await tdb.prisma.sideEffectClaim.update({ where: { key }, data: { claimedAt: new Date(Date.now() - 61_000) } });
    // Two reclaimers at once (e.g. attempts of the same activity on two workers): exactly one wins.
    const results = await Promise.allSettled([
      bed.step('sendOrderConfirmation', orderId, info(orderId, 1, '5')),
      bed.step('sendOrderConfirmation', orderId, info(orderId, 1, '5')),
    ]);
    // The loser finds the claim in progress (retryable), or already sent when the winner finished first (then it
    // returns the winner's message without sending).
    const fulfilled = results.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
    expect(fulfilled.filter((r) => r.performed)).toHaveLength(1);
    for (const r of results) {
      if (r.status === 'rejected') expect((r.reason as ApplicationFailure).type).toBe(ErrorType.ClaimInProgress);
    }
    expect(new Set(fulfilled.map((r) => r.providerId)).size).toBe(1);
    expect(mail.calls).toHaveLength(1);
    const claim = await claimOf(key);
    expect([claim?.status, claim?.attempts]).toEqual(['sent', 2]);
  });

  it('a later activity of the same workflow takes over a sending claim at once (operator retry after a crash)', async () => {
    const orderId = await invoiced();
    const key = confirmationKey(orderId);
    await tdb.prisma.sideEffectClaim.create({
      data: {
        key,
        kind: 'sendOrderConfirmation',
        status: 'sending',
        owner: `order-${orderId}/run-1/3#2`,
        claimedAt: new Date(),
      },
    });
    // An earlier activity id of another workflow, or a later one of the same run, does not take it over.
    await tdb.prisma.sideEffectClaim.update({ where: { key }, data: { owner: `order-other/run-1/3#2` } });
    expect((await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 1, '11')))).type).toBe(
      ErrorType.ClaimInProgress,
    );
    await tdb.prisma.sideEffectClaim.update({ where: { key }, data: { owner: `order-${orderId}/run-1/12#1` } });
    expect((await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 1, '11')))).type).toBe(
      ErrorType.ClaimInProgress,
    );
    expect(mail.calls).toHaveLength(0);

    await tdb.prisma.sideEffectClaim.update({ where: { key }, data: { owner: `order-${orderId}/run-1/3#2` } });
    const sent = await bed.step('sendOrderConfirmation', orderId, info(orderId, 1, '11'));
    expect(sent.performed).toBe(true);
    expect(mail.effects.size).toBe(1);
    const claim = await claimOf(key);
    expect([claim?.status, claim?.owner]).toEqual(['sent', `order-${orderId}/run-1/11#1`]);
  });

  it('an activity of a later run takes over the claim of an earlier run (after a continue-as-new), whatever its id', async () => {
    const orderId = await invoiced();
    const key = confirmationKey(orderId);
    // The earlier run's activity ids went up to 40; the new run's start again at 1.
    await tdb.prisma.sideEffectClaim.create({
      data: {
        key,
        kind: 'sendOrderConfirmation',
        status: 'sending',
        owner: `order-${orderId}/run-0/40#1`,
        claimedAt: new Date(),
      },
    });
    const sent = await bed.step('sendOrderConfirmation', orderId, info(orderId, 1, '2'));
    expect(sent.performed).toBe(true);
    expect(mail.effects.size).toBe(1);
    expect((await claimOf(key))?.owner).toBe(`order-${orderId}/run-1/2#1`);
  });

  it.each([
    ['rejected', 422, ErrorType.ProviderRejected],
    ['unauthorized', 401, ErrorType.Unauthorized],
  ] as const)(
    'fails permanently when the provider answers %s (%i) and marks the claim failed (definitely not sent)',
    async (kind, status, type) => {
      const orderId = await invoiced();
      mail.failNext(kind);
      const failure = await failureOf(bed.step('sendOrderConfirmation', orderId));
      expect([failure.type, failure.nonRetryable, failure.details?.[0]]).toEqual([
        type,
        true,
        { status, mayHaveActed: false },
      ]);
      expect((await claimOf(confirmationKey(orderId)))?.status).toBe('failed');
      expect((await orderRow(orderId)).status).toBe('invoiced');
    },
  );

  it('keeps the claim sending after a 409 (the key is in flight at the provider): a halt then cannot fence it', async () => {
    const orderId = await invoiced();
    mail.failNext('conflict');
    const failure = await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 1)));
    expect([failure.type, failure.nonRetryable, failure.details?.[0]]).toEqual([
      ErrorType.ProviderUnavailable,
      false,
      { status: 409, mayHaveActed: true },
    ]);
    expect((await claimOf(confirmationKey(orderId)))?.status).toBe('sending');
    expect(await bed.halt(orderId)).toMatchObject({ outcome: 'unknown', step: 'sendOrderConfirmation' });
  });

  it('fails permanently without an invoice, calling nothing, and frees its claim', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const failure = await failureOf(bed.step('sendOrderConfirmation', orderId));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.NotFound, true]);
    expect(failure.message).toContain('invoice of order');
    expect(mail.calls).toHaveLength(0);
    expect((await claimOf(confirmationKey(orderId)))?.status).toBe('failed');
  });

  it('the halt fence reports a sent shipment (the pivot) and changes nothing', async () => {
    const orderId = await invoiced();
    await bed.step('reserveInventory', orderId);
    await bed.step('sendOrderConfirmation', orderId, info(orderId, 1));
    const shipped = await bed.step('shipOrder', orderId, info(orderId, 1, '6'));
    const before = await orderRow(orderId);
    expect(await bed.halt(orderId, 'cancelled')).toEqual({
      outcome: 'sent',
      step: 'shipOrder',
      providerId: shipped.providerId,
    });
    const after = await orderRow(orderId);
    expect([after.status, after.haltedAt, after.updatedAt]).toEqual(['shipped', null, before.updatedAt]);
    expect((await claimOf(`shipment:${orderId}`))?.status).toBe('sent');
  });

  it('a sent confirmation does not stop the halt: the order halts, the claim stays sent, one cancellation notice', async () => {
    const orderId = await invoiced();
    await bed.step('sendOrderConfirmation', orderId, info(orderId, 1));
    expect(await bed.halt(orderId, 'cancelled')).toEqual({ outcome: 'halted', rank: 30 });
    expect((await claimOf(confirmationKey(orderId)))?.status).toBe('sent');
    expect((await claimOf(`shipment:${orderId}`))?.status).toBe('cancelled');
    const first = await bed.compensate('sendCancellationNotice', orderId, info(orderId, 1, '7'));
    const second = await bed.compensate('sendCancellationNotice', orderId, info(orderId, 2, '7'));
    // The second run finds its claim sent: it calls nothing again.
    expect([first.performed, second.performed]).toEqual([true, false]);
    const notices = mail.calls.filter((c) => c.key === `order-cancellation:${orderId}`);
    expect(notices).toHaveLength(1);
    expect(mail.effects.has(`order-cancellation:${orderId}`)).toBe(true);
    const notice = notices[0]!.request as {
      to: string;
      subject: string;
      text: string;
      metadata: Record<string, string>;
    };
    const invoice = await tdb.prisma.invoice.findUniqueOrThrow({ where: { orderId } });
    expect(notice.subject).toBe(`Order cancelled: invoice ${invoice.number}`);
    expect(notice.text).toContain(`Your order ${orderId} has been cancelled`);
    expect(notice.text).not.toContain('cancelled: test');
    expect(notice.metadata).toEqual({ orderId, invoiceNumber: invoice.number });
    expect((await claimOf(`order-cancellation:${orderId}`))?.status).toBe('sent');
  });

  it('no confirmation, no notice: the compensation does nothing when the confirmation never went out', async () => {
    const orderId = await invoiced();
    expect((await bed.halt(orderId, 'cancelled')).outcome).toBe('halted');
    const undone = await bed.compensate('sendCancellationNotice', orderId, info(orderId, 1, '7'));
    expect(undone.performed).toBe(false);
    expect(mail.calls.filter((c) => c.key === `order-cancellation:${orderId}`)).toHaveLength(0);
    expect(await claimOf(`order-cancellation:${orderId}`)).toBeNull();
  });

  it('halt and send race: either the email goes out and the halt says so, or the halt wins and nothing is sent', async () => {
    for (let i = 0; i < 6; i++) {
      const orderId = await invoiced();
      mail.delayMs = i % 2 ? 20 : 0;
      const [sendResult, halt] = await Promise.allSettled([
        bed.step('sendOrderConfirmation', orderId, info(orderId, 1)),
        bed.halt(orderId, 'cancelled'),
      ]);
      expect(halt.status).toBe('fulfilled');
      const haltOutcome = (halt as PromiseFulfilledResult<{ outcome: string }>).value.outcome;
      const effects = mail.calls.filter((c) => c.key === confirmationKey(orderId)).length;
      const order = await orderRow(orderId);
      if (sendResult.status === 'fulfilled') {
        // Before the pivot a sent confirmation does not stop the halt (its compensation sends a notice).
        expect(['halted', 'unknown']).toContain(haltOutcome);
        expect(effects).toBe(1);
        if (haltOutcome === 'halted') expect((await claimOf(confirmationKey(orderId)))?.status).toBe('sent');
        else expect(order.haltedAt).toBeNull();
      } else {
        expect((sendResult.reason as ApplicationFailure).type).toBe(ErrorType.OrderHalted);
        expect(haltOutcome).toBe('halted');
        expect(effects).toBe(0);
        expect((await claimOf(confirmationKey(orderId)))?.status).toBe('cancelled');
      }
    }
  });
});

describe('syncInvoiceToAccounting', () => {
  const syncKey = (orderId: string) => `accounting-invoice:${orderId}`;

  it('upserts once when run twice in a row, records the accounting id and completes the order', async () => {
    const orderId = await invoiced();
    const invoice = (await tdb.prisma.invoice.findUniqueOrThrow({ where: { orderId } })).number;
    const first = await bed.step('syncInvoiceToAccounting', orderId, info(orderId, 1));
    const second = await bed.step('syncInvoiceToAccounting', orderId, info(orderId, 2));
    expect(first).toEqual({
      step: 'syncInvoiceToAccounting',
      performed: true,
      providerId: expect.stringMatching(/^acc_inv_/),
      key: syncKey(orderId),
    });
    expect(second).toEqual({ ...first, performed: false });
    expect(accounting.calls.map((c) => [c.operation, c.key])).toEqual([['upsertInvoice', syncKey(orderId)]]);
    expect(accounting.calls[0]!.request).toMatchObject({
      externalId: invoice,
      orderId,
      customerEmail: 'ada@example.com',
      currency: 'EUR',
      totalMinor: 1250,
      lines: [{ sku: 'MUG-WHT', quantity: 1, unitPriceMinor: 1250 }],
    });
    const sync = await tdb.prisma.accountingSync.findUniqueOrThrow({ where: { orderId } });
    expect([sync.externalId, sync.accountingId]).toEqual([invoice, first.providerId]);
    const [{ now }] = await tdb.prisma.$queryRaw<Array<{ now: Date }>>`SELECT now() AS now`;
    expect(Math.abs(sync.syncedAt.getTime() - now.getTime())).toBeLessThan(5_000);
    const claim = await claimOf(syncKey(orderId));
    expect([claim?.kind, claim?.status, claim?.providerId]).toEqual([
      'syncInvoiceToAccounting',
      'sent',
      first.providerId,
    ]);
    // The status and rank the registry plans for the sync (`completed` at 50 while it is the last step).
    const planned = plannedStep('syncInvoiceToAccounting');
    const order = await orderRow(orderId);
    expect([order.status, order.statusStep]).toEqual([planned.status, planned.rank]);
    expect(order.completedAt instanceof Date).toBe(planned.status === 'completed');
  });

  it('makes one effect when two attempts race: same key, same body, one record', async () => {
    const orderId = await invoiced();
    accounting.delayMs = 100;
    const outcomes = await Promise.allSettled([
      bed.step('syncInvoiceToAccounting', orderId, info(orderId, 1)),
      bed.step('syncInvoiceToAccounting', orderId, info(orderId, 2)),
    ]);
    // Attempt 2 takes over attempt 1's claim and re-sends with the same key; attempt 1 defers to attempt 2's claim
    // (retryable ClaimInProgressError) when attempt 2 claimed first.
    const fulfilled = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    expect(fulfilled.length).toBeGreaterThanOrEqual(1);
    for (const o of outcomes) {
      if (o.status === 'rejected') {
        const failure = o.reason as ApplicationFailure;
        expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.ClaimInProgress, false]);
      }
    }
    expect(accounting.effects.size).toBe(1);
    expect(new Set(accounting.calls.map((c) => c.key))).toEqual(new Set([syncKey(orderId)]));
    expect(new Set(accounting.calls.map((c) => JSON.stringify(c.request))).size).toBe(1);
    const sync = await tdb.prisma.accountingSync.findUniqueOrThrow({ where: { orderId } });
    expect(new Set(fulfilled.map((r) => r.providerId))).toEqual(new Set([sync.accountingId]));
    expect(await tdb.prisma.accountingSync.count({ where: { orderId } })).toBe(1);
  });

  it('fails permanently when the order has no invoice, calling nothing', async () => {
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    const failure = await failureOf(bed.step('syncInvoiceToAccounting', orderId));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.NotFound, true]);
    expect(accounting.calls).toHaveLength(0);
    expect((await claimOf(syncKey(orderId)))?.status).toBe('failed');
  });

  it('never syncs a void invoice: refused by the halt after voidInvoice, and by the step itself', async () => {
    const compensated = await invoiced();
    await bed.compensate('voidInvoice', compensated);
    const refused = await failureOf(bed.step('syncInvoiceToAccounting', compensated));
    expect([refused.type, refused.nonRetryable]).toEqual([ErrorType.OrderHalted, true]);
    expect(await claimOf(syncKey(compensated))).toBeNull(); // refused under the order-row lock, before claiming

    const voided = await invoiced();
    await tdb.prisma.invoice.update({ where: { orderId: voided }, data: { status: 'void' } });
    const own = await failureOf(bed.step('syncInvoiceToAccounting', voided));
    expect([own.type, own.nonRetryable]).toEqual([ErrorType.OrderHalted, true]);
    expect(own.message).toContain('is void');
    expect((await claimOf(syncKey(voided)))?.status).toBe('failed');
    expect(accounting.calls).toHaveLength(0);
  });

  it('takes its claim under the order-row lock: a final order is refused unless the sync happened', async () => {
    const closed = await invoiced();
    await bed.kit('setOrderStatus', { orderId: closed, status: 'failed', rank: FINAL_FAILURE_RANK });
    const refused = await failureOf(bed.step('syncInvoiceToAccounting', closed));
    expect([refused.type, refused.nonRetryable, refused.details?.[0]]).toEqual([
      ErrorType.OrderClosed,
      true,
      { status: 'failed' },
    ]);
    expect(await claimOf(syncKey(closed))).toBeNull();

    // A late retry after the order completed: the claim is sent, so it returns the recorded id (nothing called).
    const done = await invoiced();
    const first = await bed.step('syncInvoiceToAccounting', done, info(done, 1));
    expect((await orderRow(done)).status).toBe('completed');
    expect(await bed.step('syncInvoiceToAccounting', done, info(done, 2))).toEqual({ ...first, performed: false });
    expect(accounting.calls).toHaveLength(1);
  });
});

describe('haltOrder', () => {
  it('tombstones the pivot it fences and marks the order halted; idempotent, the first reason wins', async () => {
    const orderId = await invoiced();
    expect(fencedSteps()).toEqual(['sendOrderConfirmation', 'shipOrder']);
    expect(await bed.halt(orderId, 'cancelled: first')).toEqual({ outcome: 'halted', rank: expect.any(Number) });
    const claim = await claimOf(confirmationKey(orderId));
    expect([claim?.kind, claim?.status, claim?.owner]).toEqual(['sendOrderConfirmation', 'cancelled', 'tombstone']);
    const pivot = await claimOf(`shipment:${orderId}`);
    expect([pivot?.kind, pivot?.status, pivot?.owner]).toEqual(['shipOrder', 'cancelled', 'tombstone']);
    const first = await orderRow(orderId);
    expect(first.haltedAt).toBeInstanceOf(Date);
    expect([first.haltReason, first.haltedRank]).toEqual(['cancelled: first', 20]);

    expect(await bed.halt(orderId, 'cancelled: second')).toEqual({ outcome: 'halted', rank: expect.any(Number) });
    const second = await orderRow(orderId);
    expect([second.haltReason, second.haltedAt]).toEqual(['cancelled: first', first.haltedAt]);
  });

  it('fences only the steps it is given (the plan passes those up to the pivot)', async () => {
    const orderId = await invoiced();
    expect(await bed.halt(orderId, 'cancelled', ['sendOrderConfirmation'])).toEqual({
      outcome: 'halted',
      rank: expect.any(Number),
    });
    expect(await claimOf(`shipment:${orderId}`)).toBeNull();
    expect(await claimOf(`accounting-invoice:${orderId}`)).toBeNull();
  });

  it('fails permanently for an unknown order, and refuses a step outside the registry without a key in the plan', async () => {
    const failure = await failureOf(bed.halt('00000000-0000-4000-8000-000000000000'));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.NotFound, true]);
    const orderId = await invoiced();
    await expect(bed.halt(orderId, 'cancelled', ['sendPostcard'])).rejects.toThrow(
      'haltOrder: step sendPostcard has no key in the plan and is not in the registry',
    );
    expect((await orderRow(orderId)).haltedAt).toBeNull();
  });
});

describe('a registry with a provider step before the pivot, and its provider compensation', () => {
  const courierKey = (orderId: string) => `courier:${orderId}`;
  const cancellationKey = (orderId: string) => `courier-cancellation:${orderId}`;
  const confirmKey = (orderId: string) => `confirm:${orderId}`;
  const steps = validateSteps([
    defineProviderStep({
      name: 'bookCourier',
      phase: StepPhase.BeforePivot,
      status: 'courier_booked',
      label: 'Courier booked',
      description: 'Books a courier slot.',
      provider: carrier,
      operation: 'createShipment',
      key: courierKey,
      request: async ({ orderId }) => ({
        reference: orderId,
        recipient: { email: 'ada@example.com' },
        items: [{ sku: 'MUG-WHT', quantity: 1 }],
      }),
      compensation: defineProviderCompensation({
        name: 'sendCourierCancellation',
        description: 'Tells the courier desk by email that the booking is off.',
        provider: email,
        operation: 'send',
        key: cancellationKey,
        request: async ({ orderId }) => ({ to: 'courier@example.com', subject: 'Cancel', text: `Cancel ${orderId}` }),
      }),
    }),
    defineProviderStep({
      name: 'confirmOrder',
      phase: StepPhase.Pivot,
      status: 'order_confirmed',
      label: 'Confirmed',
      description: 'Emails the confirmation.',
      provider: email,
      operation: 'send',
      key: confirmKey,
      request: async () => ({ to: 'ada@example.com', subject: 'Confirmed', text: 'Thanks' }),
    }),
  ]);
  let courier: KitTestBed;

  beforeEach(() => {
    courier = kitTestBed(tdb, { steps });
  });

  const order = () => insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);

  it('registers each provider activity on its provider task queue, the compensation on its own provider', () => {
    const grouped = activitiesByTaskQueue(courier.acts, steps);
    // The return workflow's provider activities (workflows/order-return.contract.ts RETURN_PROVIDER_OF) beside them.
    expect(Object.keys(grouped.providers.carrier!).sort()).toEqual(['bookCourier', 'createReturnLabel']);
    expect(Object.keys(grouped.providers.email!).sort()).toEqual([
      'confirmOrder',
      'sendCourierCancellation',
      'sendReturnEmail',
    ]);
    expect(Object.keys(grouped.main)).not.toContain('bookCourier');
    expect(Object.keys(grouped.main)).toEqual(expect.arrayContaining(['haltOrder', 'setOrderStatus', 'planOrder']));
  });

  describe('haltOrder fences every provider step up to and including the pivot', () => {
    it('tombstones both when neither acted; both then refuse and call nothing', async () => {
      const orderId = await order();
      expect(fencedSteps(courier.plan)).toEqual(['bookCourier', 'confirmOrder']);
      expect(await courier.halt(orderId)).toEqual({ outcome: 'halted', rank: expect.any(Number) });
      expect((await claimOf(courierKey(orderId)))?.status).toBe('cancelled');
      expect((await claimOf(confirmKey(orderId)))?.status).toBe('cancelled');
      for (const step of ['bookCourier', 'confirmOrder']) {
        const refused = await failureOf(courier.step(step, orderId, info(orderId, 2)));
        expect([step, refused.type]).toEqual([step, ErrorType.OrderHalted]);
      }
      expect(courier.fakes.carrier!.calls).toHaveLength(0);
      expect(courier.fakes.email!.calls).toHaveLength(0);
    });

    it('leaves a sent earlier step as it is (its compensation undoes it) and tombstones the pivot', async () => {
      const orderId = await order();
      await courier.step('bookCourier', orderId);
      expect(await courier.halt(orderId)).toEqual({ outcome: 'halted', rank: expect.any(Number) });
      expect((await claimOf(courierKey(orderId)))?.status).toBe('sent');
      expect((await claimOf(confirmKey(orderId)))?.status).toBe('cancelled');
    });

    it('tombstones an earlier step whose last call definitely failed', async () => {
      const orderId = await order();
      courier.fakes.carrier!.failNext('unavailable');
      await failureOf(courier.step('bookCourier', orderId));
      expect((await claimOf(courierKey(orderId)))?.status).toBe('failed');
      expect(await courier.halt(orderId)).toEqual({ outcome: 'halted', rank: expect.any(Number) });
      expect((await claimOf(courierKey(orderId)))?.status).toBe('cancelled');
    });

    it('answers unknown, changing nothing, while an earlier step may have acted', async () => {
      const orderId = await order();
      courier.fakes.carrier!.dropNextResponse();
      await failureOf(courier.step('bookCourier', orderId, info(orderId, 1, '3')));
      expect(await courier.halt(orderId)).toEqual({
        outcome: 'unknown',
        step: 'bookCourier',
        claimOwner: `order-${orderId}/run-1/3#1`,
      });
      expect(await claimOf(confirmKey(orderId))).toBeNull();
      expect((await orderRow(orderId)).haltedAt).toBeNull();
    });

    it('answers sent when the pivot acted, whatever the earlier steps', async () => {
      const orderId = await order();
      const confirmed = await courier.step('confirmOrder', orderId);
      await tdb.prisma.sideEffectClaim.create({
        data: {
          key: courierKey(orderId),
          kind: 'bookCourier',
          status: 'sending',
          owner: 'x/1#1',
          claimedAt: new Date(),
        },
      });
      expect(await courier.halt(orderId)).toEqual({
        outcome: 'sent',
        step: 'confirmOrder',
        providerId: confirmed.providerId,
      });
      expect((await orderRow(orderId)).haltedAt).toBeNull();
    });
  });

  describe('a provider compensation', () => {
    it('runs when the forward effect happened: claim-first under its own key, once', async () => {
      const orderId = await order();
      await courier.step('bookCourier', orderId);
      expect(await courier.halt(orderId)).toEqual({ outcome: 'halted', rank: expect.any(Number) });
      const first = await courier.compensate('sendCourierCancellation', orderId, info(orderId, 1, '4'));
      expect(first).toEqual({
        compensation: 'sendCourierCancellation',
        performed: true,
        providerId: expect.stringMatching(/^msg_/),
      });
      expect(courier.fakes.email!.calls.map((c) => [c.key, c.request])).toEqual([
        [cancellationKey(orderId), { to: 'courier@example.com', subject: 'Cancel', text: `Cancel ${orderId}` }],
      ]);
      const claim = await claimOf(cancellationKey(orderId));
      expect([claim?.kind, claim?.status, claim?.providerId]).toEqual([
        'sendCourierCancellation',
        'sent',
        first.providerId,
      ]);
      expect((await claimOf(courierKey(orderId)))?.status).toBe('sent');

      const again = await courier.compensate('sendCourierCancellation', orderId, info(orderId, 2, '4'));
      expect(again).toEqual({ ...first, performed: false });
      expect(courier.fakes.email!.calls).toHaveLength(1);
    });

    it('calls the provider once when two runs race', async () => {
      const orderId = await order();
      await courier.step('bookCourier', orderId);
      await courier.halt(orderId);
      courier.fakes.email!.delayMs = 150;
      const outcomes = await Promise.allSettled([
        courier.compensate('sendCourierCancellation', orderId, info(orderId, 1, '4')),
        courier.compensate('sendCourierCancellation', orderId, info(orderId, 1, '4')),
      ]);
      expect(courier.fakes.email!.calls).toHaveLength(1);
      expect(outcomes.filter((o) => o.status === 'fulfilled' && o.value.performed)).toHaveLength(1);
      for (const o of outcomes) {
        if (o.status === 'rejected') expect((o.reason as ApplicationFailure).type).toBe(ErrorType.ClaimInProgress);
      }
    });

    it('does nothing when the forward step never acted: no claim, tombstoned, or definitely failed', async () => {
      const never = await order();
      expect(await courier.compensate('sendCourierCancellation', never)).toEqual({
        compensation: 'sendCourierCancellation',
        performed: false,
      });

      const tombstoned = await order();
      await courier.halt(tombstoned);
      expect((await courier.compensate('sendCourierCancellation', tombstoned)).performed).toBe(false);

      const failed = await order();
      courier.fakes.carrier!.failNext('rejected');
      await failureOf(courier.step('bookCourier', failed));
      expect((await courier.compensate('sendCourierCancellation', failed)).performed).toBe(false);

      expect(courier.fakes.email!.calls).toHaveLength(0);
      for (const id of [never, tombstoned, failed]) expect(await claimOf(cancellationKey(id))).toBeNull();
    });

    it("waits (retryable ClaimInProgressError) while the forward call's outcome is unknown", async () => {
      const orderId = await order();
      courier.fakes.carrier!.dropNextResponse();
      await failureOf(courier.step('bookCourier', orderId));
      const waiting = await failureOf(courier.compensate('sendCourierCancellation', orderId));
      expect([waiting.type, waiting.nonRetryable]).toEqual([ErrorType.ClaimInProgress, false]);
      expect(courier.fakes.email!.calls).toHaveLength(0);
      expect(await claimOf(cancellationKey(orderId))).toBeNull();
    });

    it('frees its claim after a definite provider failure, and the retry sends once', async () => {
      const orderId = await order();
      await courier.step('bookCourier', orderId);
      await courier.halt(orderId);
      courier.fakes.email!.failNext('unavailable');
      const failure = await failureOf(courier.compensate('sendCourierCancellation', orderId, info(orderId, 1, '4')));
      expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.ProviderUnavailable, false]);
      expect((await claimOf(cancellationKey(orderId)))?.status).toBe('failed');
      const retry = await courier.compensate('sendCourierCancellation', orderId, info(orderId, 2, '4'));
      expect(retry.performed).toBe(true);
      expect(courier.fakes.email!.effects.size).toBe(1);
      expect((await claimOf(cancellationKey(orderId)))?.attempts).toBe(2);
    });
  });
});
