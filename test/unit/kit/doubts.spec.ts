/**
 * Every doubt has an exit (issue 20), at the kit: a provider step whose outcome is unknown (its claim `sending`) is
 * settled by a definite refusal of the identical request under the same key, or by an operator's recorded decision;
 * the body is frozen with the claim so every call under the key is identical; a halt between the claim and the call
 * stops the call (the claim is `claimed` until its owner re-checks the fence and moves it to `sending`); a provider
 * answer the claim cannot record is never reported as success; every failure says whether the effect may have
 * happened, judged from the claim; the fence reads the pivot and the keys from the order's plan. Activities run under
 * MockActivityEnvironment with fake providers; the database is a real PostgreSQL.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ApplicationFailure } from '@temporalio/common';
import { StepPhase, validateSteps, type StepDefinition } from '../../../activities/kit/define.js';
import { SHIPPED_STEPS } from '../../helpers/shipped-steps.js';
import { ErrorType } from '../../../workflows/errors.js';
import { FINAL_FAILURE_RANK } from '../../../workflows/order-plan.js';
import type { FakeProvider } from '../../helpers/fake-providers.js';
import { insertOrder, seedTestCatalogue } from '../../helpers/fixtures.js';
import {
  activityInfo as info,
  failureOf,
  kitTestBed,
  mockEnv,
  plannedStep,
  type KitTestBed,
} from '../../helpers/kit-test-bed.js';
import { createTestDatabase, type TestDatabase } from '../../helpers/postgres.js';

let tdb: TestDatabase;
let bed: KitTestBed;
let mail: FakeProvider;
let carrier: FakeProvider;

beforeAll(async () => {
  tdb = await createTestDatabase();
  await seedTestCatalogue(tdb.prisma);
});
afterAll(async () => tdb?.drop());
beforeEach(() => {
  bed = kitTestBed(tdb);
  mail = bed.fakes.email!;
  carrier = bed.fakes.carrier!;
});

const claimOf = (key: string) => tdb.prisma.sideEffectClaim.findUnique({ where: { key } });
const orderRow = (orderId: string) => tdb.prisma.order.findUniqueOrThrow({ where: { id: orderId } });
const confirmationKey = (orderId: string) => `order-confirmation:${orderId}`;

/** An order with its invoice (createInvoice run through the kit). */
async function invoiced(): Promise<string> {
  const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
  await bed.step('createInvoice', orderId);
  return orderId;
}

/** An order that passed the pivot (reserved, invoiced, confirmed), ready to ship. */
async function confirmed(): Promise<string> {
  const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
  for (const step of ['reserveInventory', 'createInvoice', 'sendOrderConfirmation']) await bed.step(step, orderId);
  return orderId;
}

/** The first call under the key ends with an unknown outcome that performed nothing (a gateway's 502). */
async function unknownFirstCall(orderId: string): Promise<ApplicationFailure> {
  mail.failNext('unavailable', 1, 502);
  const failure = await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 1)));
  expect([failure.type, failure.details?.[0]]).toEqual([
    ErrorType.ProviderUnavailable,
    { status: 502, mayHaveActed: true },
  ]);
  expect((await claimOf(confirmationKey(orderId)))?.status).toBe('sending');
  return failure;
}

describe('a definite refusal of the same request under the same key settles an unknown outcome', () => {
  it('a 502, then a 422 on the retry: the claim becomes failed, the halt tombstones it, nothing is ever sent', async () => {
    const orderId = await invoiced();
    await unknownFirstCall(orderId);
    mail.failNext('rejected', 1, 422, 'email provider POST /v1/messages → 422 (rejected): recipient refused');
    const refused = await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 2)));
    expect([refused.type, refused.nonRetryable, refused.details?.[0]]).toEqual([
      ErrorType.ProviderRejected,
      true,
      { status: 422, mayHaveActed: false },
    ]);
    expect((await claimOf(confirmationKey(orderId)))?.status).toBe('failed');
    // The order can now halt and compensate: the doubt had an exit.
    expect(await bed.halt(orderId, 'ProviderRejectedError: recipient refused')).toEqual({
      outcome: 'halted',
      rank: plannedStep('createInvoice').rank,
    });
    expect((await claimOf(confirmationKey(orderId)))?.status).toBe('cancelled');
    expect(mail.effects.size).toBe(0);
  });

  it('a refusal about the key itself (422 key reused with another request) never settles it', async () => {
    const orderId = await invoiced();
    await unknownFirstCall(orderId);
    mail.failNext(
      'rejected',
      1,
      422,
      `email provider POST /v1/messages → 422 (rejected): Idempotency-Key "${confirmationKey(orderId)}" was first ` +
        'used with a different method, path or body.',
    );
    const refused = await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 2)));
    expect([refused.type, refused.details?.[0]]).toEqual([
      ErrorType.ProviderRejected,
      { status: 422, mayHaveActed: true },
    ]);
    expect((await claimOf(confirmationKey(orderId)))?.status).toBe('sending');
    expect(await bed.halt(orderId)).toMatchObject({ outcome: 'unknown', step: 'sendOrderConfirmation' });
  });

  it.each([
    ['unauthorized', 401],
    ['unavailable', 503],
  ] as const)('a %s (%i) after an unknown outcome does not settle it', async (kind, status) => {
    const orderId = await invoiced();
    await unknownFirstCall(orderId);
    mail.failNext(kind, 1, status);
    const failure = await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 2)));
    expect(failure.details?.[0]).toEqual({ status, mayHaveActed: true });
    expect((await claimOf(confirmationKey(orderId)))?.status).toBe('sending');
  });

  it('a claim taken before bodies were frozen (1.0.0) is not settled: what its first call sent is not known', async () => {
    const orderId = await invoiced();
    const key = confirmationKey(orderId);
    await tdb.prisma.sideEffectClaim.create({
      data: {
        key,
        kind: 'sendOrderConfirmation',
        status: 'sending',
        owner: `order-${orderId}/run-1/5#1`,
        claimedAt: new Date(),
      },
    });
    // Neither this refusal nor a later one settles it: no body is frozen for such a claim (its first is unknown).
    for (const attempt of [2, 3]) {
      mail.failNext('rejected');
      const failure = await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, attempt)));
      expect(failure.details?.[0]).toEqual({ status: 422, mayHaveActed: true });
      const claim = await claimOf(key);
      expect([claim?.status, claim?.request]).toEqual(['sending', null]);
    }
    expect(mail.calls).toHaveLength(2);
  });
});

describe('the request body is frozen with the claim', () => {
  it('every call under the key sends the identical body, though the data it is built from changed', async () => {
    const orderId = await invoiced();
    await unknownFirstCall(orderId);
    const frozen = (await claimOf(confirmationKey(orderId)))?.request;
    expect(JSON.parse(frozen!)).toEqual(mail.calls[0]!.request);
    await tdb.prisma.product.update({ where: { sku: 'MUG-WHT' }, data: { name: 'White mug (renamed)' } });
    try {
      const sent = await bed.step('sendOrderConfirmation', orderId, info(orderId, 2));
      expect(sent.performed).toBe(true);
      expect(mail.calls).toHaveLength(2);
      expect(mail.calls[1]!.request).toEqual(mail.calls[0]!.request);
      expect(JSON.stringify(mail.calls[1]!.request)).not.toContain('renamed');
      expect((await claimOf(confirmationKey(orderId)))?.request).toBe(frozen);
    } finally {
      await tdb.prisma.product.update({ where: { sku: 'MUG-WHT' }, data: { name: 'White mug' } });
    }
  });

  it('after a definite refusal the next owner builds and freezes its own body (a fix reaches the provider)', async () => {
    const orderId = await invoiced();
    mail.failNext('unavailable', 1, 503);
    await failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 1)));
    const claim = await claimOf(confirmationKey(orderId));
    expect([claim?.status, claim?.request]).toEqual(['failed', expect.any(String)]);
    await tdb.prisma.product.update({ where: { sku: 'MUG-WHT' }, data: { name: 'White mug (fixed)' } });
    try {
      await bed.step('sendOrderConfirmation', orderId, info(orderId, 2));
      expect(JSON.stringify(mail.calls[1]!.request)).toContain('White mug (fixed)');
      expect(JSON.parse((await claimOf(confirmationKey(orderId)))!.request!)).toEqual(mail.calls[1]!.request);
    } finally {
      await tdb.prisma.product.update({ where: { sku: 'MUG-WHT' }, data: { name: 'White mug' } });
    }
  });
});

describe('claim → call: a halt that comes before the call stops it', () => {
  it('a halt while the step is between its claim and its call tombstones the claim; the step calls nothing', async () => {
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const pivot = SHIPPED_STEPS.find((s) => s.name === 'sendOrderConfirmation')!;
    if (pivot.kind !== 'provider') throw new Error('the pivot is a provider step');
    // The shipped steps with the confirmation held between claim and call (its body is built there).
    const steps = validateSteps(
      SHIPPED_STEPS.map((s): StepDefinition =>
        s === pivot
          ? {
              ...pivot,
              request: async (ctx) => {
                await held;
                return pivot.request(ctx);
              },
            }
          : s,
      ),
    );
    const heldBed = kitTestBed(tdb, { steps });
    const orderId = await insertOrder(tdb.prisma, [{ sku: 'MUG-WHT', quantity: 1 }]);
    await heldBed.step('createInvoice', orderId);
    const running = failureOf(heldBed.step('sendOrderConfirmation', orderId, info(orderId, 1)));
    for (let i = 0; i < 200 && (await claimOf(confirmationKey(orderId)))?.status !== 'claimed'; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect((await claimOf(confirmationKey(orderId)))?.status).toBe('claimed');
    expect(await heldBed.halt(orderId, 'cancelled: customer asked')).toEqual({
      outcome: 'halted',
      rank: plannedStep('createInvoice').rank,
    });
    release();
    const refused = await running;
    expect([refused.type, refused.nonRetryable]).toEqual([ErrorType.OrderHalted, true]);
    expect(heldBed.fakes.email!.calls).toHaveLength(0);
    const claim = await claimOf(confirmationKey(orderId));
    expect([claim?.status, claim?.request]).toEqual(['cancelled', null]);
  });

  it('a halt after the call started finds the claim sending and answers unknown, changing nothing', async () => {
    const orderId = await invoiced();
    mail.delayMs = 300;
    const sending = bed.step('sendOrderConfirmation', orderId, info(orderId, 1));
    for (let i = 0; i < 200 && (await claimOf(confirmationKey(orderId)))?.status !== 'sending'; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    expect(await bed.halt(orderId)).toMatchObject({ outcome: 'unknown', step: 'sendOrderConfirmation' });
    expect((await sending).performed).toBe(true);
    expect((await orderRow(orderId)).haltedAt).toBeNull();
  });
});

describe('a provider answer the claim cannot record is never reported as success', () => {
  it('the claim was tombstoned during the call: SideEffectUnrecordedError, and no status is written', async () => {
    const orderId = await invoiced();
    mail.delayMs = 300;
    const sending = failureOf(bed.step('sendOrderConfirmation', orderId, info(orderId, 1)));
    for (let i = 0; i < 200 && (await claimOf(confirmationKey(orderId)))?.status !== 'sending'; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    // What no protocol path does (a hand edit, a bug): the claim turned into a tombstone while the call ran.
    await tdb.prisma.sideEffectClaim.update({
      where: { key: confirmationKey(orderId) },
      data: { status: 'cancelled', owner: 'tombstone' },
    });
    const failure = await sending;
    expect([failure.type, failure.nonRetryable, failure.details?.[0]]).toEqual([
      ErrorType.SideEffectUnrecorded,
      true,
      { mayHaveActed: true, claim: 'cancelled' },
    ]);
    expect(mail.effects.size).toBe(1);
    const order = await orderRow(orderId);
    expect([order.status, order.statusStep]).toEqual(['invoiced', plannedStep('createInvoice').rank]);
    expect((await claimOf(confirmationKey(orderId)))?.status).toBe('cancelled');
  });
});

describe('after the pivot an unknown outcome is judged from the claim, not only from the last error', () => {
  it('a 502 then 503s: the last failure (503, this call not performed) still says the provider may have acted', async () => {
    const orderId = await confirmed();
    carrier.failNext('unavailable', 1, 502);
    await failureOf(bed.step('shipOrder', orderId, info(orderId, 1, '7')));
    carrier.failNext('unavailable', 1, 503);
    const last = await failureOf(bed.step('shipOrder', orderId, info(orderId, 2, '7')));
    expect([last.type, last.details?.[0]]).toEqual([
      ErrorType.ProviderUnavailable,
      { status: 503, mayHaveActed: true },
    ]);
    expect((await claimOf(`shipment:${orderId}`))?.status).toBe('sending');
  });

  it('a failure after the carrier acted (recording the shipment failed) says it may have acted', async () => {
    const orderId = await confirmed();
    // Less reserved than the shipment consumes: its record fails after the carrier created the label.
    await tdb.prisma.$executeRaw`UPDATE products SET reserved = 0 WHERE sku = 'MUG-WHT'`;
    try {
      const failure = await failureOf(bed.step('shipOrder', orderId, info(orderId, 1, '7')));
      expect([failure.type, failure.details?.[0]]).toEqual([ErrorType.Validation, { mayHaveActed: true }]);
    } finally {
      await tdb.prisma.$executeRaw`UPDATE products SET reserved = reserved + 1 WHERE sku = 'MUG-WHT'`;
    }
  });
});

describe('haltOrder reads the pivot and the keys from the order’s plan, not the registry of today', () => {
  it('with the pivot moved to shipOrder in the registry, a sent confirmation (the plan’s pivot) still answers sent', async () => {
    const moved = validateSteps(
      SHIPPED_STEPS.map((s) =>
        s.name === 'sendOrderConfirmation'
          ? { ...s, phase: StepPhase.BeforePivot }
          : s.name === 'shipOrder'
            ? { ...s, phase: StepPhase.Pivot }
            : s,
      ),
    );
    const movedBed = kitTestBed(tdb, { steps: moved });
    const orderId = await invoiced();
    const sent = await bed.step('sendOrderConfirmation', orderId);
    const result = await mockEnv().run(movedBed.acts.haltOrder, {
      orderId,
      reason: 'cancelled',
      steps: ['sendOrderConfirmation'],
      pivot: 'sendOrderConfirmation',
    });
    expect(result).toEqual({ outcome: 'sent', step: 'sendOrderConfirmation', providerId: sent.providerId });
    expect((await orderRow(orderId)).haltedAt).toBeNull();
  });

  it('a fenced step removed from the registry is fenced by its key from the plan', async () => {
    const orderId = await invoiced();
    const result = await mockEnv().run(bed.acts.haltOrder, {
      orderId,
      reason: 'cancelled',
      steps: ['sendPostcard', 'sendOrderConfirmation'],
      pivot: 'sendOrderConfirmation',
      keys: { sendPostcard: `postcard:${orderId}`, sendOrderConfirmation: confirmationKey(orderId) },
    });
    expect(result).toEqual({ outcome: 'halted', rank: plannedStep('createInvoice').rank });
    const claim = await claimOf(`postcard:${orderId}`);
    expect([claim?.kind, claim?.status]).toEqual(['sendPostcard', 'cancelled']);
  });
});

describe('recordResolution: an operator’s decision, audited, settles the claim', () => {
  const resolution = (id: string) => tdb.prisma.orderResolution.findUnique({ where: { id } });

  it('not performed: the sending claim becomes failed, once per id, with who, why and when', async () => {
    const orderId = await invoiced();
    await unknownFirstCall(orderId);
    const input = {
      orderId,
      id: `resolve:ops:${orderId}`,
      step: 'sendOrderConfirmation',
      decision: 'not_performed' as const,
      reason: 'the provider has no message under this key',
      by: 'ops',
    };
    expect(await bed.kit('recordResolution', input)).toEqual({
      recorded: true,
      claim: { key: confirmationKey(orderId), status: 'failed' },
    });
    const row = await resolution(input.id);
    expect([row?.orderId, row?.step, row?.decision, row?.decidedBy, row?.reason, row?.claimKey]).toEqual([
      orderId,
      'sendOrderConfirmation',
      'not_performed',
      'ops',
      input.reason,
      confirmationKey(orderId),
    ]);
    expect(row?.decidedAt).toBeInstanceOf(Date);
    // The same id again records nothing and changes nothing.
    expect(await bed.kit('recordResolution', { ...input, decision: 'performed' })).toEqual({
      recorded: false,
      claim: { key: confirmationKey(orderId), status: 'failed' },
    });
    expect(await tdb.prisma.orderResolution.count({ where: { orderId } })).toBe(1);
    expect(await bed.halt(orderId)).toMatchObject({ outcome: 'halted' });
  });

  it('performed: the claim becomes sent with the operator’s reference, and a step after the pivot writes its status', async () => {
    const orderId = await confirmed();
    carrier.failNext('rejected');
    await failureOf(bed.step('shipOrder', orderId, info(orderId, 1, '7')));
    const shipped = plannedStep('shipOrder');
    const result = await bed.kit('recordResolution', {
      orderId,
      id: `resolve:ops:ship-${orderId}`,
      step: 'shipOrder',
      decision: 'performed',
      reason: 'shipped by hand with another carrier',
      by: 'ops',
      providerId: 'manual-shipment-42',
      status: { status: shipped.status, rank: shipped.rank },
    });
    expect(result).toEqual({ recorded: true, claim: { key: `shipment:${orderId}`, status: 'sent' } });
    const claim = await claimOf(`shipment:${orderId}`);
    expect([claim?.status, claim?.providerId, claim?.owner]).toEqual(['sent', 'manual-shipment-42', 'operator:ops']);
    expect((await orderRow(orderId)).status).toBe('shipped');
  });

  it('refuses performed on a tombstone and not performed on a sent claim, writing nothing', async () => {
    const halted = await invoiced();
    await bed.halt(halted);
    const tomb = await failureOf(
      bed.kit('recordResolution', {
        orderId: halted,
        id: `resolve:ops:t-${halted}`,
        step: 'sendOrderConfirmation',
        decision: 'performed',
        reason: 'x',
        by: 'ops',
      }),
    );
    expect([tomb.type, tomb.nonRetryable]).toEqual([ErrorType.Validation, true]);

    const sent = await invoiced();
    await bed.step('sendOrderConfirmation', sent);
    const refused = await failureOf(
      bed.kit('recordResolution', {
        orderId: sent,
        id: `resolve:ops:s-${sent}`,
        step: 'sendOrderConfirmation',
        decision: 'not_performed',
        reason: 'x',
        by: 'ops',
      }),
    );
    expect(refused.type).toBe(ErrorType.Validation);
    expect(await tdb.prisma.orderResolution.count({ where: { orderId: { in: [halted, sent] } } })).toBe(0);
  });

  it('closed: the order ends closed with the reason and who closed it', async () => {
    const orderId = await confirmed();
    await bed.kit('recordResolution', {
      orderId,
      id: `close:ops:${orderId}`,
      step: 'shipOrder',
      decision: 'closed',
      reason: 'customer refunded by hand',
      by: 'ops',
      status: { status: 'closed', rank: FINAL_FAILURE_RANK },
    });
    const order = await orderRow(orderId);
    expect([order.status, order.failureReason]).toEqual([
      'closed',
      'closed at shipOrder by ops: customer refunded by hand',
    ]);
  });
});
