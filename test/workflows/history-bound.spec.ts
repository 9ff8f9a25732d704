/**
 * An order's history stays bounded however many operator retries it gets (issue 16, finding 2). An order whose
 * post-pivot step is refused every time gets `HISTORY_RETRIES` operator retries (250 by default: at least 3 continue-as-new switches, each carrying the state and
 * the latest answers, which is what the bound needs; 5 000 once measured: 891 s, 73 runs, at most 1 017 events), each answered
 * 202-style (the Update's result) and each adding about 15 events; the workflow continues as new once a run's history
 * reaches HISTORY_EVENTS_LIMIT, carrying the order's state and the answers of the latest retry Updates:
 * - every run's history stays within the limit plus one retry cycle;
 * - every retry is answered exactly once, numbered 1..N in order across the runs;
 * - a retry request repeated with the same Update id after the switch gets its first answer, not a second retry;
 * - once the cause is fixed, the next retry completes the order, on the run it has reached.
 * Real dev server, scripted activities. There is no timer in this path, so a time-skipping server would not change
 * it (and its binary is downloaded at run time, which this project's machines cannot do; ../../docs/development.md).
 */
import { randomUUID } from 'node:crypto';
import { type Client, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildPlan } from '../../activities/catalogue/plan.js';
import { ErrorType } from '../../workflows/errors.js';
import {
  HISTORY_EVENTS_LIMIT,
  ORDER_WORKFLOW_TYPE,
  orderStatusQuery,
  orderWorkflowId,
  retryStepUpdate,
  type OrderCompletedResult,
  type RetryStepResult,
} from '../../workflows/order-fulfilment.contract.js';
import { StepPhase } from '../../workflows/order-plan.js';
import { SHIPPED_STEPS as STEPS } from '../helpers/shipped-steps.js';
import { startWorkflowWorkers, type WorkflowWorkers } from '../helpers/workflow-workers.js';

/** 250: at least 3 continue-as-new switches (a run holds ~66 retries); HISTORY_RETRIES sets more for a longer proof. */
const RETRIES = Number(process.env.HISTORY_RETRIES ?? 250);
const taskQueue = `history-bound-${randomUUID()}`;
/** The step refused every time until `fixed`: the plan's first step after the pivot. */
const FAILING = STEPS.find((s) => s.phase === StepPhase.AfterPivot)!;
let fixed = false;
/** Resolved when the workflow writes `attention_required` (it waits for a retry from that workflow task on). */
let attention: { promise: Promise<void>; resolve: () => void } = waiter();

function waiter(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
let client: Client;
let workers: WorkflowWorkers;

function scripted(): Record<string, (...args: unknown[]) => Promise<unknown>> {
  const activities: Record<string, (...args: unknown[]) => Promise<unknown>> = {
    haltOrder: async () => ({ outcome: 'halted' }),
    setOrderStatus: async (...args: unknown[]) => {
      if ((args[0] as { status?: string }).status === 'attention_required') attention.resolve();
      return { applied: true };
    },
  };
  for (const step of STEPS) {
    activities[step.name] = async () => {
      if (step === FAILING && !fixed) {
        throw ApplicationFailure.create({
          message: 'the provider refused it (422)',
          type: ErrorType.ProviderRejected,
          nonRetryable: true,
          details: [{ status: 422, mayHaveActed: false }],
        });
      }
      return { step: step.name, performed: true, providerId: `${step.name}-1` };
    };
  }
  return activities;
}

beforeAll(async () => {
  workers = await startWorkflowWorkers(taskQueue, scripted());
  client = workers.client;
});

afterAll(() => workers?.close());

/**
 * Sends the retry Update `id` once the workflow waits (its attention status write ran), repeating while the
 * validator refuses (it writes no event).
 */
async function retry(handle: WorkflowHandle, id: string): Promise<RetryStepResult> {
  await attention.promise;
  attention = waiter();
  for (;;) {
    try {
      return await handle.executeUpdate(retryStepUpdate, { args: [{}], updateId: id });
    } catch (err) {
      if (!(err instanceof WorkflowUpdateFailedError)) throw err;
      await new Promise((r) => setTimeout(r, 2));
    }
  }
}

/** Every run of the order, newest first, with its history length. */
async function runs(workflowId: string): Promise<Array<{ runId: string; historyLength: number }>> {
  const found: Array<{ runId: string; historyLength: number }> = [];
  for await (const execution of client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
    found.push({ runId: execution.runId, historyLength: execution.historyLength ?? 0 });
  }
  return found;
}

describe('an order retried thousands of times', () => {
  it(
    `keeps every run's history bounded across ${RETRIES} operator retries, answering each once`,
    async () => {
      const orderId = randomUUID();
      const plan = buildPlan(STEPS, {
        orderId,
        customerEmail: 'ada@example.com',
        customerName: 'Ada',
        currency: 'EUR',
        totalMinor: 1999,
        lines: [{ sku: 'TEE-BLK-M', quantity: 1 }],
      });
      const handle = await client.workflow.start(ORDER_WORKFLOW_TYPE, {
        taskQueue,
        workflowId: orderWorkflowId(orderId),
        args: [{ orderId, plan }],
      });
      const started = Date.now();
      const answers: RetryStepResult[] = [];
      for (let i = 1; i <= RETRIES; i++) answers.push(await retry(handle, `retry-${i}`));
      const seconds = (Date.now() - started) / 1000;
      expect(answers.map((a) => a.retry)).toEqual(Array.from({ length: RETRIES }, (_, i) => i + 1));
      expect(new Set(answers.map((a) => a.step))).toEqual(new Set([FAILING.name]));

      // The retries repeated with their ids, after the switches: their first answers, no new retry.
      await attention.promise;
      const recent = `retry-${RETRIES}`;
      expect(await handle.executeUpdate(retryStepUpdate, { args: [{}], updateId: recent })).toEqual(answers.at(-1));
      attention.resolve();
      let state = await handle.query(orderStatusQuery);
      for (let i = 0; !state.attention && i < 500; i++) {
        await new Promise((r) => setTimeout(r, 20));
        state = await handle.query(orderStatusQuery);
      }
      expect(state.attention?.retries).toBe(RETRIES);

      // Fixed: the next retry completes the order.
      fixed = true;
      const last = await retry(handle, 'retry-after-the-fix');
      expect(last.retry).toBe(RETRIES + 1);
      const result = (await handle.result()) as OrderCompletedResult;
      expect(result.status).toBe('completed');

      const all = await runs(handle.workflowId);
      const longest = Math.max(...all.map((r) => r.historyLength));
      console.log(
        `${RETRIES} retries in ${seconds.toFixed(1)} s; ${all.length} runs; longest history ${longest} events ` +
          `(limit ${HISTORY_EVENTS_LIMIT} + one retry cycle)`,
      );
      expect(all.length).toBeGreaterThanOrEqual(RETRIES >= 200 ? 3 : 1);
      expect(longest).toBeLessThanOrEqual(HISTORY_EVENTS_LIMIT + 40);
    },
    30 * 60_000,
  );
});
