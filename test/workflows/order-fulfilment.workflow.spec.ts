/**
 * The workflow on a real Temporal dev server with scripted activities over an in-memory model of one order
 * (stock reserved, invoice, confirmation claim, halt tombstone, shipment, accounting) that keeps the real
 * activities' guarantees: the halt fence tombstones an unsent confirmation, forward steps refuse a halted
 * order, compensations are no-ops when their step never acted.
 *
 * Covers the step order and status, the status query and search attributes, compensation, attention after the
 * pivot with the `retry` Update, and one table-driven test that cancels at every point (before and during each
 * activity, while waiting) and checks the order's story each time:
 * `cancelled`/`failed` ⇒ no confirmation sent, stock back, invoice void; `completed` ⇒ exactly one confirmation,
 * one shipment (reservation consumed), one accounting sync.
 *
 * Its plans are those of the shipped steps as 1.0.0 laid them out (../helpers/shipped-steps.ts `V1_0_0_STEPS`: the
 * confirmation is the pivot), not of the live registry: a step added to activities/steps/index.ts has no scripted
 * activity here, and must not make these plans wait for it. Orders placed on 1.0.0 keep that plan, so every pivot
 * test here is also the proof that such an order still refuses a cancel once its confirmation went out; the plan of
 * today (the shipment is the pivot) is proven in ./pivot-at-hand-over.workflow.spec.ts on the real activities.
 */
import { randomUUID } from 'node:crypto';
import {
  type Client,
  WorkflowFailedError,
  WorkflowUpdateFailedError,
  WorkflowUpdateStage,
  type WorkflowHandle,
} from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure, type Duration } from '@temporalio/common';
import type { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrderWorkers } from '../../src/worker/order-worker.js';
import { V1_0_0_STEPS } from '../helpers/shipped-steps.js';
import { activitiesByTaskQueue } from '../../activities/index.js';
import { buildPlan } from '../../activities/catalogue/plan.js';
import { ErrorType } from '../../workflows/errors.js';
import {
  ORDER_WORKFLOW_TYPE,
  SEARCH_ATTRIBUTES,
  cancelOrderUpdate,
  closeOrderUpdate,
  orderStatusQuery,
  orderWorkflowId,
  resolveStepUpdate,
  retryStepUpdate,
  type OrderCompletedResult,
  type OrderFulfilmentResult,
} from '../../workflows/order-fulfilment.contract.js';
import { startWorkflowWorkers, type WorkflowWorkers } from '../helpers/workflow-workers.js';

type Call = { name: string; arg: Record<string, unknown> };
type Activity = (arg: Record<string, unknown>) => Promise<unknown>;

/** The in-memory order: what the database and the providers would hold. */
interface FakeOrder {
  calls: Call[];
  reserved: boolean;
  /** Shipped: the reservation was consumed. */
  consumed: boolean;
  invoice: 'none' | 'issued' | 'void';
  claim: 'none' | 'claimed' | 'sending' | 'sent' | 'failed' | 'cancelled';
  halted: boolean;
  emails: number;
  /** The confirmation's provider id once sent (default `msg_1`). */
  providerId?: string;
  shipments: number;
  accountingSyncs: number;
  statuses: string[];
  /** The operator decisions recorded (recordResolution's inputs). */
  resolutions: Array<Record<string, unknown>>;
  /** Per-activity behaviour replacing the default (which still sees `order`). */
  overrides: Partial<Record<string, (order: FakeOrder, arg: Record<string, unknown>) => Promise<unknown>>>;
}

const orders = new Map<string, FakeOrder>();
const taskQueue = `wf-test-${randomUUID()}`;
let connection: NativeConnection;
let client: Client;
let workers: WorkflowWorkers;

/** The rank of each shipped step (the status rank a step writes with its effect). */
const RANK: Record<string, number> = Object.fromEntries(
  buildPlan(V1_0_0_STEPS, {
    orderId: 'rank',
    customerEmail: 'ada@example.com',
    customerName: 'Ada',
    currency: 'EUR',
    totalMinor: 1,
    lines: [{ sku: 'TEE-BLK-M', quantity: 1 }],
  }).steps.map((s) => [s.name, s.rank]),
);

/** Whether the fence stopped the order (a function, so the checks after an await are not narrowed away). */
const fenced = (o: FakeOrder): boolean => o.halted || o.claim === 'cancelled';

const halted = (step: string) => ApplicationFailure.nonRetryable(`${step} refused: halted`, ErrorType.OrderHalted);

/** The real activities' rules, on the in-memory order. */
const defaults: Record<string, (o: FakeOrder, arg: Record<string, unknown>) => Promise<unknown>> = {
  reserveInventory: async (o) => {
    if (o.halted) throw halted('reserveInventory');
    o.reserved = true;
    return { step: 'reserveInventory', performed: true, data: { movements: [] } };
  },
  createInvoice: async (o) => {
    if (o.halted) throw halted('createInvoice');
    if (o.invoice === 'none') o.invoice = 'issued';
    return { step: 'createInvoice', performed: true, data: { invoiceNumber: 'INV-000007' } };
  },
  sendOrderConfirmation: async (o) => sendConfirmation(o),
  haltOrder: async (o) => {
    if (o.claim === 'sent')
      return { outcome: 'sent', step: 'sendOrderConfirmation', providerId: o.providerId ?? 'msg_1' };
    if (o.claim === 'sending') return { outcome: 'unknown', step: 'sendOrderConfirmation', claimOwner: 'someone' };
    o.claim = 'cancelled';
    o.halted = true;
    // The rank of the last status the order reached (each database step writes its status with its effect).
    const rank = o.invoice !== 'none' ? RANK.createInvoice : o.reserved ? RANK.reserveInventory : 0;
    return { outcome: 'halted', rank };
  },
  voidInvoice: async (o) => {
    o.halted = true;
    const voided = o.invoice === 'issued';
    if (voided) o.invoice = 'void';
    return { compensation: 'voidInvoice', performed: voided };
  },
  releaseInventory: async (o) => {
    o.halted = true;
    if (!o.consumed) o.reserved = false;
    return { compensation: 'releaseInventory', performed: true };
  },
  shipOrder: async (o) => {
    if (o.shipments === 0) {
      o.shipments = 1;
      o.consumed = true;
      o.reserved = false;
    }
    return { step: 'shipOrder', performed: true, providerId: 'shp_1', key: 'k' };
  },
  syncInvoiceToAccounting: async (o) => {
    if (o.invoice === 'void') throw halted('syncInvoiceToAccounting');
    o.accountingSyncs = 1;
    return { step: 'syncInvoiceToAccounting', performed: true, providerId: 'acc_1', key: 'k' };
  },
  setOrderStatus: async (o, a) => {
    o.statuses.push(a.status as string);
    return { applied: true };
  },
  planOrder: async (_o, a) => planOf(a.orderId as string),
  recordResolution: async (o, a) => {
    o.resolutions.push(a);
    // The real activity settles the step's claim and writes the status the decision leads to.
    if (a.step === 'sendOrderConfirmation') {
      if (a.decision === 'performed') {
        o.claim = 'sent';
        o.providerId = a.providerId as string;
      } else if (o.claim === 'sending') o.claim = 'failed';
    }
    // A compensation resolved performed was done by hand: the model's world says so.
    if (a.step === 'voidInvoice' && a.decision === 'performed' && o.invoice === 'issued') o.invoice = 'void';
    const status = a.status as { status: string } | undefined;
    if (status) o.statuses.push(status.status);
    return { recorded: true, claim: null };
  },
};

/**
 * The confirmation as the real activity does it: refuse a tombstone, claim, (optionally wait before or during
 * the provider call, heartbeating; a cancel before the call stops it), then send and mark sent.
 */
async function sendConfirmation(
  o: FakeOrder,
  opts: { beforeCall?: Promise<void>; duringCall?: Promise<void> } = {},
): Promise<unknown> {
  if (o.halted || o.claim === 'cancelled') throw halted('sendOrderConfirmation');
  if (o.claim === 'sent') return { step: 'sendOrderConfirmation', performed: false, providerId: 'msg_1', key: 'k' };
  const ctx = Context.current();
  const beat = setInterval(() => ctx.heartbeat(), 100);
  try {
    if (o.claim !== 'sending') o.claim = 'claimed';
    if (opts.beforeCall) {
      await Promise.race([opts.beforeCall, ctx.cancelled]);
    }
    // The fence, re-checked as the claim moves to `sending` (the halt tombstones a claim not yet calling).
    if (fenced(o)) throw halted('sendOrderConfirmation');
    o.claim = 'sending';
    await opts.duringCall; // the provider call: never cut short
    if (o.emails === 0) o.emails = 1;
    o.claim = 'sent';
    return { step: 'sendOrderConfirmation', performed: true, providerId: 'msg_1', key: 'k' };
  } catch (err) {
    if (err instanceof CancelledFailure && o.claim !== 'sent') {
      if (o.claim === 'sending' || o.claim === 'claimed') o.claim = 'failed';
    }
    throw err;
  } finally {
    clearInterval(beat);
  }
}

const activities: Record<string, Activity> = Object.fromEntries(
  Object.keys(defaults).map((name) => [
    name,
    async (arg: Record<string, unknown>) => {
      const order = orders.get(arg.orderId as string)!;
      order.calls.push({ name, arg });
      return (order.overrides[name] ?? defaults[name]!)(order, arg);
    },
  ]),
);

function newOrder(overrides: FakeOrder['overrides'] = {}): { orderId: string; order: FakeOrder } {
  const orderId = randomUUID();
  const order: FakeOrder = {
    calls: [],
    reserved: false,
    consumed: false,
    invoice: 'none',
    claim: 'none',
    halted: false,
    emails: 0,
    shipments: 0,
    accountingSyncs: 0,
    statuses: [],
    resolutions: [],
    overrides,
  };
  orders.set(orderId, order);
  return { orderId, order };
}

/**
 * Starts the order's workflow. `workflowTaskTimeout` shortens the wait for a workflow task that a blocked local
 * activity holds open: the worker heartbeats it (completes it and asks for a new one) at 80% of the timeout, and
 * only then does a cancel or an Update sent meanwhile reach the workflow.
 */
function start(orderId: string, workflowTaskTimeout?: Duration): Promise<WorkflowHandle> {
  return client.workflow.start(ORDER_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: orderWorkflowId(orderId),
    args: [{ orderId, plan: planOf(orderId) }],
    ...(workflowTaskTimeout ? { workflowTaskTimeout } : {}),
  });
}

/** How a run's history did its steps: activity tasks by type, local activities by type, patch markers by id. */
async function historyShape(
  handle: WorkflowHandle,
): Promise<{ activityTasks: string[]; localActivities: string[]; patches: string[] }> {
  const events = (await handle.fetchHistory()).events ?? [];
  const text = (p?: { data?: Uint8Array | null } | null) =>
    p?.data ? (JSON.parse(Buffer.from(p.data).toString('utf8')) as unknown) : undefined;
  const activityTasks: string[] = [];
  const localActivities: string[] = [];
  const patches: string[] = [];
  for (const e of events) {
    const scheduled = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (scheduled) activityTasks.push(scheduled);
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName === 'core_local_activity') {
      const data = text(marker.details?.data?.payloads?.[0]) as { activity_type?: string } | undefined;
      localActivities.push(data?.activity_type ?? '?');
    }
    if (marker?.markerName === 'core_patch') {
      const data = text(marker.details?.['patch-data']?.payloads?.[0]) as { id?: string } | undefined;
      patches.push(data?.id ?? '?');
    }
  }
  return { activityTasks, localActivities, patches };
}

/** The values of the `OrderStatus` upserts in a workflow's history, in order. */
async function statusUpserts(handle: WorkflowHandle): Promise<string[]> {
  const history = await handle.fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const payload = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.OrderStatus;
    return payload?.data ? [JSON.parse(Buffer.from(payload.data).toString('utf8')) as string] : [];
  });
}

/** The plan the API would store for a one-line order of the shipped steps (../helpers/shipped-steps.ts). */
function planOf(orderId: string) {
  return buildPlan(V1_0_0_STEPS, {
    orderId,
    customerEmail: 'ada@example.com',
    customerName: 'Ada',
    currency: 'EUR',
    totalMinor: 1999,
    lines: [{ sku: 'TEE-BLK-M', quantity: 1 }],
  });
}

/** Starts the order as the API's starter does: with `OrderId` and `OrderStatus` `received` set at start. */
function startAsTheApi(orderId: string): Promise<WorkflowHandle> {
  return client.workflow.start(ORDER_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: orderWorkflowId(orderId),
    args: [{ orderId, plan: planOf(orderId) }],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.OrderId, value: orderId },
      { key: SEARCH_ATTRIBUTES.OrderStatus, value: 'received' },
    ],
  });
}

/** Reads until `accept` holds (every 25 ms, at most 10 s) and returns the last value read. */
async function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean): Promise<T> {
  let value = await read();
  for (let i = 0; i < 400 && !accept(value); i++) {
    await new Promise((r) => setTimeout(r, 25));
    value = await read();
  }
  return value;
}

/** A shipOrder that the carrier rejects for good once (422), then waits at `g` before shipping. */
function rejectedOnceThenGated(g: ReturnType<typeof gate>): NonNullable<FakeOrder['overrides']['shipOrder']> {
  let attempts = 0;
  return async (o, a) => {
    attempts++;
    if (attempts === 1) throw ApplicationFailure.nonRetryable('carrier 422', ErrorType.ProviderRejected);
    g.enter();
    await g.wait;
    return defaults.shipOrder!(o, a);
  };
}

/** Whether the history has the workflow cancel request. */
async function cancelRequested(handle: WorkflowHandle): Promise<boolean> {
  const events = (await handle.fetchHistory()).events ?? [];
  return events.some((e) => e.workflowExecutionCancelRequestedEventAttributes);
}

/** A promise and its resolver: a step waits on it until the test lets it go. */
function gate(): { wait: Promise<void>; open: () => void; entered: Promise<void>; enter: () => void } {
  let open!: () => void;
  let enter!: () => void;
  const wait = new Promise<void>((r) => (open = r));
  const entered = new Promise<void>((r) => (enter = r));
  return { wait, open, entered, enter };
}

async function outcome(p: Promise<unknown>): Promise<{ ok: true; value: unknown } | { ok: false; error: unknown }> {
  return p.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );
}

/** The failure type inside a WorkflowUpdateFailedError / WorkflowFailedError. */
function causeType(err: unknown): string | undefined {
  const cause = (err as { cause?: unknown }).cause;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

const names = (o: FakeOrder) => o.calls.map((c) => (c.name === 'setOrderStatus' ? `status:${c.arg.status}` : c.name));

/** The invariant every order's story must satisfy once the workflow closed. */
function expectOneStory(o: FakeOrder, status: 'completed' | 'cancelled' | 'failed'): void {
  if (status === 'completed') {
    expect({ emails: o.emails, shipments: o.shipments, accounting: o.accountingSyncs, reserved: o.reserved }).toEqual({
      emails: 1,
      shipments: 1,
      accounting: 1,
      reserved: false,
    });
    expect(o.invoice).toBe('issued');
    expect(o.consumed).toBe(true);
  } else {
    expect({ emails: o.emails, shipments: o.shipments, accounting: o.accountingSyncs, reserved: o.reserved }).toEqual({
      emails: 0,
      shipments: 0,
      accounting: 0,
      reserved: false,
    });
    expect(o.invoice).not.toBe('issued');
    expect(o.claim).toBe('cancelled');
    expect(o.statuses.at(-1)).toBe(status);
  }
}

beforeAll(async () => {
  workers = await startWorkflowWorkers(taskQueue, activitiesByTaskQueue(activities, V1_0_0_STEPS));
  ({ connection, client } = workers);
});

afterAll(() => workers?.close());

describe('orderFulfilment workflow', () => {
  it('runs the five steps in order; each writes its own status, the workflow writes none', async () => {
    const { orderId, order } = newOrder();
    const handle = await start(orderId);
    const result = (await handle.result()) as OrderCompletedResult;
    expect(result).toEqual({
      orderId,
      status: 'completed',
      steps: {
        reserveInventory: null,
        createInvoice: null,
        sendOrderConfirmation: 'msg_1',
        shipOrder: 'shp_1',
        syncInvoiceToAccounting: 'acc_1',
      },
    });
    expect(names(order)).toEqual([
      'reserveInventory',
      'createInvoice',
      'sendOrderConfirmation',
      'shipOrder',
      'syncInvoiceToAccounting',
    ]);
    expectOneStory(order, 'completed');
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderStatus)).toBe('completed');
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderId)).toBe(orderId);
  });

  it('answers the status query while a step runs', async () => {
    const g = gate();
    const { orderId } = newOrder({
      sendOrderConfirmation: async (o) => {
        g.enter();
        return sendConfirmation(o, { duringCall: g.wait });
      },
    });
    const handle = await start(orderId);
    await g.entered;
    const state = await eventually(
      () => handle.query(orderStatusQuery),
      (s) => s.currentStep === 'sendOrderConfirmation',
    );
    expect(state).toEqual({
      orderId,
      status: 'invoiced',
      currentStep: 'sendOrderConfirmation',
      completedSteps: ['reserveInventory', 'createInvoice'],
      pivotPassed: false,
      attention: null,
      cancellation: null,
      failureReason: null,
    });
    g.open();
    await handle.result();
    expect((await handle.query(orderStatusQuery)).status).toBe('completed');
  });

  it('fails after exactly one attempt of a non-retryable reserve failure, fencing and compensating', async () => {
    const { orderId, order } = newOrder({
      reserveInventory: async () => {
        throw ApplicationFailure.nonRetryable(
          'insufficient stock for CAP-RED: requested 4, available 3',
          ErrorType.InsufficientStock,
        );
      },
    });
    const handle = await start(orderId);
    const err = (await outcome(handle.result())) as { ok: false; error: unknown };
    expect(err.error).toBeInstanceOf(WorkflowFailedError);
    expect(causeType(err.error)).toBe(ErrorType.OrderFailed);
    // Only the steps that started are compensated: reserve's compensation runs (a no-op when nothing was done),
    // createInvoice never started, so voidInvoice does not run.
    expect(names(order)).toEqual(['reserveInventory', 'haltOrder', 'releaseInventory', 'status:failed']);
    expect(order.calls.at(-1)!.arg.failureReason).toBe(
      'InsufficientStockError: insufficient stock for CAP-RED: requested 4, available 3',
    );
    expectOneStory(order, 'failed');
    expect((await handle.describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderStatus)).toBe('failed');
  });

  it('compensates when the confirmation is rejected for good (definitely not sent)', async () => {
    const { orderId, order } = newOrder({
      sendOrderConfirmation: async (o) => {
        o.claim = 'failed'; // the provider answered 422: nothing was sent
        throw ApplicationFailure.nonRetryable('recipient rejected', ErrorType.ProviderRejected, {
          status: 422,
          mayHaveActed: false,
        });
      },
    });
    const handle = await start(orderId);
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(names(order)).toEqual([
      'reserveInventory',
      'createInvoice',
      'sendOrderConfirmation',
      'haltOrder',
      'voidInvoice',
      'releaseInventory',
      'status:failed',
    ]);
    expectOneStory(order, 'failed');
  });

  it.each(['reserveInventory', 'createInvoice'] as const)(
    'undoes %s when its last attempt committed but its result was lost (compensation registered before the step)',
    async (step) => {
      const { orderId, order } = newOrder({
        [step]: async (o: FakeOrder, a: Record<string, unknown>) => {
          await defaults[step]!(o, a); // the effect commits...
          // ...and the answer never arrives (the worker died after the commit, the last attempt timed out).
          throw ApplicationFailure.nonRetryable('start-to-close timeout on the last attempt', 'TimeoutError');
        },
      });
      const handle = await start(orderId);
      await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
      // The step that failed started, so its compensation runs (and every earlier one's), newest first.
      const undo = step === 'createInvoice' ? ['voidInvoice', 'releaseInventory'] : ['releaseInventory'];
      expect(names(order).slice(-(undo.length + 2))).toEqual(['haltOrder', ...undo, 'status:failed']);
      expectOneStory(order, 'failed');
    },
  );

  it('a compensation that fails for good never makes the order final: it waits (compensation_failed) for a retry', async () => {
    let voids = 0;
    const { orderId, order } = newOrder({
      sendOrderConfirmation: async (o) => {
        o.claim = 'failed';
        throw ApplicationFailure.nonRetryable('invalid recipient', ErrorType.ProviderRejected);
      },
      voidInvoice: async (o, a) => {
        voids++;
        if (voids === 1) throw ApplicationFailure.nonRetryable('invoice locked', ErrorType.Validation);
        return defaults.voidInvoice!(o, a);
      },
    });
    const handle = await start(orderId);
    // The workflow waits once its own state says so; the database write follows in the same workflow task.
    await eventually(
      async () => order.statuses.at(-1),
      (st) => st === 'attention_required',
    );
    const waiting = await handle.query(orderStatusQuery);
    expect(waiting.attention).toEqual({
      step: 'voidInvoice',
      reason:
        'compensation_failed: voidInvoice failed: ValidationError: invoice locked ' +
        '(the order halted: ProviderRejectedError: invalid recipient)',
      outcomeUnknown: false,
      retries: 0,
      kind: 'compensation',
      resolutions: ['performed'],
      closable: false,
    });
    // The other compensations ran first (the stock is back); the order is not final, and says why in the database.
    expect(names(order).slice(-4)).toEqual([
      'haltOrder',
      'voidInvoice',
      'releaseInventory',
      'status:attention_required',
    ]);
    expect(order.reserved).toBe(false);
    expect(order.calls.at(-1)!.arg).toMatchObject({ status: 'attention_required', rank: 999_999 });
    expect(order.statuses).not.toContain('failed');
    expect((await handle.describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderStatus)).toBe(
      'attention_required',
    );
    // Neither a cancel nor an undo "not performed" is an exit; a retry is.
    const cancel = await outcome(handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: 'stop' }] }));
    expect(causeType((cancel as { error: unknown }).error)).toBe(ErrorType.OrderNotCancellable);
    const notPerformed = await outcome(
      handle.executeUpdate(resolveStepUpdate, {
        args: [{ step: 'voidInvoice', outcome: 'not_performed', reason: 'x', by: 'ops' }],
      }),
    );
    expect(causeType((notPerformed as { error: unknown }).error)).toBe(ErrorType.OrderNotAwaitingResolution);
    expect(await handle.executeUpdate(retryStepUpdate, { args: [{ step: 'voidInvoice' }] })).toEqual({
      orderId,
      step: 'voidInvoice',
      retry: 1,
    });
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(names(order).slice(-2)).toEqual(['voidInvoice', 'status:failed']);
    expect(order.calls.at(-1)!.arg.failureReason).toBe('ProviderRejectedError: invalid recipient');
    expectOneStory(order, 'failed');
  });

  it('a compensation that fails for good can be resolved as done by hand (audited); then the order ends', async () => {
    const { orderId, order } = newOrder({
      sendOrderConfirmation: async (o) => {
        o.claim = 'failed';
        throw ApplicationFailure.nonRetryable('invalid recipient', ErrorType.ProviderRejected);
      },
      voidInvoice: async () => {
        throw ApplicationFailure.nonRetryable('invoice locked', ErrorType.Validation);
      },
    });
    const handle = await start(orderId);
    await eventually(
      () => handle.query(orderStatusQuery),
      (st) => st.status === 'attention_required',
    );
    const resolve = { step: 'voidInvoice', outcome: 'performed' as const, reason: 'voided in the ledger', by: 'ops' };
    const answer = await handle.executeUpdate(resolveStepUpdate, { args: [resolve], updateId: 'resolve-1' });
    expect(answer).toEqual({ orderId, step: 'voidInvoice', outcome: 'performed', by: 'ops' });
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(order.resolutions).toEqual([
      {
        orderId,
        id: 'resolve-1',
        step: 'voidInvoice',
        decision: 'performed',
        reason: 'voided in the ledger',
        by: 'ops',
      },
    ]);
    expect(names(order).filter((n) => n === 'voidInvoice')).toHaveLength(1);
    expectOneStory(order, 'failed');
  });

  it('an unknown confirmation resolved as not performed (audited) fences again and compensates; a refused cancel then holds', async () => {
    const g = gate();
    const { orderId, order } = newOrder({
      sendOrderConfirmation: async (o) => {
        o.claim = 'sending'; // the call is under way when the cancel arrives; its answer will be a 502
        g.enter();
        await g.wait;
        throw ApplicationFailure.nonRetryable('email provider → 502', ErrorType.ProviderUnavailable, {
          status: 502,
          mayHaveActed: true,
        });
      },
    });
    const handle = await start(orderId);
    await g.entered;
    const cancel = await handle.startUpdate(cancelOrderUpdate, {
      args: [{ reason: 'customer asked' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    g.open();
    expect(causeType(((await outcome(cancel.result())) as { error: unknown }).error)).toBe(
      ErrorType.OrderNotCancellable,
    );
    const waiting = await eventually(
      () => handle.query(orderStatusQuery),
      (st) => st.status === 'attention_required',
    );
    // The workflow's state says attention_required before its status write has run: wait for the write too, so the
    // history below is in a known order.
    await eventually(
      async () => order.statuses.at(-1),
      (s) => s === 'attention_required',
    );
    expect(waiting.attention).toMatchObject({
      step: 'sendOrderConfirmation',
      outcomeUnknown: true,
      kind: 'step',
      resolutions: ['performed', 'not_performed'],
      closable: false,
    });
    // Only the waiting step, only a resolution it offers, with who and why.
    const wrongStep = await outcome(
      handle.executeUpdate(resolveStepUpdate, {
        args: [{ step: 'shipOrder', outcome: 'not_performed', reason: 'x', by: 'ops' }],
      }),
    );
    expect(causeType((wrongStep as { error: unknown }).error)).toBe(ErrorType.OrderNotAwaitingResolution);
    const noReason = await outcome(
      handle.executeUpdate(resolveStepUpdate, {
        args: [{ step: 'sendOrderConfirmation', outcome: 'not_performed', reason: ' ', by: 'ops' }],
      }),
    );
    expect(causeType((noReason as { error: unknown }).error)).toBe(ErrorType.Validation);
    const close = await outcome(handle.executeUpdate(closeOrderUpdate, { args: [{ reason: 'x', by: 'ops' }] }));
    expect(causeType((close as { error: unknown }).error)).toBe(ErrorType.OrderNotAwaitingResolution);

    const resolve = {
      step: 'sendOrderConfirmation',
      outcome: 'not_performed' as const,
      reason: 'the provider has no message under this key',
      by: 'ops',
    };
    const answer = await handle.executeUpdate(resolveStepUpdate, { args: [resolve], updateId: 'resolve-1' });
    expect(answer).toEqual({ orderId, step: 'sendOrderConfirmation', outcome: 'not_performed', by: 'ops' });
    // The customer asked to cancel: once the doubt is settled as not sent, the order is cancelled.
    expect(await handle.result()).toEqual({ orderId, status: 'cancelled', reason: 'customer asked' });
    expect(names(order).filter((n) => n === 'sendOrderConfirmation')).toHaveLength(1);
    expect(names(order).slice(-5)).toEqual([
      'recordResolution',
      'haltOrder',
      'voidInvoice',
      'releaseInventory',
      'status:cancelled',
    ]);
    expect(order.resolutions[0]).toMatchObject({
      step: 'sendOrderConfirmation',
      decision: 'not_performed',
      reason: resolve.reason,
      by: 'ops',
      key: `order-confirmation:${orderId}`,
    });
    expectOneStory(order, 'cancelled');
  });

  it('an unknown confirmation resolved as performed passes the pivot and completes; the same id gets the same answer', async () => {
    let attempts = 0;
    const { orderId, order } = newOrder({
      sendOrderConfirmation: async (o) => {
        attempts++;
        o.emails = 1; // the provider did send it; its answer was lost, and the key has expired there since
        o.claim = 'sending';
        throw ApplicationFailure.nonRetryable('email provider: timed out', ErrorType.ProviderUnavailable, {
          mayHaveActed: true,
        });
      },
    });
    const handle = await start(orderId);
    await eventually(
      () => handle.query(orderStatusQuery),
      (st) => st.status === 'attention_required',
    );
    const resolve = {
      step: 'sendOrderConfirmation',
      outcome: 'performed' as const,
      reason: 'the provider dashboard shows it delivered',
      by: 'ops',
      providerId: 'msg_from_dashboard',
    };
    const first = await handle.executeUpdate(resolveStepUpdate, { args: [resolve], updateId: 'resolve-7' });
    expect(await handle.executeUpdate(resolveStepUpdate, { args: [resolve], updateId: 'resolve-7' })).toEqual(first);
    const result = (await handle.result()) as OrderCompletedResult;
    expect(result.steps.sendOrderConfirmation).toBe('msg_from_dashboard');
    expect(attempts).toBe(1);
    expect(order.resolutions).toHaveLength(1);
    expectOneStory(order, 'completed');
  });

  it('sends an unknown confirmation outcome to a person, never to the saga; a retry settles it', async () => {
    let attempts = 0;
    const { orderId, order } = newOrder({
      sendOrderConfirmation: async (o) => {
        attempts++;
        if (attempts === 1) {
          // The email went out, but marking the claim sent failed; then the provider answered 500 until the
          // retries ran out: the claim says `sending`, the outcome is unknown.
          o.emails = 1;
          o.claim = 'sending';
          throw ApplicationFailure.nonRetryable('email provider → 500', ErrorType.ProviderRejected, {
            status: 500,
            mayHaveActed: true,
          });
        }
        return sendConfirmation(o);
      },
    });
    const handle = await start(orderId);
    const state = await eventually(
      () => handle.query(orderStatusQuery),
      (s) => s.status === 'attention_required',
    );
    expect(state.attention).toMatchObject({ step: 'sendOrderConfirmation', outcomeUnknown: true, retries: 0 });
    expect(names(order)).not.toContain('voidInvoice');
    expect(names(order)).not.toContain('releaseInventory');
    // A cancel now is refused: the confirmation may have gone out.
    const cancel = await outcome(handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: 'changed my mind' }] }));
    expect(cancel.ok).toBe(false);
    expect(causeType((cancel as { error: unknown }).error)).toBe(ErrorType.OrderNotCancellable);

    const retry = await handle.executeUpdate(retryStepUpdate, { args: [{}] });
    expect(retry).toEqual({ orderId, step: 'sendOrderConfirmation', retry: 1 });
    await handle.result();
    expectOneStory(order, 'completed');
  });

  it('a cancel that meets an unknown confirmation outcome is refused once; the operator retry re-sends and completes', async () => {
    const g = gate();
    let calls = 0;
    const { orderId, order } = newOrder({
      sendOrderConfirmation: async (o) => {
        calls++;
        if (calls > 1) return sendConfirmation(o);
        // The call is under way (its claim `sending`) when the cancel arrives.
        o.claim = 'sending';
        g.enter();
        await g.wait;
        // The provider got the email, but the call timed out on our side: the outcome is unknown.
        o.emails = 1;
        throw ApplicationFailure.nonRetryable(
          'email provider: timed out after 10000 ms',
          ErrorType.ProviderUnavailable,
          {
            mayHaveActed: true,
          },
        );
      },
    });
    const handle = await start(orderId);
    await g.entered;
    const accepted = await handle.startUpdate(cancelOrderUpdate, {
      args: [{ reason: 'customer asked' }],
      waitForStage: WorkflowUpdateStage.ACCEPTED,
    });
    g.open();
    const answer = await outcome(accepted.result());
    expect(causeType((answer as { error: unknown }).error)).toBe(ErrorType.OrderNotCancellable);
    const waiting = await eventually(
      () => handle.query(orderStatusQuery),
      (st) => st.status === 'attention_required',
    );
    expect(waiting.cancellation).toBeNull();
    expect(waiting.attention).toMatchObject({ step: 'sendOrderConfirmation', outcomeUnknown: true });
    // The retry really retries the confirmation (it used to run the halt fence again, forever).
    await handle.executeUpdate(retryStepUpdate, { args: [{}] });
    await handle.result();
    expect(names(order).filter((n) => n === 'sendOrderConfirmation')).toHaveLength(2);
    expectOneStory(order, 'completed');
  });

  it('compensates the steps a dead worker committed but never recorded when the cancel reaches the new worker first', async () => {
    // What a worker killed mid-task leaves (the issue-17 breaker's order a42183d7): the reservation and the invoice
    // committed (the order's rank says so), the history holds neither (their local activities' markers were never
    // recorded), and the cancel Update arrives with the replacement worker's first workflow task. Here no worker
    // polls the task queue until the Update waits.
    const { orderId, order } = newOrder();
    order.reserved = true;
    order.invoice = 'issued';
    const lateQueue = `${taskQueue}-late`;
    const handle = await client.workflow.start(ORDER_WORKFLOW_TYPE, {
      taskQueue: lateQueue,
      workflowId: orderWorkflowId(orderId),
      args: [{ orderId, plan: planOf(orderId) }],
    });
    const cancel = outcome(handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: 'customer asked' }] }));
    await new Promise((r) => setTimeout(r, 1_000));
    const late = await createOrderWorkers({
      connection,
      namespace: 'default',
      taskQueue: lateQueue,
      activities: activitiesByTaskQueue(activities, V1_0_0_STEPS),
    });
    const lateRunning = late.run();
    try {
      expect((await cancel).ok).toBe(true);
      expect(await handle.result()).toMatchObject({ orderId, status: 'cancelled' });
    } finally {
      late.shutdown();
      await lateRunning;
    }
    // No step ran in this workflow; the fence's rank names the two committed ones, undone newest first.
    expect(names(order)).toEqual(['haltOrder', 'voidInvoice', 'releaseInventory', 'status:cancelled']);
    expectOneStory(order, 'cancelled');
  });

  it("an API cancel racing a Temporal cancel gets the order's answer, not a cancelled Update", async () => {
    const g = gate();
    const { orderId, order } = newOrder({
      sendOrderConfirmation: async (o) => {
        g.enter();
        return sendConfirmation(o, { beforeCall: g.wait });
      },
    });
    const handle = await start(orderId);
    await g.entered;
    const [update] = await Promise.all([
      outcome(handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: 'customer asked' }] })),
      handle.cancel(),
    ]);
    expect(update.ok).toBe(true);
    await handle.result().catch(() => undefined);
    expectOneStory(order, 'cancelled');
  });

  it('a cancel fences the order at once: a confirmation held between claim and call, never told of the cancel, calls nothing', async () => {
    const g = gate();
    const { orderId, order } = newOrder({
      // No heartbeat: the activity never hears of the cancel; only the fence it re-checks before calling can stop it.
      sendOrderConfirmation: async (o) => {
        if (o.halted || o.claim === 'cancelled') throw halted('sendOrderConfirmation');
        o.claim = 'claimed';
        g.enter();
        await g.wait;
        if (fenced(o)) throw halted('sendOrderConfirmation');
        o.claim = 'sending';
        o.emails = 1;
        o.claim = 'sent';
        return { step: 'sendOrderConfirmation', performed: true, providerId: 'msg_1', key: 'k' };
      },
    });
    const handle = await start(orderId);
    await g.entered;
    const cancel = outcome(handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: 'customer asked' }] }));
    // The fence runs while the step still holds: the claim is tombstoned before the step goes on. The workflow goes
    // on to the compensations without waiting for the step, so they may already have started: only the prefix counts.
    try {
      await eventually(
        async () => order.claim,
        (c) => c === 'cancelled',
      );
      expect(names(order).slice(0, 4)).toEqual([
        'reserveInventory',
        'createInvoice',
        'sendOrderConfirmation',
        'haltOrder',
      ]);
      expect(order.emails).toBe(0);
    } finally {
      g.open();
    }
    expect(await cancel).toEqual({ ok: true, value: { orderId, status: 'cancelled', reason: 'customer asked' } });
    await handle.result();
    // One fence: the one the cancel started (it halted the order; nothing acted after it).
    expect(names(order).filter((n) => n === 'haltOrder')).toHaveLength(1);
    expectOneStory(order, 'cancelled');
    expect((await historyShape(handle)).patches).toEqual([
      'fence-on-cancel',
      'compensate-by-halted-rank',
      'compensation-failure-waits',
    ]);
  });

  it('a Temporal cancel while planOrder runs still halts the order and ends it cancelled', async () => {
    const { orderId, order } = newOrder({
      planOrder: async (_o, a) => {
        await new Promise((r) => setTimeout(r, 4_000));
        return planOf(a.orderId as string);
      },
    });
    const handle = await client.workflow.start(ORDER_WORKFLOW_TYPE, {
      taskQueue,
      workflowId: orderWorkflowId(orderId),
      args: [{ orderId }],
      workflowTaskTimeout: '2 seconds',
    });
    await new Promise((r) => setTimeout(r, 500));
    await handle.cancel();
    const closed = await outcome(handle.result());
    expect(closed.ok).toBe(true);
    expect(names(order)).toEqual(['planOrder', 'haltOrder', 'status:cancelled']);
    expect(order.statuses).toEqual(['cancelled']);
    expect(order.claim).toBe('cancelled');
  });

  it('after the pivot a refused step offers resolve (performed) and close: close ends the order closed, audited', async () => {
    const { orderId, order } = newOrder({
      shipOrder: async () => {
        throw ApplicationFailure.nonRetryable('carrier 422: address refused', ErrorType.ProviderRejected, {
          status: 422,
          mayHaveActed: false,
        });
      },
    });
    const handle = await startAsTheApi(orderId);
    const waiting = await eventually(
      () => handle.query(orderStatusQuery),
      (st) => st.status === 'attention_required',
    );
    expect(waiting.attention).toMatchObject({
      step: 'shipOrder',
      outcomeUnknown: false,
      kind: 'step',
      resolutions: ['performed'],
      closable: true,
    });
    // Not performed is already known (the carrier refused): not an offered resolution.
    const notPerformed = await outcome(
      handle.executeUpdate(resolveStepUpdate, {
        args: [{ step: 'shipOrder', outcome: 'not_performed', reason: 'x', by: 'ops' }],
      }),
    );
    expect(causeType((notPerformed as { error: unknown }).error)).toBe(ErrorType.OrderNotAwaitingResolution);
    const close = { reason: 'the customer was refunded by hand', by: 'ops' };
    const answer = await handle.executeUpdate(closeOrderUpdate, { args: [close], updateId: 'close-1' });
    expect(answer).toEqual({ orderId, status: 'closed', step: 'shipOrder', ...close });
    expect(await handle.executeUpdate(closeOrderUpdate, { args: [close], updateId: 'close-1' })).toEqual(answer);
    expect(await handle.result()).toEqual(answer);
    expect(order.resolutions).toEqual([
      {
        orderId,
        id: 'close-1',
        step: 'shipOrder',
        decision: 'closed',
        ...close,
        status: { status: 'closed', rank: 1_000_000 },
      },
    ]);
    expect(names(order)).not.toContain('syncInvoiceToAccounting');
    expect((await handle.describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderStatus)).toBe('closed');
    expect((await handle.query(orderStatusQuery)).status).toBe('closed');
  });

  it('after the pivot an unknown outcome resolved as performed counts the step done; not performed runs it again', async () => {
    let ships = 0;
    const { orderId, order } = newOrder({
      shipOrder: async () => {
        ships++;
        throw ApplicationFailure.nonRetryable('carrier: timed out', ErrorType.ProviderUnavailable, {
          mayHaveActed: true,
        });
      },
      syncInvoiceToAccounting: async (o, a) => {
        if (o.accountingSyncs === 0 && !order.resolutions.some((r) => r.step === 'syncInvoiceToAccounting')) {
          o.accountingSyncs = -1; // marks the first attempt
          throw ApplicationFailure.nonRetryable('accounting: timed out', ErrorType.ProviderUnavailable, {
            mayHaveActed: true,
          });
        }
        return defaults.syncInvoiceToAccounting!({ ...o, accountingSyncs: 0 } as FakeOrder, a).then((r) => {
          o.accountingSyncs = 1;
          return r;
        });
      },
    });
    const handle = await start(orderId);
    await eventually(
      () => handle.query(orderStatusQuery),
      (st) => st.attention?.step === 'shipOrder',
    );
    expect((await handle.query(orderStatusQuery)).attention?.resolutions).toEqual(['performed', 'not_performed']);
    await handle.executeUpdate(resolveStepUpdate, {
      args: [
        {
          step: 'shipOrder',
          outcome: 'performed',
          reason: 'label in the carrier portal',
          by: 'ops',
          providerId: 'shp_portal',
        },
      ],
    });
    await eventually(
      () => handle.query(orderStatusQuery),
      (st) => st.attention?.step === 'syncInvoiceToAccounting',
    );
    await handle.executeUpdate(resolveStepUpdate, {
      args: [{ step: 'syncInvoiceToAccounting', outcome: 'not_performed', reason: 'not in the ledger', by: 'ops' }],
    });
    const result = (await handle.result()) as OrderCompletedResult;
    expect(result.steps).toMatchObject({ shipOrder: 'shp_portal', syncInvoiceToAccounting: 'acc_1' });
    expect(ships).toBe(1);
    expect(names(order).filter((n) => n === 'syncInvoiceToAccounting')).toHaveLength(2);
    expect(order.resolutions.map((r) => [r.step, r.decision, r.status])).toEqual([
      ['shipOrder', 'performed', { status: 'shipped', rank: RANK.shipOrder }],
      ['syncInvoiceToAccounting', 'not_performed', undefined],
    ]);
  });

  it('never compensates after the pivot: a failed step waits in attention_required for the retry Update', async () => {
    let attempts = 0;
    const { orderId, order } = newOrder({
      syncInvoiceToAccounting: async (o) => {
        attempts++;
        if (attempts === 1) throw ApplicationFailure.nonRetryable('401 from accounting', ErrorType.Unauthorized);
        o.accountingSyncs = 1;
        return { step: 'syncInvoiceToAccounting', performed: true, providerId: 'acc_7', key: 'k' };
      },
    });
    const handle = await start(orderId);
    // The retry is sent the instant the status shows attention_required (the race of issue 6, input 2):
    // the workflow set its own state in the task that scheduled the status write, so it already waits.
    await eventually(
      async () => order.statuses.at(-1),
      (s) => s === 'attention_required',
    );
    const retry = await handle.executeUpdate(retryStepUpdate, {
      args: [{ step: 'syncInvoiceToAccounting' }],
      updateId: 'retry-1',
    });
    expect(retry).toEqual({ orderId, step: 'syncInvoiceToAccounting', retry: 1 });
    // The same update id is the same Update: no second retry.
    expect(await handle.executeUpdate(retryStepUpdate, { args: [{}], updateId: 'retry-1' })).toEqual(retry);
    const result = (await handle.result()) as OrderCompletedResult;
    expect(result.steps.syncInvoiceToAccounting).toBe('acc_7');
    expect(attempts).toBe(2);
    expect(names(order).slice(-3)).toEqual([
      'syncInvoiceToAccounting',
      'status:attention_required',
      'syncInvoiceToAccounting',
    ]);
    expect(order.calls.find((c) => c.name === 'setOrderStatus')!.arg).toMatchObject({
      status: 'attention_required',
      // The attention rank of the waiting step: its plan rank (50) - 5.
      rank: 45,
      failureReason: 'UnauthorizedError: 401 from accounting',
    });
    expectOneStory(order, 'completed');
  });

  it('upserts OrderStatus only where a visibility query needs it: attention_required, after it, the end', async () => {
    const g = gate();
    const { orderId, order } = newOrder({ shipOrder: rejectedOnceThenGated(g) });
    const handle = await startAsTheApi(orderId);
    const visible = async () => (await handle.describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderStatus);
    expect(await eventually(visible, (s) => s === 'attention_required')).toBe('attention_required');
    await handle.executeUpdate(retryStepUpdate, { args: [{ step: 'shipOrder' }] });
    await g.entered;
    // The retried step runs: the attribute still says what the last query-relevant status was.
    expect(await visible()).toBe('attention_required');
    g.open();
    await handle.result();
    expect(await visible()).toBe('completed');
    expect(await statusUpserts(handle)).toEqual(['attention_required', 'shipped', 'completed']);
    expectOneStory(order, 'completed');
  });

  it('upserts OrderStatus once on the happy path when the starter set the attributes', async () => {
    const { orderId } = newOrder();
    const handle = await startAsTheApi(orderId);
    await handle.result();
    expect(await statusUpserts(handle)).toEqual(['completed']);
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderId)).toBe(orderId);
    // The design's count (bench/README.md): the two database steps as local-activity markers in the first workflow
    // task, 3 activity tasks, 4 workflow tasks, 1 upsert, and no patch marker.
    expect(description.historyLength).toBe(26);
    expect(await historyShape(handle)).toEqual({
      activityTasks: ['sendOrderConfirmation', 'shipOrder', 'syncInvoiceToAccounting'],
      localActivities: ['reserveInventory', 'createInvoice'],
      patches: [],
    });
  });

  it('retries a database step locally, with its retry profile, and records only its result', async () => {
    let attempts = 0;
    const { orderId, order } = newOrder({
      createInvoice: async (o, a) => {
        attempts++;
        if (attempts < 3) throw ApplicationFailure.retryable('database unavailable', 'DatabaseUnavailable');
        return defaults.createInvoice!(o, a);
      },
    });
    const handle = await startAsTheApi(orderId);
    await handle.result();
    expect(attempts).toBe(3); // backoff 1 s, 2 s (databaseStep), under the local retry threshold
    expectOneStory(order, 'completed');
    const events = (await handle.fetchHistory()).events ?? [];
    expect(events.some((e) => e.timerStartedEventAttributes)).toBe(false);
    expect((await historyShape(handle)).localActivities).toEqual(['reserveInventory', 'createInvoice']);
  });

  it('refuses a retry when nothing waits, or when another step waits', async () => {
    const g = gate();
    const { orderId } = newOrder({ shipOrder: rejectedOnceThenGated(g) });
    const handle = await start(orderId);
    await eventually(
      () => handle.query(orderStatusQuery),
      (s) => s.status === 'attention_required',
    );
    const wrongStep = await outcome(
      handle.executeUpdate(retryStepUpdate, { args: [{ step: 'syncInvoiceToAccounting' }] }),
    );
    expect(causeType((wrongStep as { error: unknown }).error)).toBe(ErrorType.OrderNotAwaitingRetry);
    expect(await handle.executeUpdate(retryStepUpdate, { args: [{ step: 'shipOrder' }] })).toMatchObject({
      step: 'shipOrder',
    });
    await g.entered;
    const notWaiting = await outcome(handle.executeUpdate(retryStepUpdate, { args: [{}] }));
    expect((notWaiting as { error: unknown }).error).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(causeType((notWaiting as { error: unknown }).error)).toBe(ErrorType.OrderNotAwaitingRetry);
    g.open();
    await handle.result();
  });

  it('ignores a Temporal cancel request after the pivot: the order completes, nothing compensated', async () => {
    const g = gate();
    const { orderId, order } = newOrder({
      shipOrder: async (o, a) => {
        g.enter();
        await g.wait;
        return defaults.shipOrder!(o, a);
      },
    });
    const handle = await start(orderId);
    await g.entered;
    await handle.cancel();
    await new Promise((r) => setTimeout(r, 200));
    g.open();
    await handle.result();
    expectOneStory(order, 'completed');
  });

  it('a run on an order that is already final changes nothing', async () => {
    const { orderId, order } = newOrder({
      reserveInventory: async () => {
        throw ApplicationFailure.nonRetryable('order is already failed', ErrorType.OrderClosed, { status: 'failed' });
      },
    });
    const handle = await start(orderId);
    const res = (await outcome(handle.result())) as { ok: false; error: unknown };
    expect(causeType(res.error)).toBe(ErrorType.OrderClosed);
    expect(names(order)).toEqual(['reserveInventory']);
    expect((await handle.describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderStatus)).toBe('failed');
  });
});

/** Where the cancel arrives, and how. */
interface CancelPoint {
  name: string;
  /** The activity that waits at the gate, and whether it waits before or during its effect. */
  at: 'reserveInventory' | 'createInvoice' | 'sendOrderConfirmation' | 'shipOrder' | 'syncInvoiceToAccounting';
  phase: 'before' | 'during';
  /** Cancel with the Update (API) or with a workflow cancel request (Temporal UI/CLI). */
  via: 'update' | 'temporal';
  expected: 'cancelled' | 'completed';
}

const points: CancelPoint[] = [];
for (const via of ['update', 'temporal'] as const) {
  points.push(
    { name: 'while reserving', at: 'reserveInventory', phase: 'during', via, expected: 'cancelled' },
    { name: 'while invoicing', at: 'createInvoice', phase: 'during', via, expected: 'cancelled' },
    { name: 'before the email call', at: 'sendOrderConfirmation', phase: 'before', via, expected: 'cancelled' },
    { name: 'while the email call runs', at: 'sendOrderConfirmation', phase: 'during', via, expected: 'completed' },
    { name: 'while shipping', at: 'shipOrder', phase: 'during', via, expected: 'completed' },
    { name: 'while syncing accounting', at: 'syncInvoiceToAccounting', phase: 'during', via, expected: 'completed' },
  );
}

describe('cancel at every point: one story each time', () => {
  it.each(points)('$via cancel $name → $expected', async (p) => {
    const g = gate();
    const overrides: FakeOrder['overrides'] = {
      [p.at]: async (o: FakeOrder, a: Record<string, unknown>) => {
        g.enter();
        if (p.at === 'sendOrderConfirmation') {
          return sendConfirmation(o, p.phase === 'before' ? { beforeCall: g.wait } : { duringCall: g.wait });
        }
        await g.wait; // a database step or post-pivot call in progress: it finishes
        return defaults[p.at]!(o, a);
      },
    };
    const { orderId, order } = newOrder(overrides);
    const local = p.at === 'reserveInventory' || p.at === 'createInvoice';
    const handle = await start(orderId, local ? '2 seconds' : undefined);
    await g.entered;

    let update: ReturnType<typeof outcome> | undefined;
    if (p.via === 'update') {
      const accepted = await outcome(
        handle.startUpdate(cancelOrderUpdate, {
          args: [{ reason: 'customer asked' }],
          waitForStage: WorkflowUpdateStage.ACCEPTED,
        }),
      );
      update = accepted.ok
        ? outcome((accepted.value as { result(): Promise<unknown> }).result())
        : Promise.resolve(accepted);
    } else {
      await handle.cancel();
      // A local step holds its workflow task open: the cancel request reaches the workflow (and is in the history)
      // once the worker heartbeats that task. Until then it could not have stopped anything.
      if (local)
        await eventually(
          () => cancelRequested(handle),
          (seen) => seen,
        );
    }
    // Let the cancel reach the step (heartbeats flush every second), then let the step go on.
    await new Promise((r) => setTimeout(r, p.phase === 'before' ? 1500 : 300));
    g.open();

    const closed = await outcome(handle.result() as Promise<OrderFulfilmentResult>);
    const answer = update ? await update : undefined;

    if (p.expected === 'cancelled') {
      expectOneStory(order, 'cancelled');
      if (p.via === 'update') {
        expect(answer).toEqual({ ok: true, value: { orderId, status: 'cancelled', reason: 'customer asked' } });
        expect(closed).toEqual({ ok: true, value: { orderId, status: 'cancelled', reason: 'customer asked' } });
      } else {
        expect(closed.ok).toBe(false);
        expect((await handle.describe()).status.name).toBe('CANCELLED');
      }
      expect((await handle.query(orderStatusQuery)).status).toBe('cancelled');
    } else {
      expectOneStory(order, 'completed');
      expect(closed.ok).toBe(true);
      if (p.via === 'update') {
        expect(answer?.ok).toBe(false);
        expect(causeType((answer as { error: unknown }).error)).toBe(ErrorType.OrderNotCancellable);
      }
    }
  });
});
