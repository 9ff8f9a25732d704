/**
 * shipOrder (a provider step with a `record`) run once, twice, concurrently, after provider failures and against a
 * tombstone: always at most one shipment at the carrier and one record (row, movements consuming the reservation,
 * status) in the database, committed with the claim in one transaction. The activity runs through the kit under
 * MockActivityEnvironment with the fake carrier derived from its definition; the database is a real PostgreSQL (a
 * fresh migrated database for this suite), because the guarantees under test (unique keys, conditional updates, row
 * locks) live there.
 */
import type { Info } from '@temporalio/activity';
import { type ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { StepResult } from '../../../activities/index.js';
import { tombstoneSideEffect } from '../../../activities/kit/claims.js';
import { MIN_HOLD_TO_SHIP_MS } from '../../../activities/steps/ship-order.step.js';
import { ErrorType } from '../../../workflows/errors.js';
import { attentionRank } from '../../../workflows/order-plan.js';
import type { FakeProvider } from '../../helpers/fake-providers.js';
import { insertOrder, seedTestCatalogue, stockOf, type TestSku } from '../../helpers/fixtures.js';
import {
  activityInfo,
  failureOf,
  kitTestBed,
  mockEnv,
  plannedStep,
  stepInput,
  type KitTestBed,
} from '../../helpers/kit-test-bed.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.js';

let tdb: TestDatabase;
let bed: KitTestBed;
let carrier: FakeProvider;

/** Activity info of attempt `attempt` of activity `activityId` (default 7) in the order's workflow. */
function info(orderId: string, attempt = 1, activityId = '7', extra: Partial<Info> = {}): Partial<Info> {
  return activityInfo(orderId, attempt, activityId, extra);
}

function ship(orderId: string, activity: Partial<Info> = info(orderId)): Promise<StepResult> {
  return bed.step('shipOrder', orderId, activity);
}

type Line = { sku: TestSku; quantity: number };

/**
 * An order past its confirmation: inserted, its stock reserved (the `reserve:` movements and `reserved += q`, as
 * reserveInventory leaves them; `reserved` overrides the quantity reserved per line) and its status
 * `confirmation_sent` at the confirmation's planned rank.
 */
async function confirmedOrder(
  lines: Line[] = [{ sku: 'MUG-WHT', quantity: 1 }],
  reserved: (line: Line) => number = (l) => l.quantity,
): Promise<string> {
  const orderId = await insertOrder(tdb.prisma, lines);
  const { status, rank } = plannedStep('sendOrderConfirmation');
  await tdb.prisma.$transaction(async (tx) => {
    for (const l of lines) {
      await tx.$executeRaw`
        INSERT INTO inventory_movements (id, sku, order_id, reason, on_hand_delta, reserved_delta)
        VALUES (${`reserve:${orderId}:${l.sku}`}, ${l.sku}, ${orderId}::uuid, 'reservation', 0, ${reserved(l)})`;
      await tx.$executeRaw`UPDATE products SET reserved = reserved + ${reserved(l)} WHERE sku = ${l.sku}`;
    }
    await tx.$executeRaw`UPDATE orders SET status = ${status}, status_step = ${rank} WHERE id = ${orderId}::uuid`;
  });
  return orderId;
}

async function claimOf(orderId: string) {
  return tdb.prisma.sideEffectClaim.findUnique({ where: { key: `shipment:${orderId}` } });
}

async function shipMovements(orderId: string): Promise<Array<[string, number, number]>> {
  const rows = await tdb.prisma.inventoryMovement.findMany({
    where: { orderId, reason: 'shipment' },
    orderBy: { id: 'asc' },
  });
  return rows.map((m) => [m.id, m.onHandDelta, m.reservedDelta]);
}

/** The carrier's answer for the order's shipment key (its first, the one every replay returns). */
function shipmentAt(orderId: string): { id: string; trackingNumber: string } {
  const answer = carrier.effects.get(`shipment:${orderId}`);
  if (!answer) throw new Error(`no shipment at the carrier for ${orderId}`);
  return answer.response as { id: string; trackingNumber: string };
}

beforeAll(async () => {
  tdb = await createTestDatabase();
  await seedTestCatalogue(tdb.prisma);
});
afterAll(async () => tdb?.drop());
beforeEach(() => {
  bed = kitTestBed(tdb);
  carrier = bed.fakes.carrier!;
});

describe('shipOrder', () => {
  it('ships once: one carrier effect, one shipment row, movements that lower on_hand and reserved', async () => {
    const lines: Line[] = [
      { sku: 'TEE-BLK-M', quantity: 2 },
      { sku: 'MUG-WHT', quantity: 1 },
    ];
    const before = { tee: await stockOf(tdb.prisma, 'TEE-BLK-M'), mug: await stockOf(tdb.prisma, 'MUG-WHT') };
    const orderId = await confirmedOrder(lines);

    const result = await ship(orderId);

    const key = `shipment:${orderId}`;
    const shipment = shipmentAt(orderId);
    expect(shipment.id).toMatch(/^shp_[0-9a-f]{24}$/);
    expect(shipment.trackingNumber).toMatch(/^1Z[0-9A-Z]{16}$/);
    expect(result).toEqual({ step: 'shipOrder', performed: true, providerId: shipment.id, key });
    expect(carrier.effects.size).toBe(1);
    expect(carrier.calls).toEqual([
      {
        operation: 'createShipment',
        key,
        request: {
          reference: orderId,
          recipient: { email: 'ada@example.com', name: 'Ada Lovelace' },
          items: [
            { sku: 'TEE-BLK-M', quantity: 2 },
            { sku: 'MUG-WHT', quantity: 1 },
          ],
        },
      },
    ]);

    const row = await tdb.prisma.shipment.findUniqueOrThrow({ where: { orderId } });
    expect([row.carrierId, row.trackingNumber]).toEqual([shipment.id, shipment.trackingNumber]);
    const [{ age }] = await tdb.prisma.$queryRaw<[{ age: number }]>`
      SELECT extract(epoch FROM now() - created_at)::float8 AS age FROM shipments WHERE order_id = ${orderId}::uuid`;
    expect(age).toBeGreaterThanOrEqual(0);
    expect(age).toBeLessThan(60);

    expect(await shipMovements(orderId)).toEqual([
      [`ship:${orderId}:MUG-WHT`, -1, -1],
      [`ship:${orderId}:TEE-BLK-M`, -2, -2],
    ]);
    // Reserved by confirmedOrder, then consumed: reserved is back where it was, on_hand is lower.
    expect(await stockOf(tdb.prisma, 'TEE-BLK-M')).toEqual([before.tee[0] - 2, before.tee[1]]);
    expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual([before.mug[0] - 1, before.mug[1]]);

    const order = await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } });
    expect([order.status, order.statusStep, order.failureReason]).toEqual(['shipped', 40, null]);
    const claim = await claimOf(orderId);
    expect([claim?.kind, claim?.status, claim?.providerId]).toEqual(['shipOrder', 'sent', shipment.id]);
  });

  it('leaves out a recipient name the order does not have', async () => {
    const orderId = await confirmedOrder();
    await tdb.prisma.order.update({ where: { id: orderId }, data: { customerName: null } });
    await ship(orderId);
    expect((carrier.calls[0]!.request as { recipient: unknown }).recipient).toEqual({ email: 'ada@example.com' });
  });

  it('ships once when run twice in a row', async () => {
    const orderId = await confirmedOrder([{ sku: 'TEE-BLK-M', quantity: 3 }]);
    const stock = await stockOf(tdb.prisma, 'TEE-BLK-M');
    const first = await ship(orderId, info(orderId, 1));
    const second = await ship(orderId, info(orderId, 2));

    expect(second).toEqual({ ...first, performed: false });
    expect(carrier.calls).toHaveLength(1);
    expect(carrier.effects.size).toBe(1);
    expect(await shipMovements(orderId)).toHaveLength(1);
    expect(await stockOf(tdb.prisma, 'TEE-BLK-M')).toEqual([stock[0] - 3, stock[1] - 3]);
  });

  it('ships once when runs race: a retry racing its first attempt, and a later activity of the workflow', async () => {
    const orderId = await confirmedOrder([{ sku: 'TEE-BLK-M', quantity: 1 }]);
    const stock = await stockOf(tdb.prisma, 'TEE-BLK-M');
    carrier.delayMs = 200;

    const outcomes = await Promise.allSettled([
      ship(orderId, info(orderId, 1, '7')),
      ship(orderId, info(orderId, 2, '7')),
      ship(orderId, info(orderId, 1, '9')),
    ]);

    // A run that takes over an earlier owner's claim re-sends with the same key: the carrier replays, so there is
    // one shipment whatever the number of calls, and every run that returns reports it.
    expect(carrier.effects.size).toBe(1);
    expect(new Set(carrier.calls.map((c) => c.key))).toEqual(new Set([`shipment:${orderId}`]));
    const fulfilled = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value] : []));
    expect(fulfilled.length).toBeGreaterThanOrEqual(1);
    expect(fulfilled.filter((r) => r.performed).length).toBeGreaterThanOrEqual(1);
    expect(new Set(fulfilled.map((r) => r.providerId))).toEqual(new Set([shipmentAt(orderId).id]));
    for (const o of outcomes) {
      if (o.status === 'rejected') {
        const failure = o.reason as ApplicationFailure;
        expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.ClaimInProgress, false]);
      }
    }
    expect(await tdb.prisma.shipment.count({ where: { orderId } })).toBe(1);
    expect(await shipMovements(orderId)).toHaveLength(1);
    expect(await stockOf(tdb.prisma, 'TEE-BLK-M')).toEqual([stock[0] - 1, stock[1] - 1]);

    // A loser retrying later finds the shipment recorded and calls nothing.
    const calls = carrier.calls.length;
    expect((await ship(orderId, info(orderId, 2, '9'))).performed).toBe(false);
    expect(carrier.calls).toHaveLength(calls);
  });

  it('after a carrier failure that may have acted (lost response), the retry replays: one effect', async () => {
    const orderId = await confirmedOrder();
    const stock = await stockOf(tdb.prisma, 'MUG-WHT');
    carrier.dropNextResponse();

    const failure = await failureOf(ship(orderId, info(orderId, 1)));
    expect([failure.type, failure.nonRetryable, failure.details?.[0]]).toEqual([
      ErrorType.ProviderUnavailable,
      false,
      { status: undefined, mayHaveActed: true },
    ]);
    expect(carrier.effects.size).toBe(1);
    expect((await claimOf(orderId))?.status).toBe('sending'); // the outcome is unknown: the claim stays
    expect(await tdb.prisma.shipment.count({ where: { orderId } })).toBe(0);
    expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual(stock);

    const retry = await ship(orderId, info(orderId, 2));
    expect(retry).toMatchObject({ performed: true, providerId: shipmentAt(orderId).id });
    expect(carrier.calls).toHaveLength(2);
    expect(carrier.effects.size).toBe(1);
    expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual([stock[0] - 1, stock[1] - 1]);
  });

  it('after a definite 503 the claim is failed, and the retry ships', async () => {
    const orderId = await confirmedOrder();
    carrier.failNext('unavailable');

    const failure = await failureOf(ship(orderId, info(orderId, 1)));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.ProviderUnavailable, false]);
    expect(carrier.effects.size).toBe(0);
    expect((await claimOf(orderId))?.status).toBe('failed');

    const retry = await ship(orderId, info(orderId, 2));
    expect(retry.performed).toBe(true);
    expect(carrier.effects.size).toBe(1);
    const claim = await claimOf(orderId);
    expect([claim?.status, claim?.attempts]).toEqual(['sent', 2]);
  });

  it('fails permanently on a carrier 422 (ProviderRejectedError), claim failed, nothing recorded', async () => {
    const orderId = await confirmedOrder();
    const stock = await stockOf(tdb.prisma, 'MUG-WHT');
    carrier.failNext('rejected');

    const failure = await failureOf(ship(orderId));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.ProviderRejected, true]);
    expect((await claimOf(orderId))?.status).toBe('failed');
    expect(await tdb.prisma.shipment.count({ where: { orderId } })).toBe(0);
    expect(await shipMovements(orderId)).toEqual([]);
    expect(await stockOf(tdb.prisma, 'MUG-WHT')).toEqual(stock);
    expect((await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } })).status).toBe('confirmation_sent');
  });

  it('with less reserved than it ships: ValidationError after the carrier acted, nothing recorded, claim stays sending', async () => {
    const lines: Line[] = [
      { sku: 'MUG-WHT', quantity: 1 },
      { sku: 'TEE-BLK-M', quantity: 2 },
    ];
    const orderId = await confirmedOrder(lines, (l) => (l.sku === 'TEE-BLK-M' ? 1 : l.quantity));
    const stock = [await stockOf(tdb.prisma, 'MUG-WHT'), await stockOf(tdb.prisma, 'TEE-BLK-M')];

    const failure = await failureOf(ship(orderId, info(orderId, 1)));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.Validation, true]);
    expect(failure.message).toContain('cannot ship 2 x TEE-BLK-M');
    // The carrier acted: the claim keeps its owner and stays `sending` for an operator; the record (shipment row,
    // every movement, the status) rolled back with the claim's completion.
    expect(carrier.effects.size).toBe(1);
    const claim = await claimOf(orderId);
    expect([claim?.status, claim?.providerId]).toEqual(['sending', null]);
    expect(await tdb.prisma.shipment.count({ where: { orderId } })).toBe(0);
    expect(await shipMovements(orderId)).toEqual([]);
    expect([await stockOf(tdb.prisma, 'MUG-WHT'), await stockOf(tdb.prisma, 'TEE-BLK-M')]).toEqual(stock);
    expect((await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } })).status).toBe('confirmation_sent');
  });

  it('refuses a tombstoned claim with OrderHaltedError and never calls the carrier', async () => {
    const orderId = await confirmedOrder();
    await tombstoneSideEffect(tdb.sql, `shipment:${orderId}`, 'shipOrder');

    const failure = await failureOf(ship(orderId));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.OrderHalted, true]);
    expect(carrier.calls).toHaveLength(0);
    expect(await tdb.prisma.shipment.count({ where: { orderId } })).toBe(0);
    expect(await shipMovements(orderId)).toEqual([]);
  });

  it('a sent claim returns its shipment without calling the carrier, and writes the status', async () => {
    const orderId = await confirmedOrder();
    await tdb.prisma.$executeRaw`
      INSERT INTO side_effect_claims (key, kind, status, owner, attempts, claimed_at, provider_id, completed_at)
      VALUES (${`shipment:${orderId}`}, 'shipOrder', 'sent', ${`order-${orderId}/7#1`}, 1, now(), 'shp_earlier', now())`;

    expect(await ship(orderId, info(orderId, 2))).toEqual({
      step: 'shipOrder',
      performed: false,
      providerId: 'shp_earlier',
      key: `shipment:${orderId}`,
    });
    expect(carrier.calls).toHaveLength(0);
    expect((await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } })).status).toBe('shipped');
  });

  it("reclaims a dead owner's claim after the lease, re-sending with the same key", async () => {
    const orderId = await confirmedOrder();
    const key = `shipment:${orderId}`;
    await tdb.prisma.$executeRaw`
      INSERT INTO side_effect_claims (key, kind, status, owner, attempts, claimed_at)
      VALUES (${key}, 'shipOrder', 'sending', 'order-other/3#1', 1, now() - interval '5 seconds')`;
    const fresh = await failureOf(ship(orderId));
    expect(fresh.type).toBe(ErrorType.ClaimInProgress);
    expect(carrier.calls).toHaveLength(0);

    await tdb.prisma.$executeRaw`
      UPDATE side_effect_claims SET claimed_at = now() - interval '61 seconds' WHERE key = ${key}`;
    expect((await ship(orderId)).performed).toBe(true);
    expect(carrier.effects.size).toBe(1);
    const claim = await claimOf(orderId);
    expect([claim?.status, claim?.attempts]).toEqual(['sent', 2]);
  });

  it('refuses a final order without a shipment (OrderClosedError) and a halted one (OrderHaltedError)', async () => {
    const closed = await confirmedOrder();
    await tdb.prisma.$executeRaw`UPDATE orders SET status = 'completed', status_step = 50 WHERE id = ${closed}::uuid`;
    const refused = await failureOf(ship(closed));
    expect([refused.type, refused.nonRetryable]).toEqual([ErrorType.OrderClosed, true]);

    const stopped = await confirmedOrder();
    await tdb.prisma.$executeRaw`
      UPDATE orders SET halted_at = now(), halt_reason = 'test' WHERE id = ${stopped}::uuid`;
    const haltedFailure = await failureOf(ship(stopped));
    expect([haltedFailure.type, haltedFailure.nonRetryable]).toEqual([ErrorType.OrderHalted, true]);

    expect(carrier.calls).toHaveLength(0);
    expect(
      await tdb.prisma.sideEffectClaim.count({ where: { key: { in: [`shipment:${closed}`, `shipment:${stopped}`] } } }),
    ).toBe(0);
  });

  it('moves an order waiting in attention_required (just below shipped) to shipped and clears the reason', async () => {
    const orderId = await confirmedOrder();
    const rank = attentionRank(plannedStep('shipOrder'));
    expect(rank).toBe(35);
    await tdb.prisma.$executeRaw`
      UPDATE orders SET status = 'attention_required', status_step = ${rank}, failure_reason = 'carrier down'
      WHERE id = ${orderId}::uuid`;
    await ship(orderId);
    const order = await tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } });
    expect([order.status, order.statusStep, order.failureReason]).toEqual(['shipped', 40, null]);
  });

  it('heartbeats during the carrier call', async () => {
    carrier.delayMs = 2_100;
    const orderId = await confirmedOrder();
    const env = mockEnv(info(orderId, 1, '7', { heartbeatTimeoutMs: 10_000 }));
    let beats = 0;
    env.on('heartbeat', () => (beats += 1));
    await env.run(bed.acts.shipOrder as never, stepInput('shipOrder', orderId));
    expect(beats).toBeGreaterThanOrEqual(2); // every second of the call

    // A call shorter than the interval sends none (the heartbeat timeout runs from the activity's start).
    carrier.delayMs = 0;
    const quick = await confirmedOrder();
    const quickEnv = mockEnv(info(quick, 1, '7', { heartbeatTimeoutMs: 10_000 }));
    let quickBeats = 0;
    quickEnv.on('heartbeat', () => (quickBeats += 1));
    await quickEnv.run(bed.acts.shipOrder as never, stepInput('shipOrder', quick));
    expect(quickBeats).toBe(0);
  });

  it('stops before the carrier call when cancelled, and finishes a call under way', async () => {
    const early = await confirmedOrder();
    const cancelledEnv = mockEnv(info(early));
    cancelledEnv.cancel();
    await expect(cancelledEnv.run(bed.acts.shipOrder as never, stepInput('shipOrder', early))).rejects.toBeInstanceOf(
      CancelledFailure,
    );
    expect(carrier.calls).toHaveLength(0);
    expect(await claimOf(early)).toBeNull();

    carrier.delayMs = 300;
    const late = await confirmedOrder();
    const env = mockEnv(info(late));
    const running = env.run(bed.acts.shipOrder as never, stepInput('shipOrder', late)) as Promise<StepResult>;
    await expect.poll(() => carrier.calls.length).toBe(1);
    env.cancel();
    expect((await running).performed).toBe(true);
    expect(await tdb.prisma.shipment.count({ where: { orderId: late } })).toBe(1);
  });

  it('fails permanently for an unknown order', async () => {
    const failure = await failureOf(ship('00000000-0000-4000-8000-000000000000'));
    expect([failure.type, failure.nonRetryable]).toEqual([ErrorType.NotFound, true]);
    expect(carrier.calls).toHaveLength(0);
  });
});

describe("shipOrder's precondition: a card order ships only on a hold it can still capture", () => {
  /** A card order past its confirmation, with its `payments` row as authorizePayment left it (then `patch`ed). */
  async function cardOrder(payment: { status: string; captureInMs: number }): Promise<string> {
    const orderId = await confirmedOrder([{ sku: 'TEE-BLK-M', quantity: 1 }]);
    await tdb.prisma.$executeRaw`UPDATE orders SET payment_method = 'pm_card_ok' WHERE id = ${orderId}::uuid`;
    await tdb.prisma.payment.create({
      data: {
        orderId,
        providerPaymentId: `pi_${orderId.replaceAll('-', '').slice(0, 24)}`,
        status: payment.status,
        amountMinor: 1250,
        currency: 'EUR',
        captureBefore: new Date(Date.now() + payment.captureInMs),
      },
    });
    return orderId;
  }

  it.each([
    ['authorization_expiring', { status: 'authorized', captureInMs: MIN_HOLD_TO_SHIP_MS - 10_000 }],
    ['authorization_expiring', { status: 'authorized', captureInMs: -1_000 }],
    ['authorization_not_held', { status: 'voided', captureInMs: 3_600_000 }],
  ])(
    'refuses (%s) before any call: RefusedError payment_expired, the claim failed, nothing shipped',
    async (why, p) => {
      const orderId = await cardOrder(p);
      const failure = await failureOf(ship(orderId));
      expect(failure.type).toBe(ErrorType.Refused);
      expect(failure.nonRetryable).toBe(true);
      expect(failure.message).toMatch(new RegExp(`^payment_expired: ${why}; shipOrder did not act`));
      expect(carrier.calls).toEqual([]);
      expect((await claimOf(orderId))?.status).toBe('failed');
      expect(await shipMovements(orderId)).toEqual([]);
    },
  );

  it('ships a card order whose hold has more than the margin left, and an order on account', async () => {
    const card = await cardOrder({ status: 'authorized', captureInMs: MIN_HOLD_TO_SHIP_MS + 60_000 });
    expect((await ship(card)).performed).toBe(true);
    const onAccount = await confirmedOrder([{ sku: 'TEE-BLK-M', quantity: 1 }]);
    expect((await ship(onAccount)).performed).toBe(true);
    expect(carrier.effects.size).toBe(2);
  });

  it('is not asked again when an earlier call may have acted: the retry replays under the same key', async () => {
    const orderId = await cardOrder({ status: 'authorized', captureInMs: MIN_HOLD_TO_SHIP_MS + 60_000 });
    carrier.dropNextResponse();
    await failureOf(ship(orderId));
    expect((await claimOf(orderId))?.status).toBe('sending');
    // The hold now comes within the margin: the carrier may already have the shipment, so only a replay can tell.
    await tdb.prisma.payment.update({ where: { orderId }, data: { captureBefore: new Date(Date.now() + 1_000) } });
    const result = await ship(orderId, info(orderId, 2));
    expect(result.providerId).toBe(shipmentAt(orderId).id);
    expect(carrier.effects.size).toBe(1);
  });
});
