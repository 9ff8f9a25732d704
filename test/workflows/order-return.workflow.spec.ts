/**
 * The return workflow (`orderReturn`) on the real dev server with scripted activities: its order of steps, its
 * Updates' validators and answers, its bounds and its operator exit.
 * - a received return runs label → email → receipt → refund → credit note → email → completed; the receipt's
 *   validator refuses a SKU not in the return and more units than asked, a second receipt answers the first;
 * - a withdrawal before the receipt ends it `withdrawn` with nothing refunded; after the receipt it is refused;
 * - no receipt within the bound: `expired`, nothing refunded;
 * - a refund that fails for good waits in `attention_required` until the operator's `retry` (refused before), then
 *   completes; the same retry Update id answers the same.
 * `RECORD_RETURN_HISTORIES=1` writes each scenario's history to test/replay/histories/v1.1.0-returns/ (the baselines
 * test/replay/replay.spec.ts replays: record them again only before a change that needs `patched()`).
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ErrorType } from '../../workflows/errors.js';
import {
  RETURN_NOT_AWAITING,
  RETURN_RECEIPT_INVALID,
  RETURN_WORKFLOW_TYPE,
  receiveReturnUpdate,
  retryReturnUpdate,
  returnStatusQuery,
  returnWorkflowId,
  withdrawReturnUpdate,
  type OrderReturnInput,
  type OrderReturnResult,
} from '../../workflows/order-return.contract.js';
import { until } from '../helpers/poll.js';
import { startWorkflowWorkers, type WorkflowWorkers } from '../helpers/workflow-workers.js';

const taskQueue = `order-return-${randomUUID()}`;
let workers: WorkflowWorkers;
/** Every activity call, as `<activity>:<returnId>[:<kind|status>]`. */
const calls: string[] = [];
/** Return ids whose refund fails for good until removed from here. */
const refundRefused = new Set<string>();
/** Return ids whose label email fails for good. */
const labelEmailRefused = new Set<string>();
/** Return ids whose label fails for good. */
const labelRefused = new Set<string>();

function scripted(): Record<string, (input: Record<string, unknown>) => Promise<unknown>> {
  const note = (name: string, input: Record<string, unknown>, extra?: unknown) =>
    calls.push([name, input.returnId, ...(extra === undefined ? [] : [extra])].join(':'));
  return {
    createReturnLabel: async (i) => {
      note('createReturnLabel', i);
      if (labelRefused.has(String(i.returnId))) {
        throw ApplicationFailure.nonRetryable('carrier: 422 address rejected', ErrorType.ProviderRejected);
      }
      return { labelId: 'rl_1', performed: true };
    },
    sendReturnEmail: async (i) => {
      note('sendReturnEmail', i, i.kind);
      if (i.kind === 'label' && labelEmailRefused.has(String(i.returnId))) {
        throw ApplicationFailure.nonRetryable('email: 422 invalid recipient', ErrorType.ProviderRejected);
      }
      return { messageId: 'msg_1' };
    },
    recordReturnReceipt: async (i) => (note('recordReturnReceipt', i), { refundMinor: 1500, restocked: 1 }),
    refundReturn: async (i) => {
      note('refundReturn', i);
      if (refundRefused.has(String(i.returnId))) {
        throw ApplicationFailure.nonRetryable('payments: 422 refund-exceeds-captured', ErrorType.ProviderRejected);
      }
      return { refunded: true, refundId: 're_1' };
    },
    creditReturn: async (i) => (note('creditReturn', i), { credited: true, creditNoteId: 'acc_cn_1' }),
    setReturnStatus: async (i) => (note('setReturnStatus', i, i.status), { applied: true }),
  };
}

async function start(receiptTimeoutMs = 60_000) {
  const returnId = randomUUID();
  const input: OrderReturnInput = {
    returnId,
    orderId: randomUUID(),
    receiptTimeoutMs,
    lines: [
      { sku: 'SKU-A', quantity: 2 },
      { sku: 'SKU-B', quantity: 1 },
    ],
  };
  const handle = await workers.client.workflow.start(RETURN_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: returnWorkflowId(returnId),
    args: [input],
  });
  return { returnId, handle };
}

/** With `RECORD_RETURN_HISTORIES=1`: writes the history of `returnId`'s workflow as a replay baseline named `name`. */
async function record(returnId: string, name: string): Promise<void> {
  if (process.env.RECORD_RETURN_HISTORIES !== '1') return;
  const cli = process.env.TEMPORAL_CLI_PATH ?? 'temporal';
  const args = [
    'workflow',
    'show',
    '--workflow-id',
    returnWorkflowId(returnId),
    '--address',
    inject('temporalAddress'),
  ];
  // The CLI writes the proto3 JSON form that Worker.runReplayHistories reads.
  const { stdout } = await promisify(execFile)(cli, [...args, '--output', 'json']);
  const dir = fileURLToPath(new URL('../replay/histories/v1.1.0-returns/', import.meta.url));
  await mkdir(dir, { recursive: true });
  await writeFile(`${dir}order-return-${name}.json`, JSON.stringify(JSON.parse(stdout), null, 2) + '\n');
}

function callsOf(returnId: string): string[] {
  return calls.filter((c) => c.includes(returnId)).map((c) => c.replace(`:${returnId}`, ''));
}

/** The failure type a refused Update carries. */
async function refusal(p: Promise<unknown>): Promise<string | undefined> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
  return ((err as WorkflowUpdateFailedError).cause as ApplicationFailure).type ?? undefined;
}

beforeAll(async () => {
  workers = await startWorkflowWorkers(taskQueue, scripted());
});
afterAll(async () => {
  await workers?.close();
});

describe('orderReturn', () => {
  it('runs a received return to completed, refusing bad receipts and answering a second one with the first', async () => {
    const { returnId, handle } = await start();
    await until(
      () => handle.query(returnStatusQuery),
      (s) => s.status === 'label_created',
      20_000,
    );

    expect(
      await refusal(
        handle.executeUpdate(receiveReturnUpdate, {
          args: [{ lines: [{ sku: 'NOPE', quantity: 1, damaged: 0 }], by: 'wh' }],
        }),
      ),
    ).toBe(RETURN_RECEIPT_INVALID);
    expect(
      await refusal(
        handle.executeUpdate(receiveReturnUpdate, {
          args: [{ lines: [{ sku: 'SKU-A', quantity: 3, damaged: 0 }], by: 'wh' }],
        }),
      ),
    ).toBe(RETURN_RECEIPT_INVALID);

    const first = await handle.executeUpdate(receiveReturnUpdate, {
      args: [{ lines: [{ sku: 'SKU-A', quantity: 2, damaged: 1 }], by: 'wh' }],
      updateId: 'receipt-1',
    });
    const second = await handle.executeUpdate(receiveReturnUpdate, {
      args: [{ lines: [{ sku: 'SKU-B', quantity: 1, damaged: 0 }], by: 'operator' }],
      updateId: 'receipt-2',
    });
    expect(second).toEqual(first);
    expect(first.lines).toEqual([{ sku: 'SKU-A', quantity: 2, damaged: 1 }]);

    const result: OrderReturnResult = await handle.result();
    expect(result).toEqual({ returnId, status: 'completed', refundMinor: 1500 });
    expect(callsOf(returnId)).toEqual([
      'createReturnLabel',
      'sendReturnEmail:label',
      'recordReturnReceipt',
      'refundReturn',
      'creditReturn',
      'sendReturnEmail:completed',
      'setReturnStatus:completed',
    ]);
    await record(returnId, 'completed');
  });

  it('ends withdrawn, nothing refunded, when withdrawn before the receipt; a receipt after that is refused', async () => {
    const { returnId, handle } = await start();
    await until(
      () => handle.query(returnStatusQuery),
      (s) => s.status === 'label_created',
      20_000,
    );
    const answer = await handle.executeUpdate(withdrawReturnUpdate, { args: [{ by: 'shop' }], updateId: 'w-1' });
    expect(answer).toEqual({ returnId, status: 'withdrawn' });
    expect(await handle.result()).toEqual({ returnId, status: 'withdrawn', refundMinor: 0 });
    expect(callsOf(returnId)).toEqual(['createReturnLabel', 'sendReturnEmail:label', 'setReturnStatus:withdrawn']);
    await record(returnId, 'withdrawn');
  });

  it('expires with nothing refunded when no receipt comes within the bound', async () => {
    const { returnId, handle } = await start(2_000);
    expect(await handle.result()).toEqual({ returnId, status: 'expired', refundMinor: 0 });
    expect(callsOf(returnId)).toEqual(['createReturnLabel', 'sendReturnEmail:label', 'setReturnStatus:expired']);
    await record(returnId, 'expired');
  });

  it('waits in attention_required when the refund fails for good, until an operator retries it', async () => {
    const { returnId, handle } = await start();
    refundRefused.add(returnId);
    await until(
      () => handle.query(returnStatusQuery),
      (s) => s.status === 'label_created',
      20_000,
    );
    expect(await refusal(handle.executeUpdate(retryReturnUpdate, { args: [{ by: 'op' }] }))).toBe(RETURN_NOT_AWAITING);
    await handle.executeUpdate(receiveReturnUpdate, {
      args: [{ lines: [{ sku: 'SKU-B', quantity: 1, damaged: 0 }], by: 'wh' }],
    });
    await until(
      () => handle.query(returnStatusQuery),
      (s) => s.status === 'attention_required',
      20_000,
    );
    const state = await handle.query(returnStatusQuery);
    expect(state.step).toBe('refundReturn');
    expect(state.attentionReason).toContain('refund-exceeds-captured');
    // A withdrawal after the receipt is refused: the units are back.
    expect(await refusal(handle.executeUpdate(withdrawReturnUpdate, { args: [{ by: 'shop' }] }))).toBe(
      RETURN_NOT_AWAITING,
    );

    refundRefused.delete(returnId);
    const retried = await handle.executeUpdate(retryReturnUpdate, { args: [{ by: 'op' }], updateId: 'retry-1' });
    expect(retried).toEqual({ returnId, step: 'refundReturn' });
    expect(await handle.result()).toEqual({ returnId, status: 'completed', refundMinor: 1500 });
    const seen = callsOf(returnId);
    expect(seen.filter((c) => c === 'refundReturn')).toHaveLength(2);
    expect(seen).toContain('setReturnStatus:attention_required');
    expect(seen.at(-1)).toBe('setReturnStatus:completed');
    await record(returnId, 'refund-retried');
  });

  it('takes the parcel while the label email waits for an operator: the email is moot, the return completes', async () => {
    const returnId = randomUUID();
    labelEmailRefused.add(returnId);
    const handle = await workers.client.workflow.start(RETURN_WORKFLOW_TYPE, {
      taskQueue,
      workflowId: returnWorkflowId(returnId),
      args: [{ returnId, orderId: randomUUID(), receiptTimeoutMs: 60_000, lines: [{ sku: 'SKU-A', quantity: 1 }] }],
    });
    await until(
      () => handle.query(returnStatusQuery),
      (s) => s.status === 'attention_required',
      20_000,
    );
    await handle.executeUpdate(receiveReturnUpdate, {
      args: [{ lines: [{ sku: 'SKU-A', quantity: 1, damaged: 0 }], by: 'wh' }],
    });
    expect(await handle.result()).toEqual({ returnId, status: 'completed', refundMinor: 1500 });
    expect(callsOf(returnId)).toEqual([
      'createReturnLabel',
      'sendReturnEmail:label',
      'setReturnStatus:attention_required',
      'setReturnStatus:label_created',
      'recordReturnReceipt',
      'refundReturn',
      'creditReturn',
      'sendReturnEmail:completed',
      'setReturnStatus:completed',
    ]);
    await record(returnId, 'label-email-moot');
  });

  it('takes a parcel that arrives while its label waits for an operator: label and email are moot', async () => {
    const returnId = randomUUID();
    labelRefused.add(returnId);
    const handle = await workers.client.workflow.start(RETURN_WORKFLOW_TYPE, {
      taskQueue,
      workflowId: returnWorkflowId(returnId),
      args: [{ returnId, orderId: randomUUID(), receiptTimeoutMs: 60_000, lines: [{ sku: 'SKU-A', quantity: 1 }] }],
    });
    await until(
      () => handle.query(returnStatusQuery),
      (s) => s.status === 'attention_required' && s.step === 'createReturnLabel',
      20_000,
    );
    await handle.executeUpdate(receiveReturnUpdate, {
      args: [{ lines: [{ sku: 'SKU-A', quantity: 1, damaged: 0 }], by: 'wh' }],
    });
    expect(await handle.result()).toEqual({ returnId, status: 'completed', refundMinor: 1500 });
    expect(callsOf(returnId)).toEqual([
      'createReturnLabel',
      'setReturnStatus:attention_required',
      'setReturnStatus:requested',
      'recordReturnReceipt',
      'refundReturn',
      'creditReturn',
      'sendReturnEmail:completed',
      'setReturnStatus:completed',
    ]);
    await record(returnId, 'label-moot');
  });
});
