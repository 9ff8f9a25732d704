/**
 * The workflow on a real Temporal dev server with mocked activities: step order, status query, search
 * attributes, compensation order, and that a non-retryable failure from reserveInventory ends the
 * workflow after exactly one attempt.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { OrderActivities } from '../../activities/index.js';
import { createOrderWorker } from '../../src/worker/order-worker.js';
import { ErrorType } from '../../workflows/errors.js';
import {
  ORDER_WORKFLOW_TYPE,
  SEARCH_ATTRIBUTES,
  orderStatusQuery,
  orderWorkflowId,
  retryAccountingSyncSignal,
  type OrderFulfilmentResult,
} from '../../workflows/order-fulfilment.contract.js';

type Call = { name: string; arg: Record<string, unknown> };

/** Per-order behaviour of the mocked activities. */
interface Script {
  calls: Call[];
  overrides: Partial<Record<keyof OrderActivities, (arg: Record<string, unknown>) => Promise<unknown>>>;
}

const scripts = new Map<string, Script>();
const taskQueue = `wf-test-${randomUUID()}`;
let connection: NativeConnection;
let client: Client;
let worker: Worker;
let running: Promise<void>;

function mock(name: keyof OrderActivities, result: (arg: Record<string, unknown>) => unknown) {
  return async (arg: Record<string, unknown>) => {
    const script = scripts.get(arg.orderId as string)!;
    script.calls.push({ name, arg });
    const override = script.overrides[name];
    return override ? override(arg) : result(arg);
  };
}

const activities: Record<keyof OrderActivities, unknown> = {
  reserveInventory: mock('reserveInventory', (a) => ({ orderId: a.orderId, movements: [] })),
  releaseInventory: mock('releaseInventory', (a) => ({ orderId: a.orderId, movements: [] })),
  createInvoice: mock('createInvoice', () => ({
    invoiceId: 'inv-1',
    invoiceNumber: 'INV-000007',
    currency: 'EUR',
    totalMinor: 1999,
    issuedAt: new Date(0).toISOString(),
    created: true,
  })),
  voidInvoice: mock('voidInvoice', () => ({ invoiceNumber: 'INV-000007', voided: true })),
  sendOrderConfirmation: mock('sendOrderConfirmation', (a) => ({
    messageId: 'msg_1',
    idempotencyKey: `order-confirmation:${a.orderId}`,
    sentNow: true,
  })),
  syncInvoiceToAccounting: mock('syncInvoiceToAccounting', () => ({
    accountingId: 'acc_1',
    externalId: 'INV-000007',
    idempotencyKey: 'k',
    syncedNow: true,
  })),
  setOrderStatus: mock('setOrderStatus', () => ({ applied: true })),
};

function newOrder(overrides: Script['overrides'] = {}): { orderId: string; script: Script } {
  const orderId = randomUUID();
  const script: Script = { calls: [], overrides };
  scripts.set(orderId, script);
  return { orderId, script };
}

function start(orderId: string) {
  return client.workflow.start(ORDER_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: orderWorkflowId(orderId),
    args: [{ orderId }],
  });
}

/** Reads until `accept` holds (every 50 ms, at most 5 s) and returns the last value read. */
async function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean): Promise<T> {
  let value = await read();
  for (let i = 0; i < 100 && !accept(value); i++) {
    await new Promise((r) => setTimeout(r, 50));
    value = await read();
  }
  return value;
}

const callNames = (s: Script) => s.calls.map((c) => (c.name === 'setOrderStatus' ? `status:${c.arg.status}` : c.name));

beforeAll(async () => {
  const address = inject('temporalAddress');
  connection = await NativeConnection.connect({ address });
  client = new Client({ connection: await Connection.connect({ address }) });
  worker = await createOrderWorker({ connection, namespace: 'default', taskQueue, activities });
  running = worker.run();
});

afterAll(async () => {
  worker?.shutdown();
  await running;
  await connection?.close();
  await client?.connection.close();
});

describe('orderFulfilment workflow', () => {
  it('runs the four steps in order, writing the status after each', async () => {
    const { orderId, script } = newOrder();
    const handle = await start(orderId);
    const result: OrderFulfilmentResult = await handle.result();
    expect(result).toEqual({
      orderId,
      status: 'completed',
      invoiceNumber: 'INV-000007',
      confirmationMessageId: 'msg_1',
      accountingId: 'acc_1',
    });
    expect(callNames(script)).toEqual([
      'reserveInventory',
      'status:inventory_reserved',
      'createInvoice',
      'status:invoiced',
      'sendOrderConfirmation',
      'status:confirmation_sent',
      'syncInvoiceToAccounting',
      'status:completed',
    ]);
    expect(script.calls.every((c) => c.arg.orderId === orderId)).toBe(true);
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderStatus)).toBe('completed');
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderId)).toBe(orderId);
  });

  it('answers the status query while a step runs', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { orderId } = newOrder({
      sendOrderConfirmation: async (a) => {
        await gate;
        return { messageId: 'msg_2', idempotencyKey: `order-confirmation:${a.orderId}`, sentNow: true };
      },
    });
    const handle = await start(orderId);
    const state = await eventually(
      () => handle.query(orderStatusQuery),
      (s) => s.currentStep === 'sendOrderConfirmation',
    );
    expect(state).toEqual({
      orderId,
      status: 'invoiced',
      currentStep: 'sendOrderConfirmation',
      completedSteps: ['reserveInventory', 'createInvoice'],
      invoiceNumber: 'INV-000007',
      failureReason: null,
    });
    release();
    await handle.result();
    expect((await handle.query(orderStatusQuery)).status).toBe('completed');
  });

  it('ends after exactly one attempt when reserveInventory fails with a non-retryable error', async () => {
    const { orderId, script } = newOrder({
      reserveInventory: async () => {
        throw ApplicationFailure.nonRetryable(
          'insufficient stock for CAP-RED: requested 4, available 3',
          ErrorType.InsufficientStock,
        );
      },
    });
    const handle = await start(orderId);
    const err = await handle.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe(ErrorType.OrderFailed);
    expect(script.calls.filter((c) => c.name === 'reserveInventory')).toHaveLength(1);
    // Nothing completed, so nothing to compensate; the order is marked failed with the reason.
    expect(callNames(script)).toEqual(['reserveInventory', 'status:failed']);
    expect(script.calls[1]!.arg.failureReason).toBe(
      'InsufficientStockError: insufficient stock for CAP-RED: requested 4, available 3',
    );
    const state = await handle.query(orderStatusQuery);
    expect([state.status, state.failureReason]).toEqual(['failed', script.calls[1]!.arg.failureReason]);
  });

  it('compensates completed steps in reverse order when a later step fails for good', async () => {
    const { orderId, script } = newOrder({
      sendOrderConfirmation: async () => {
        throw ApplicationFailure.nonRetryable('recipient rejected', ErrorType.ProviderRejected);
      },
    });
    const handle = await start(orderId);
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(callNames(script)).toEqual([
      'reserveInventory',
      'status:inventory_reserved',
      'createInvoice',
      'status:invoiced',
      'sendOrderConfirmation',
      'voidInvoice',
      'releaseInventory',
      'status:failed',
    ]);
    expect((await handle.describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderStatus)).toBe('failed');
  });

  it('runs every compensation and still marks the order failed when one compensation fails', async () => {
    const { orderId, script } = newOrder({
      sendOrderConfirmation: async () => {
        throw ApplicationFailure.nonRetryable('invalid recipient', ErrorType.ProviderRejected);
      },
      voidInvoice: async () => {
        throw ApplicationFailure.nonRetryable('invoice locked', ErrorType.Validation);
      },
    });
    const handle = await start(orderId);
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    expect(callNames(script).slice(-3)).toEqual(['voidInvoice', 'releaseInventory', 'status:failed']);
    expect(script.calls.at(-1)!.arg.failureReason).toBe(
      'ProviderRejectedError: invalid recipient (voidInvoice failed: ValidationError: invoice locked)',
    );
  });

  it('never cancels a confirmed order: a failed accounting sync waits for an operator retry', async () => {
    let attempts = 0;
    const { orderId, script } = newOrder({
      syncInvoiceToAccounting: async () => {
        attempts++;
        if (attempts === 1) throw ApplicationFailure.nonRetryable('401 from accounting', ErrorType.Unauthorized);
        return { accountingId: 'acc_7', externalId: 'INV-000007', idempotencyKey: 'k', syncedNow: true };
      },
    });
    const handle = await start(orderId);
    const state = await eventually(
      () => handle.query(orderStatusQuery),
      (s) => s.status === 'attention_required',
    );
    expect(state).toMatchObject({
      status: 'attention_required',
      currentStep: 'syncInvoiceToAccounting',
      failureReason: 'UnauthorizedError: 401 from accounting',
    });
    expect(attempts).toBe(1);
    expect(callNames(script)).not.toContain('voidInvoice');
    expect(callNames(script)).not.toContain('releaseInventory');
    // The search attribute lands with the workflow task that set the status; allow it a moment.
    const attribute = await eventually(
      async () => (await handle.describe()).typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderStatus),
      (a) => a === 'attention_required',
    );
    expect(attribute).toBe('attention_required');

    await handle.signal(retryAccountingSyncSignal);
    const result = await handle.result();
    expect(result.accountingId).toBe('acc_7');
    expect(attempts).toBe(2);
    expect(callNames(script).slice(-4)).toEqual([
      'syncInvoiceToAccounting',
      'status:attention_required',
      'syncInvoiceToAccounting',
      'status:completed',
    ]);
  });

  it('retries a transient failure with the profile and then completes', async () => {
    let attempts = 0;
    const { orderId, script } = newOrder({
      syncInvoiceToAccounting: async () => {
        attempts++;
        if (attempts === 1) throw ApplicationFailure.retryable('503 from accounting', ErrorType.ProviderUnavailable);
        return { accountingId: 'acc_9', externalId: 'INV-000007', idempotencyKey: 'k', syncedNow: true };
      },
    });
    const result = await (await start(orderId)).result();
    expect(result.accountingId).toBe('acc_9');
    expect(attempts).toBe(2);
    expect(callNames(script).at(-1)).toBe('status:completed');
  });
});
