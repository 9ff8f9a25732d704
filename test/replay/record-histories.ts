/**
 * Records the event histories that test/replay/replay.spec.ts replays: one per path through the workflow
 * (completed, failed at reserve, compensated after a later failure), run on a local dev server with
 * scripted activities. Re-record only on purpose, when a change is meant to be incompatible AND no
 * execution of the old version can still be running; otherwise keep the old histories, add new ones, and
 * guard the change with `patched()`. See https://docs.temporal.io/develop/typescript/versioning
 * Run: `npm run record:histories`. It overwrites the files of every scenario: commit the new scenario's file
 * and restore (`git checkout`) the older ones unless you mean to replace them.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { ApplicationFailure } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { temporalServerExecutable } from '../../scripts/lib/temporal-cli.js';
import { createOrderWorker } from '../../src/worker/order-worker.js';
import { ErrorType } from '../../workflows/errors.js';
import {
  ORDER_WORKFLOW_TYPE,
  SEARCH_ATTRIBUTES,
  orderStatusQuery,
  orderWorkflowId,
  retryAccountingSyncSignal,
} from '../../workflows/order-fulfilment.contract.js';

Runtime.install({ logger: new DefaultLogger('WARN') });

type Failing = 'reserveInventory' | 'sendOrderConfirmation' | 'syncInvoiceToAccounting' | undefined;
const scenarios: Array<{ name: string; orderId: string; failing: Failing }> = [
  { name: 'completed', orderId: '00000000-0000-4000-8000-000000000001', failing: undefined },
  { name: 'insufficient-stock', orderId: '00000000-0000-4000-8000-000000000002', failing: 'reserveInventory' },
  { name: 'compensated', orderId: '00000000-0000-4000-8000-000000000003', failing: 'sendOrderConfirmation' },
  // Accounting rejects once: attention_required, then the retryAccountingSync signal, then completed.
  { name: 'attention-retried', orderId: '00000000-0000-4000-8000-000000000004', failing: 'syncInvoiceToAccounting' },
];
const failingOf = new Map(scenarios.map((s) => [s.orderId, s.failing]));

const failedOnce = new Set<string>();

function activity(name: string, result: unknown) {
  return async ({ orderId }: { orderId: string }) => {
    const once = name === 'syncInvoiceToAccounting';
    if (failingOf.get(orderId) === name && !(once && failedOnce.has(orderId))) {
      if (once) failedOnce.add(orderId);
      throw ApplicationFailure.nonRetryable(
        `${name} failed for good`,
        name === 'reserveInventory' ? ErrorType.InsufficientStock : ErrorType.ProviderRejected,
      );
    }
    return result;
  };
}

const executable = await temporalServerExecutable();
if (executable.type !== 'existing-path') throw new Error('recording needs a Temporal CLI (see README, Temporal)');
const env = await TestWorkflowEnvironment.createLocal({
  server: { executable, searchAttributes: Object.values(SEARCH_ATTRIBUTES) },
});
try {
  const taskQueue = 'record-histories';
  const worker = await createOrderWorker({
    connection: env.nativeConnection,
    namespace: 'default',
    taskQueue,
    activities: {
      reserveInventory: activity('reserveInventory', { orderId: 'x', movements: [] }),
      releaseInventory: activity('releaseInventory', { orderId: 'x', movements: [] }),
      createInvoice: activity('createInvoice', {
        invoiceId: 'inv',
        invoiceNumber: 'INV-000001',
        currency: 'EUR',
        totalMinor: 2499,
        issuedAt: '2026-11-29T00:00:00.000Z',
        created: true,
      }),
      voidInvoice: activity('voidInvoice', { invoiceNumber: 'INV-000001', voided: true }),
      sendOrderConfirmation: activity('sendOrderConfirmation', {
        messageId: 'msg_1',
        idempotencyKey: 'order-confirmation:x',
        sentNow: true,
      }),
      syncInvoiceToAccounting: activity('syncInvoiceToAccounting', {
        accountingId: 'acc_1',
        externalId: 'INV-000001',
        idempotencyKey: 'accounting-invoice:x',
        syncedNow: true,
      }),
      setOrderStatus: activity('setOrderStatus', { applied: true }),
    },
  });
  await worker.runUntil(async () => {
    for (const s of scenarios) {
      const handle = await env.client.workflow.start(ORDER_WORKFLOW_TYPE, {
        taskQueue,
        workflowId: orderWorkflowId(s.orderId),
        args: [{ orderId: s.orderId }],
      });
      if (s.failing === 'syncInvoiceToAccounting') {
        while ((await handle.query(orderStatusQuery)).status !== 'attention_required') {
          await new Promise((r) => setTimeout(r, 50));
        }
        await handle.signal(retryAccountingSyncSignal);
      }
      await handle.result().catch(() => undefined);
      // The CLI writes the proto3 JSON form that Worker.runReplayHistories reads (historyFromJSON).
      const { stdout } = await promisify(execFile)(executable.path, [
        'workflow',
        'show',
        '--workflow-id',
        handle.workflowId,
        '--address',
        env.address,
        '--output',
        'json',
      ]);
      const history = JSON.parse(stdout) as { events: unknown[] };
      const file = fileURLToPath(new URL(`./histories/order-fulfilment-${s.name}.json`, import.meta.url));
      await writeFile(file, JSON.stringify(history, null, 2) + '\n');
      console.log(`recorded ${file} (${history.events.length} events)`);
    }
  });
} finally {
  await env.teardown();
}
