/**
 * Records the baseline event histories that test/replay/replay.spec.ts replays: one per path through the current
 * workflow, run on a local dev server with scripted activities, started with the search attributes the API's starter
 * sets. Files are `test/replay/histories/<label>/order-fulfilment-<scenario>.json`, the label `v<package.json
 * version>` by default: each version's histories stay beside the next one's, and all of them replay.
 *
 * The policy (docs/versioning.md): from 1.0.0 on, a change to the workflow's command sequence is guarded with
 * `patched()`, and the histories of the old code are recorded (and kept) BEFORE the change, so executions started on
 * it are proven to replay. An existing file is kept unless `--overwrite` is given: a released version's histories
 * are never rewritten by accident.
 * See https://docs.temporal.io/develop/typescript/versioning
 * Run: `npm run record:histories [-- [--label <name>] [--overwrite] [scenario ...]]` (default: every scenario).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs, promisify } from 'node:util';
import { Context } from '@temporalio/activity';
import type { WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, type Duration } from '@temporalio/common';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { temporalServerExecutable } from '../../scripts/lib/temporal-cli.js';
import { createOrderWorkers } from '../../src/worker/order-worker.js';
import { STEPS } from '../../activities/index.js';
import { buildPlan } from '../../activities/catalogue/plan.js';
import type { OrderPlan } from '../../workflows/order-plan.js';
import { ErrorType } from '../../workflows/errors.js';
import {
  ORDER_WORKFLOW_TYPE,
  SEARCH_ATTRIBUTES,
  cancelOrderUpdate,
  closeOrderUpdate,
  orderStatusQuery,
  orderWorkflowId,
  reportPackedUpdate,
  resolveStepUpdate,
  retryStepUpdate,
  type OrderResumeState,
} from '../../workflows/order-fulfilment.contract.js';

Runtime.install({ logger: new DefaultLogger('WARN') });

type Activity = (arg: { orderId: string }) => Promise<unknown>;

/**
 * A plan of the registry for a recorded order (as the API builds it when the order is placed).
 * @param packTimeoutMs the packing wait's bound (WAREHOUSE_PACK_TIMEOUT), ms; default the step's own (4 h).
 * @param card a card order (`payment: { method }`: the plan has the payments steps), else one paid on account.
 */
function planOf(orderId: string, packTimeoutMs?: number, card = false): OrderPlan {
  return buildPlan(
    STEPS,
    {
      orderId,
      customerEmail: 'ada@example.com',
      customerName: 'Ada',
      currency: 'EUR',
      totalMinor: 2499,
      lines: [{ sku: 'TEE-BLK-M', quantity: 1 }],
      ...(card ? { payment: { method: 'pm_card_ok' } } : {}),
    },
    packTimeoutMs === undefined ? {} : { events: { packed: { timeoutMs: packTimeoutMs } } },
  );
}

/**
 * What each activity returns by default: every step of the registry succeeds (a provider step with a provider id),
 * every compensation undoes, the fence halts, the status writes apply.
 */
const results: Record<string, unknown> = {
  ...Object.fromEntries(
    STEPS.flatMap((step) => [
      [
        step.name,
        step.kind === 'provider'
          ? { step: step.name, performed: true, providerId: `${step.name}-1`, key: `${step.name}:x` }
          : { step: step.name, performed: true, data: null },
      ],
      ...(step.compensation
        ? [[step.compensation.name, { compensation: step.compensation.name, performed: true }]]
        : []),
    ]),
  ),
  haltOrder: { outcome: 'halted' },
  setOrderStatus: { applied: true },
  recordResolution: { recorded: true, claim: null },
  eventDeadline: { deadline: null, what: null },
  planOrder: planOf('00000000-0000-4000-8000-000000000212'),
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One path: per-activity behaviour for its order, and how the recorder drives the workflow. */
interface Scenario {
  name: string;
  orderId: string;
  behave?: Partial<Record<string, (attempt: number) => Promise<unknown>>>;
  drive?: (handle: WorkflowHandle) => Promise<void>;
  /** Start it as a person would from the CLI: no plan in the input (default: the API's plan). */
  withoutPlan?: boolean;
  /** Start it as the next run of a continue-as-new (the carried state in `input.resume`). */
  resume?: OrderResumeState;
  /** Workflow task timeout of the start (a shorter one lets a cancel reach a workflow task a local activity holds). */
  workflowTaskTimeout?: Duration;
  /**
   * Whether the recorder reports the order packed (the `reportPacked` Update, id `packed-1`) as the warehouse would,
   * once it waits for packing (status `pick_requested`); default true. False: `drive` reports it, or nobody does.
   */
  packs?: boolean;
  /** The packing wait's bound in the order's plan, ms (default the step's own, 4 h). */
  packTimeoutMs?: number;
  /** A card order (its plan authorizes first and captures after the shipment); default on account. */
  card?: boolean;
}

/** The recorded warehouse's report. */
const PACKED_REPORT = { by: 'recorder-warehouse', report: { parcels: 1 } };

/** Reports the order packed once it waits for packing; returns when reported or when the workflow has closed. */
async function packWhenWaiting(handle: WorkflowHandle): Promise<void> {
  for (;;) {
    if ((await handle.describe()).status.name !== 'RUNNING') return;
    if ((await handle.query(orderStatusQuery)).status === 'pick_requested') {
      await handle.executeUpdate(reportPackedUpdate, { args: [PACKED_REPORT], updateId: 'packed-1' });
      return;
    }
    await sleep(50);
  }
}

const rejected = (message: string, type: string, details?: unknown) => () => {
  throw ApplicationFailure.nonRetryable(message, type, details);
};
/** Fails on the first call only. */
const onceThen = (fail: () => never, result: unknown) => async (n: number) => (n === 1 ? fail() : result);
/** Waits (heartbeating) until the activity is cancelled, or `ms` passed. */
const slow = (ms: number, result: unknown) => async () => {
  const ctx = Context.current();
  const beat = setInterval(() => ctx.heartbeat(), 100);
  try {
    await Promise.race([sleep(ms), ctx.cancelled]);
    return result;
  } finally {
    clearInterval(beat);
  }
};

/**
 * Waits until the order's status is `status`.
 * @throws Error when the workflow closes first (the scenario no longer describes the code).
 */
async function until(handle: WorkflowHandle, status: string): Promise<void> {
  while ((await handle.query(orderStatusQuery)).status !== status) {
    const { status: run } = await handle.describe();
    if (run.name !== 'RUNNING') throw new Error(`the workflow ended (${run.name}) before status ${status}`);
    await sleep(50);
  }
}

/**
 * Waits until the order waits for an operator (true) or its workflow has closed (false): a path that waits on the
 * code of one version and ends on another's.
 */
async function waitsForOperator(handle: WorkflowHandle): Promise<boolean> {
  for (;;) {
    if ((await handle.describe()).status.name !== 'RUNNING') return false;
    if ((await handle.query(orderStatusQuery)).status === 'attention_required') return true;
    await sleep(50);
  }
}

const id = (n: number) => `00000000-0000-4000-8000-0000000002${String(n).padStart(2, '0')}`;
const scenarios: Scenario[] = [
  { name: 'completed', orderId: id(1) },
  {
    name: 'insufficient-stock',
    orderId: id(2),
    behave: { reserveInventory: rejected('insufficient stock', ErrorType.InsufficientStock) },
  },
  {
    name: 'confirmation-rejected',
    orderId: id(3),
    behave: {
      sendOrderConfirmation: rejected('recipient rejected', ErrorType.ProviderRejected, { mayHaveActed: false }),
    },
  },
  {
    name: 'cancelled-before-pivot',
    orderId: id(4),
    // The invoice (a local activity) holds the first workflow task for 1 s: the cancel reaches the workflow after
    // it, while the confirmation (slow, heartbeating) has not called the provider yet.
    behave: {
      createInvoice: async () => {
        await sleep(1_000);
        return results.createInvoice;
      },
      sendOrderConfirmation: slow(5_000, results.sendOrderConfirmation),
    },
    drive: async (handle) => {
      await sleep(300);
      await handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: 'customer asked' }] });
    },
  },
  {
    name: 'cancel-refused',
    orderId: id(5),
    // The email call is under way when the cancel arrives: it finishes (sent), the cancel is refused.
    behave: {
      sendOrderConfirmation: async () => {
        await sleep(1_500);
        return results.sendOrderConfirmation;
      },
      haltOrder: async () => ({ outcome: 'sent', step: 'sendOrderConfirmation', providerId: 'msg_1' }),
    },
    drive: async (handle) => {
      await until(handle, 'invoiced');
      await sleep(200);
      await handle
        .executeUpdate(cancelOrderUpdate, { args: [{ reason: 'too late' }] })
        .then(() => Promise.reject(new Error('the cancel should have been refused')))
        .catch((err: Error) => {
          if (err.message.includes('should have been refused')) throw err;
        });
    },
  },
  {
    name: 'workflow-cancelled',
    orderId: id(6),
    behave: { sendOrderConfirmation: slow(5_000, results.sendOrderConfirmation) },
    drive: async (handle) => {
      await until(handle, 'invoiced');
      await sleep(200);
      await handle.cancel();
    },
  },
  {
    name: 'shipping-attention-retried',
    orderId: id(7),
    behave: { shipOrder: onceThen(rejected('carrier 422', ErrorType.ProviderRejected), results.shipOrder) },
    drive: async (handle) => {
      await until(handle, 'attention_required');
      await handle.executeUpdate(retryStepUpdate, { args: [{ step: 'shipOrder' }], updateId: 'retry-1' });
    },
  },
  {
    name: 'accounting-attention-retried',
    orderId: id(8),
    behave: {
      syncInvoiceToAccounting: onceThen(
        rejected('accounting 401', ErrorType.Unauthorized),
        results.syncInvoiceToAccounting,
      ),
    },
    drive: async (handle) => {
      await until(handle, 'attention_required');
      await handle.executeUpdate(retryStepUpdate, { args: [{}], updateId: 'retry-1' });
    },
  },
  {
    name: 'confirmation-unknown-retried',
    orderId: id(9),
    behave: {
      sendOrderConfirmation: onceThen(
        rejected('email provider → 500', ErrorType.ProviderRejected, { status: 500, mayHaveActed: true }),
        results.sendOrderConfirmation,
      ),
      haltOrder: async () => ({ outcome: 'unknown', step: 'sendOrderConfirmation', claimOwner: 'order-x/3#1' }),
    },
    drive: async (handle) => {
      await until(handle, 'attention_required');
      await handle.executeUpdate(retryStepUpdate, { args: [{}], updateId: 'retry-1' });
    },
  },
  {
    name: 'cancel-meets-unknown-confirmation',
    orderId: id(11),
    // The email call times out (the provider may have sent it) while a cancel is pending: the cancel is refused,
    // the order waits for an operator, whose retry re-sends with the same key and completes the order.
    behave: {
      sendOrderConfirmation: async (n) => {
        if (n > 1) return results.sendOrderConfirmation;
        await sleep(1_000);
        throw ApplicationFailure.nonRetryable('email provider: timed out', ErrorType.ProviderUnavailable, {
          mayHaveActed: true,
        });
      },
      haltOrder: async () => ({ outcome: 'unknown', step: 'sendOrderConfirmation', claimOwner: 'order-x/3#1' }),
    },
    drive: async (handle) => {
      await until(handle, 'invoiced');
      await sleep(200);
      await handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: 'customer asked' }] }).catch(() => undefined);
      await until(handle, 'attention_required');
      await handle.executeUpdate(retryStepUpdate, { args: [{}], updateId: 'retry-1' });
    },
  },
  {
    name: 'order-closed',
    orderId: id(10),
    behave: { reserveInventory: rejected('already failed', ErrorType.OrderClosed, { status: 'failed' }) },
  },
  {
    // The second run of an order that continued as new after many retries of syncInvoiceToAccounting: it retries
    // the step with the carried state (shipped, pivot passed, 60 retries, the answers of the latest retry Updates),
    // and a repeated retry Update id gets the answer of the first run.
    name: 'resumed-after-continue-as-new',
    orderId: id(13),
    resume: {
      run: 2,
      status: 'shipped',
      completedSteps: ['reserveInventory', 'createInvoice', 'sendOrderConfirmation', 'shipOrder'],
      results: {
        reserveInventory: null,
        createInvoice: null,
        sendOrderConfirmation: 'sendOrderConfirmation-1',
        shipOrder: 'shipOrder-1',
      },
      pivotPassed: true,
      retries: { syncInvoiceToAccounting: 60 },
      lastStarted: 2,
      visibleStatus: 'attention_required',
      answered: { 'retry-60': { orderId: id(13), step: 'syncInvoiceToAccounting', retry: 60 } },
    },
    behave: { syncInvoiceToAccounting: slow(1_000, results.syncInvoiceToAccounting) },
    drive: async (handle) => {
      const answer = await handle.executeUpdate(retryStepUpdate, { args: [{}], updateId: 'retry-60' });
      if (answer.retry !== 60) throw new Error(`a repeated retry Update got ${JSON.stringify(answer)}`);
    },
  },
  {
    // Started by hand (the CLI) without a plan: the run reads it with the planOrder local activity.
    name: 'started-without-plan',
    orderId: id(12),
    withoutPlan: true,
  },
  {
    // The fence's result names a rank (the order's last status at the halt) above the steps this history started:
    // an activity worker of a later version answered the haltOrder of this workflow.
    name: 'halted-rank-beyond-started-steps',
    orderId: id(14),
    behave: {
      reserveInventory: rejected('insufficient stock', ErrorType.InsufficientStock),
      haltOrder: async () => ({ outcome: 'halted', rank: 20 }),
    },
  },
  {
    // A cancel Update while the confirmation activity runs and has not called the provider: the activity learns of
    // the cancel through its heartbeat, then the fence halts and the compensations run.
    name: 'cancel-while-confirmation-runs',
    orderId: id(15),
    behave: { sendOrderConfirmation: slow(5_000, results.sendOrderConfirmation) },
    drive: async (handle) => {
      await until(handle, 'invoiced');
      await sleep(200);
      await handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: 'customer asked' }] });
    },
  },
  {
    // The confirmation is refused for good and one compensation (voidInvoice) fails for good too.
    name: 'compensation-fails-for-good',
    orderId: id(16),
    behave: {
      sendOrderConfirmation: rejected('recipient rejected', ErrorType.ProviderRejected, { mayHaveActed: false }),
      voidInvoice: rejected('invoice locked', ErrorType.Validation),
    },
    // Since 1.1 the order then waits for an operator, who resolves the undo as done by hand (1.0.0 ended it failed).
    drive: async (handle) => {
      if (!(await waitsForOperator(handle))) return;
      await handle.executeUpdate(resolveStepUpdate, {
        args: [{ step: 'voidInvoice', outcome: 'performed', reason: 'voided in the ledger', by: 'ops' }],
        updateId: 'resolve-1',
      });
    },
  },
  {
    // A compensation fails for good, the order waits, and the operator's retry undoes it (1.1).
    name: 'compensation-failure-retried',
    orderId: id(18),
    behave: {
      sendOrderConfirmation: rejected('recipient rejected', ErrorType.ProviderRejected, { mayHaveActed: false }),
      voidInvoice: onceThen(rejected('invoice locked', ErrorType.Validation), results.voidInvoice),
    },
    drive: async (handle) => {
      if (!(await waitsForOperator(handle))) return;
      await handle.executeUpdate(retryStepUpdate, { args: [{ step: 'voidInvoice' }], updateId: 'retry-1' });
    },
  },
  {
    // The fence finds the confirmation's outcome unknown; the operator resolves it as not performed (audited), the
    // fence runs again and halts, the order compensates (1.1).
    name: 'confirmation-unknown-resolved',
    orderId: id(19),
    behave: {
      sendOrderConfirmation: rejected('email provider → 502', ErrorType.ProviderUnavailable, {
        status: 502,
        mayHaveActed: true,
      }),
      haltOrder: async (n) =>
        n === 1
          ? { outcome: 'unknown', step: 'sendOrderConfirmation', claimOwner: 'order-x/3#1' }
          : { outcome: 'halted', rank: 20 },
    },
    drive: async (handle) => {
      await until(handle, 'attention_required');
      await handle.executeUpdate(resolveStepUpdate, {
        args: [{ step: 'sendOrderConfirmation', outcome: 'not_performed', reason: 'not at the provider', by: 'ops' }],
        updateId: 'resolve-1',
      });
    },
  },
  {
    // After the pivot the carrier refuses for good; the operator closes the order with a reason (1.1).
    name: 'shipping-closed',
    orderId: id(20),
    behave: { shipOrder: rejected('carrier 422', ErrorType.ProviderRejected, { status: 422, mayHaveActed: false }) },
    drive: async (handle) => {
      await until(handle, 'attention_required');
      await handle.executeUpdate(closeOrderUpdate, {
        args: [{ reason: 'refunded by hand', by: 'ops' }],
        updateId: 'close-1',
      });
    },
  },
  {
    // Started without a plan; a workflow cancel request reaches the run while planOrder (a local activity) runs.
    name: 'workflow-cancelled-while-planning',
    orderId: id(17),
    withoutPlan: true,
    workflowTaskTimeout: '2 seconds',
    behave: {
      planOrder: async () => {
        await sleep(4_000);
        return results.planOrder;
      },
    },
    drive: async (handle) => {
      await sleep(500);
      await handle.cancel();
    },
  },
  {
    // The customer cancels while the order waits for the warehouse: the pick request is cancelled first, then the
    // other compensations run newest first (the warehouse wait, issue 23).
    name: 'cancelled-while-waiting-for-packing',
    orderId: id(21),
    packs: false,
    drive: async (handle) => {
      await until(handle, 'pick_requested');
      await handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: 'customer asked' }] });
    },
  },
  {
    // The warehouse has started picking: it refuses the pick's cancel (409), the cancel is refused and the order
    // goes on; the warehouse reports it packed and it completes.
    name: 'cancel-refused-picking-started',
    orderId: id(22),
    packs: false,
    behave: {
      cancelPick: rejected('warehouse: picking started', ErrorType.ProviderRejected, {
        status: 409,
        mayHaveActed: false,
      }),
    },
    drive: async (handle) => {
      await until(handle, 'pick_requested');
      await handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: 'customer asked' }] }).catch(() => undefined);
      await handle.executeUpdate(reportPackedUpdate, { args: [PACKED_REPORT], updateId: 'packed-1' });
    },
  },
  {
    // Nobody reports packed within the bound: the order waits for an operator, whose retry waits again, and the
    // warehouse's report then completes it.
    name: 'packing-wait-bound-retried',
    orderId: id(23),
    packs: false,
    packTimeoutMs: 1_500,
    drive: async (handle) => {
      await until(handle, 'attention_required');
      await handle.executeUpdate(retryStepUpdate, { args: [{}], updateId: 'retry-1' });
      await handle.executeUpdate(reportPackedUpdate, { args: [PACKED_REPORT], updateId: 'packed-1' });
    },
  },
  // Card orders (issue 23): the plan authorizes first, voids among the compensations, captures after the shipment.
  { name: 'card-completed', orderId: id(24), card: true },
  {
    name: 'card-cancelled-while-waiting-for-packing',
    orderId: id(25),
    card: true,
    packs: false,
    drive: async (handle) => {
      await until(handle, 'pick_requested');
      await handle.executeUpdate(cancelOrderUpdate, { args: [{ reason: 'customer asked' }] });
    },
  },
  {
    name: 'card-declined',
    orderId: id(26),
    card: true,
    behave: {
      // As activities/kit/failures.ts refusalFailure writes a decline.
      authorizePayment: rejected('payment_declined: generic_decline; payments: card declined', ErrorType.Refused, {
        status: 402,
        mayHaveActed: false,
        failure: 'payment_declined',
        reason: 'generic_decline',
      }),
    },
  },
  {
    // The capture fails for good after the hand-over: the order waits for an operator, whose retry captures.
    name: 'card-capture-retried',
    orderId: id(27),
    card: true,
    behave: {
      capturePayment: onceThen(
        rejected('payments: 503', ErrorType.ProviderUnavailable, { status: 503, mayHaveActed: false }),
        results.capturePayment,
      ),
    },
    drive: async (handle) => {
      await until(handle, 'attention_required');
      await handle.executeUpdate(retryStepUpdate, { args: [{}], updateId: 'retry-1' });
    },
  },
];

const { values: flags, positionals: only } = parseArgs({
  allowPositionals: true,
  options: { label: { type: 'string' }, overwrite: { type: 'boolean', default: false } },
});
const { version } = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};
const label = flags.label ?? `v${version}`;
if (!/^[\w.-]+$/.test(label)) throw new Error(`--label ${label}: letters, digits, '.', '_' and '-' only`);
const chosen = only.length ? scenarios.filter((s) => only.includes(s.name)) : scenarios;
const byOrder = new Map(chosen.map((s) => [s.orderId, s]));
const calls = new Map<string, number>();
const failed: string[] = [];

const activities: Record<string, Activity> = Object.fromEntries(
  Object.keys(results).map((name) => [
    name,
    async ({ orderId }: { orderId: string }) => {
      const n = (calls.get(`${orderId}/${name}`) ?? 0) + 1;
      calls.set(`${orderId}/${name}`, n);
      const behave = byOrder.get(orderId)?.behave?.[name];
      return behave ? behave(n) : results[name];
    },
  ]),
);

const executable = await temporalServerExecutable();
if (executable.type !== 'existing-path') throw new Error('recording needs a Temporal CLI (see README, Temporal)');
const cliPath = executable.path;
const env = await TestWorkflowEnvironment.createLocal({
  server: { executable, searchAttributes: Object.values(SEARCH_ATTRIBUTES) },
});
const taskQueue = 'record-histories';
try {
  const worker = await createOrderWorkers({
    connection: env.nativeConnection,
    namespace: 'default',
    taskQueue,
    activities,
  });
  await worker.runUntil(async () => {
    for (const s of chosen) {
      await record(s).catch((err: unknown) => {
        failed.push(s.name);
        console.error(`${s.name}: not recorded: ${err instanceof Error ? err.message : String(err)}`);
      });
    }
  });
} finally {
  await env.teardown();
}
if (failed.length > 0) {
  console.error(`not recorded (the scenario no longer describes the code, or it broke): ${failed.join(', ')}`);
  process.exitCode = 1;
}

/** Runs scenario `s` on the recorder's worker and writes its history (kept when it exists, unless --overwrite). */
async function record(s: Scenario): Promise<void> {
  const handle = await env.client.workflow.start(ORDER_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: orderWorkflowId(s.orderId),
    args: [
      s.withoutPlan
        ? { orderId: s.orderId }
        : {
            orderId: s.orderId,
            plan: planOf(s.orderId, s.packTimeoutMs, s.card),
            ...(s.resume ? { resume: s.resume } : {}),
          },
    ],
    ...(s.workflowTaskTimeout ? { workflowTaskTimeout: s.workflowTaskTimeout } : {}),
    // As the API's starter (src/orders/workflow/order-workflow-starter.service.ts) starts an order.
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.OrderId, value: s.orderId },
      { key: SEARCH_ATTRIBUTES.OrderStatus, value: 'received' },
    ],
  });
  const packing = s.packs === false ? undefined : packWhenWaiting(handle);
  await s.drive?.(handle);
  await packing;
  await handle.result().catch(() => undefined);
  // The CLI writes the proto3 JSON form that Worker.runReplayHistories reads (historyFromJSON).
  const { stdout } = await promisify(execFile)(cliPath, [
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
  const file = fileURLToPath(new URL(`./histories/${label}/order-fulfilment-${s.name}.json`, import.meta.url));
  await mkdir(path.dirname(file), { recursive: true });
  if (!flags.overwrite && existsSync(file)) {
    console.log(`kept ${file} (exists; --overwrite to record it again)`);
    return;
  }
  await writeFile(file, JSON.stringify(history, null, 2) + '\n');
  console.log(`recorded ${file} (${history.events.length} events)`);
}
