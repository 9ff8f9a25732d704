/**
 * The at-least-once properties of the return workflow's activities (activities/returns/return.activities.ts), on a
 * conformance lane (./harness.ts: a fresh database, the real simulator server over HTTP, real provider clients,
 * the activities under MockActivityEnvironment as a worker runs them). Each order is placed and run through every
 * step of the registry (shipped, captured), then a return of 2 of its units (1 damaged on receipt) is stored as the
 * API stores it. For each provider activity of a return (label, emails, refund, credit note):
 * - `once`: one effect under its key; `twice`: a second run acts on nothing and answers the same provider id;
 * - `concurrent`: two executions at once make one effect;
 * - `answer-lost`: the provider acted but its answer was lost: the retry under the same key makes no second effect;
 * - `rejected`: a definite refusal leaves the claim `failed` and fails non-retryable (the workflow's operator exit).
 * And for the receipt: twice or concurrently, one restock movement per SKU, stock equal to its movements, one fixed
 * refund amount; the refunds of an order never exceed what was captured.
 */
import { randomUUID } from 'node:crypto';
import { type ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatMinor } from '../../activities/catalogue/text.js';
import { STEPS } from '../../activities/steps/index.js';
import { ErrorType } from '../../workflows/errors.js';
import { returnWorkflowId, type ReturnActivities } from '../../workflows/order-return.contract.js';
import { TEST_CATALOGUE, type TestSku } from '../helpers/fixtures.js';
import { advanceTo, openLane, placeOrder, PROJECT_REGISTRY, runActivity, retryPolicyOf, type Lane } from './harness.js';

let lane: Lane;

/** A shipped, captured order with a stored return of 1 unit of each of its two lines (as the API stores one). */
async function shippedReturn(): Promise<{ orderId: string; returnId: string; skus: string[] }> {
  const order = await placeOrder(lane);
  await advanceTo(lane, order, order.plan.steps.length);
  const returnId = randomUUID();
  const lines = await lane.db.sql.$queryRaw<Array<{ sku: string; unit_price_minor: number }>>`
    SELECT sku, unit_price_minor FROM order_lines WHERE order_id = ${order.orderId}::uuid ORDER BY sku`;
  await lane.db.sql.$transaction(async (tx) => {
    await tx.$executeRaw`SELECT 1 FROM orders WHERE id = ${order.orderId}::uuid FOR UPDATE`;
    await tx.$executeRaw`
      INSERT INTO returns (id, order_id, client_id, status, reason_code, currency, damaged_refund_percent, workflow_id)
      SELECT ${returnId}::uuid, id, client_id, 'requested', 'wrong_size', currency, 50, ${returnWorkflowId(returnId)}
      FROM orders WHERE id = ${order.orderId}::uuid`;
    for (const l of lines) {
      await tx.$executeRaw`
        INSERT INTO return_lines (return_id, sku, quantity, unit_price_minor)
        VALUES (${returnId}::uuid, ${l.sku}, 1, ${l.unit_price_minor})`;
    }
  });
  return { orderId: order.orderId, returnId, skus: lines.map((l) => l.sku) };
}

/** Runs a return activity as the workflow's execution `activityId`, attempt `attempt`. */
function run<K extends keyof ReturnActivities>(
  name: K,
  input: Parameters<ReturnActivities[K]>[0],
  activityId = '1',
  attempt = 1,
): ReturnType<ReturnActivities[K]> {
  const fn = (lane.activities as unknown as Record<string, (i: unknown) => Promise<unknown>>)[name]!;
  return runActivity(fn, input, {
    activityId,
    activityType: name,
    attempt,
    isLocal: false,
    workflowExecution: { workflowId: returnWorkflowId(input.returnId), runId: 'run-1' },
    retryPolicy: retryPolicyOf('providerCall'),
  } as never) as ReturnType<ReturnActivities[K]>;
}

/** Brings a return to the step under test: label (and receipt, for refund and credit note). */
async function returnAt(
  step: 'label' | 'email' | 'refund' | 'credit',
): Promise<{ orderId: string; returnId: string; skus: string[] }> {
  const r = await shippedReturn();
  if (step === 'label') return r;
  await run('createReturnLabel', { returnId: r.returnId });
  if (step === 'email') return r;
  await receive(r);
  if (step === 'credit') await run('refundReturn', { returnId: r.returnId });
  return r;
}

async function receive(r: { returnId: string; skus: string[] }, activityId = '3') {
  return run(
    'recordReturnReceipt',
    {
      returnId: r.returnId,
      receipt: {
        returnId: r.returnId,
        receiptId: 'receipt-1',
        lines: [
          { sku: r.skus[0]!, quantity: 1, damaged: 0 },
          { sku: r.skus[1]!, quantity: 1, damaged: 1 },
        ],
        by: 'warehouse',
        receivedAt: '2026-12-04T12:00:00.000Z',
      },
    },
    activityId,
  );
}

/** Each provider activity of a return: how to reach it, how to run it, its key and its provider. */
const EFFECTS = [
  { name: 'createReturnLabel', at: 'label', provider: 'carrier', key: (id: string) => `return-label:${id}` },
  { name: 'sendReturnEmail', at: 'email', provider: 'email', key: (id: string) => `return-label-email:${id}` },
  { name: 'refundReturn', at: 'refund', provider: 'payments', key: (id: string) => `refund:${id}` },
  { name: 'creditReturn', at: 'credit', provider: 'accounting', key: (id: string) => `credit-note:${id}` },
] as const;

function runEffect(
  effect: (typeof EFFECTS)[number],
  returnId: string,
  activityId = '5',
  attempt = 1,
): Promise<unknown> {
  return effect.name === 'sendReturnEmail'
    ? run('sendReturnEmail', { returnId, kind: 'label' }, activityId, attempt)
    : run(effect.name, { returnId }, activityId, attempt);
}

beforeAll(async () => {
  lane = await openLane(STEPS, PROJECT_REGISTRY);
}, 120_000);
afterAll(async () => {
  await lane?.close();
});

describe.each(EFFECTS)('$name', (effect) => {
  const ledger = () => lane.sims.provider(effect.provider).ledger;

  it('once, then twice: one effect, the same provider id', async () => {
    const r = await returnAt(effect.at);
    const first = await runEffect(effect, r.returnId);
    const second = await runEffect(effect, r.returnId, '6');
    expect(ledger().count(effect.key(r.returnId))).toBe(1);
    expect(JSON.stringify(second)).toContain(JSON.stringify(first).match(/"(rl|msg|re|acc_cn)_[0-9a-f]+"/)![0]);
  });

  it('concurrent: two executions at once make one effect', async () => {
    const r = await returnAt(effect.at);
    const results = await Promise.allSettled([runEffect(effect, r.returnId, '5'), runEffect(effect, r.returnId, '6')]);
    // The loser may be told to retry (ClaimInProgressError); its retry finds the effect done.
    for (const [i, result] of results.entries()) {
      if (result.status === 'rejected') {
        expect((result.reason as ApplicationFailure).type, String(result.reason)).toBe(ErrorType.ClaimInProgress);
        await runEffect(effect, r.returnId, i === 0 ? '5' : '6', 2);
      }
    }
    expect(ledger().count(effect.key(r.returnId))).toBe(1);
  });

  it('answer lost: the retry under the same key makes no second effect', async () => {
    const r = await returnAt(effect.at);
    const key = effect.key(r.returnId);
    lane.sims.provider(effect.provider).injectFault({ mode: 'drop-response', keyPrefix: key, times: 1 });
    const lost = await runEffect(effect, r.returnId).then(
      () => null,
      (e: unknown) => e as ApplicationFailure,
    );
    expect(lost?.nonRetryable).toBe(false);
    expect(ledger().count(key)).toBe(1);
    await runEffect(effect, r.returnId, '5', 2);
    expect(ledger().count(key)).toBe(1);
  });

  it('rejected: the claim is freed and the failure is permanent', async () => {
    const r = await returnAt(effect.at);
    const key = effect.key(r.returnId);
    lane.sims.provider(effect.provider).injectFault({ mode: 'reject', keyPrefix: key, times: 1 });
    const failure = await runEffect(effect, r.returnId).then(
      () => null,
      (e: unknown) => e as ApplicationFailure,
    );
    expect(failure?.type).toBe(ErrorType.ProviderRejected);
    expect(failure?.nonRetryable).toBe(true);
    expect(ledger().count(key)).toBe(0);
    const [claim] = await lane.db.sql.$queryRaw<
      Array<{ status: string }>
    >`SELECT status FROM side_effect_claims WHERE key = ${key}`;
    expect(claim?.status).toBe('failed');
  });
});

describe('the receipt', () => {
  it('twice and concurrently: one restock per SKU, stock equal to its movements, one refund amount', async () => {
    const r = await returnAt('email');
    const [stockBefore] = await lane.db.sql.$queryRaw<Array<{ on_hand: number }>>`
      SELECT on_hand FROM products WHERE sku = ${r.skus[0]!}`;
    const answers = await Promise.all([receive(r, '3'), receive(r, '4')]);
    const again = await receive(r, '5');
    // 1 undamaged unit at full price + 1 damaged at 50 % (the return's damaged_refund_percent), rounded down.
    const prices = await lane.db.sql.$queryRaw<Array<{ unit_price_minor: number }>>`
      SELECT unit_price_minor FROM return_lines WHERE return_id = ${r.returnId}::uuid ORDER BY sku`;
    const expected = prices[0]!.unit_price_minor + Math.floor(prices[1]!.unit_price_minor / 2);
    for (const a of [...answers, again])
      expect(a).toEqual({ refundMinor: expected, restocked: 1, refund: formatMinor(expected, 'EUR') });
    const [stockAfter] = await lane.db.sql.$queryRaw<Array<{ on_hand: number }>>`
      SELECT on_hand FROM products WHERE sku = ${r.skus[0]!}`;
    expect(stockAfter!.on_hand).toBe(stockBefore!.on_hand + 1);
    const movements = await lane.db.sql.$queryRaw<Array<{ id: string }>>`
      SELECT id FROM inventory_movements WHERE id LIKE ${`return:${r.returnId}:%`}`;
    expect(movements.map((m) => m.id)).toEqual([`return:${r.returnId}:${r.skus[0]}`]);
    // Stock equals the opening stock plus every movement, for every product.
    const stock = await lane.db.sql.$queryRaw<
      Array<{ sku: string; on_hand: number; reserved: number; moved: number; held: number }>
    >`
      SELECT p.sku, p.on_hand, p.reserved, coalesce(sum(m.on_hand_delta), 0)::int AS moved,
             coalesce(sum(m.reserved_delta), 0)::int AS held
      FROM products p LEFT JOIN inventory_movements m ON m.sku = p.sku GROUP BY p.sku, p.on_hand, p.reserved`;
    for (const p of stock) {
      const opening = TEST_CATALOGUE[p.sku as TestSku][2];
      expect([p.on_hand, p.reserved], p.sku).toEqual([opening + p.moved, p.held]);
    }
  });

  it('refunds never exceed the captured amount, and the payment records what was refunded', async () => {
    const r = await returnAt('refund');
    await run('refundReturn', { returnId: r.returnId });
    const [payment] = await lane.db.sql.$queryRaw<Array<{ captured_minor: number; refunded_minor: number }>>`
      SELECT captured_minor, refunded_minor FROM payments WHERE order_id = ${r.orderId}::uuid`;
    const [ret] = await lane.db.sql.$queryRaw<Array<{ refund_minor: number; status: string }>>`
      SELECT refund_minor, status FROM returns WHERE id = ${r.returnId}::uuid`;
    expect(payment!.refunded_minor).toBe(ret!.refund_minor);
    expect(payment!.refunded_minor).toBeLessThanOrEqual(payment!.captured_minor);
    expect(ret!.status).toBe('refunded');
    // A second return of the same units is refused by the database: the order's returns claim all it shipped.
    await expect(
      lane.db.sql.$transaction(async (tx) => {
        const id = randomUUID();
        await tx.$executeRaw`
          INSERT INTO returns (id, order_id, client_id, status, reason_code, currency, damaged_refund_percent, workflow_id)
          SELECT ${id}::uuid, id, client_id, 'requested', 'other', currency, 0, ${returnWorkflowId(id)}
          FROM orders WHERE id = ${r.orderId}::uuid`;
        await tx.$executeRaw`
          INSERT INTO return_lines (return_id, sku, quantity, unit_price_minor) VALUES (${id}::uuid, ${r.skus[0]!}, 1, 1)`;
      }),
    ).rejects.toThrow(/return_lines_within_shipped/);
  });
});
