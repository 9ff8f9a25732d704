/**
 * Adding a step never breaks running orders (issue 15). Each order runs the plan it was placed with: the API stores
 * it and passes it in the workflow's input (workflows/order-plan.ts), so the workflow never reads the registry.
 *
 * Proven here on the real dev server with scripted activities:
 * 1. an order placed before a step was added (its plan: the registry now) completes; its history replays on the
 *    current code;
 * 2. after the step is added (the registry plus one more after-pivot step), a new order runs the longer plan on the
 *    same workers and its history holds the added activity;
 * 3. the control: the first history with the added step forced into its input (what a workflow that read the
 *    registry would have seen on replay) does NOT replay: non-determinism. The plan in the input is what keeps
 *    running orders safe.
 * The committed baselines in ./histories (recorded before any step is added; replay.spec.ts) are the same proof
 * for real histories, and CI replays them again on a copy of the repository with the worked example's step added
 * (docs/extending.md).
 */
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import { type NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activitiesByTaskQueue } from '../../activities/index.js';
import { SHIPPED_STEPS } from '../helpers/shipped-steps.js';
import { defineProviderStep, StepPhase, type StepDefinition } from '../../activities/kit/define.js';
import { buildPlan } from '../../activities/catalogue/plan.js';
import { email } from '../../providers/email.provider.js';
import { createOrderWorkers, workflowsPath } from '../../src/worker/order-worker.js';
import {
  ORDER_WORKFLOW_TYPE,
  orderWorkflowId,
  type OrderFulfilmentInput,
} from '../../workflows/order-fulfilment.contract.js';
import type { OrderPlan } from '../../workflows/order-plan.js';
import { startWorkflowWorkers, type WorkflowWorkers } from '../helpers/workflow-workers.js';

/** The step "added after the first order was placed": an after-pivot provider step, like the worked example. */
const ADDED = defineProviderStep({
  name: 'notifyAddedStep',
  phase: StepPhase.AfterPivot,
  status: 'added_step_done',
  label: 'Added step done',
  description: 'A step added to the registry while orders run.',
  provider: email,
  operation: 'send',
  key: (orderId) => `added-step:${orderId}`,
  request: async () => ({ to: 'ada@example.com', subject: 'x', text: 'x' }),
});

/** The shipped steps (not the live registry: its event steps wait for reports these scripted activities never send). */
const BEFORE: readonly StepDefinition[] = SHIPPED_STEPS;
const AFTER: readonly StepDefinition[] = [...SHIPPED_STEPS, ADDED];

const taskQueue = `plan-versioning-${randomUUID()}`;
let connection: NativeConnection;
let client: Client;
let workers: WorkflowWorkers;

/** Every activity of `AFTER` scripted to succeed (provider steps with an id), plus the kit's own. */
function scripted(): Record<string, (input: { orderId: string }) => Promise<unknown>> {
  const activities: Record<string, (input: { orderId: string }) => Promise<unknown>> = {
    haltOrder: async () => ({ outcome: 'halted' }),
    setOrderStatus: async () => ({ applied: true }),
  };
  for (const step of AFTER) {
    activities[step.name] = async () => ({ step: step.name, performed: true, providerId: `${step.name}-1` });
    if (step.compensation) {
      activities[step.compensation.name] = async () => ({ compensation: step.compensation!.name, performed: true });
    }
  }
  return activities;
}

function planFor(steps: readonly StepDefinition[], orderId: string): OrderPlan {
  return buildPlan(steps, {
    orderId,
    customerEmail: 'ada@example.com',
    customerName: 'Ada',
    currency: 'EUR',
    totalMinor: 1999,
    lines: [{ sku: 'TEE-BLK-M', quantity: 1 }],
  });
}

async function runOrder(plan: OrderPlan, orderId: string): Promise<WorkflowHandle> {
  const handle = await client.workflow.start(ORDER_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: orderWorkflowId(orderId),
    args: [{ orderId, plan } satisfies OrderFulfilmentInput],
  });
  await handle.result();
  return handle;
}

/** Activity types scheduled in a history (provider steps are activity tasks; database steps are local). */
function scheduledActivities(history: temporal.api.history.v1.IHistory): string[] {
  return (history.events ?? []).flatMap((e) => {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
}

beforeAll(async () => {
  // The workers of a deploy that knows the added step (deploy workers before the API: docs/versioning.md).
  workers = await startWorkflowWorkers(taskQueue, activitiesByTaskQueue(scripted(), AFTER));
  ({ connection, client } = workers);
});

afterAll(() => workers?.close());

describe('adding a step to the registry', () => {
  it('keeps running orders on their own plan and gives new orders the new one', async () => {
    // 1. Placed before the step was added.
    const before = randomUUID();
    const old = await runOrder(planFor(BEFORE, before), before);
    const oldHistory = await old.fetchHistory();
    expect(scheduledActivities(oldHistory)).not.toContain(ADDED.name);
    await Worker.runReplayHistory({ workflowsPath: workflowsPath() }, oldHistory, old.workflowId);

    // 2. Placed after: the longer plan, on the same workers (same workflow code).
    const after = randomUUID();
    const fresh = await runOrder(planFor(AFTER, after), after);
    expect(scheduledActivities(await fresh.fetchHistory())).toContain(ADDED.name);

    // 3. Control: the old history whose input carries the new plan does not replay.
    const forced = structuredClone(oldHistory);
    const started = forced.events![0]!.workflowExecutionStartedEventAttributes!;
    const input = defaultPayloadConverter.fromPayload<OrderFulfilmentInput>(started.input!.payloads![0]!);
    started.input!.payloads![0] = defaultPayloadConverter.toPayload({ ...input, plan: planFor(AFTER, before) })!;
    await expect(Worker.runReplayHistory({ workflowsPath: workflowsPath() }, forced, old.workflowId)).rejects.toThrow(
      /[Nn]ondetermin/,
    );
  });

  it('an order whose plan names a step its workers do not know yet waits for a worker that does (rolling deploy)', async () => {
    // Workers of the old deploy (they know only BEFORE's steps) on their own task queue; the API already plans AFTER.
    const queue = `plan-rollout-${randomUUID()}`;
    const old = await createOrderWorkers({
      connection,
      namespace: 'default',
      taskQueue: queue,
      activities: activitiesByTaskQueue(
        Object.fromEntries(Object.entries(scripted()).filter(([name]) => name !== ADDED.name)),
        AFTER,
      ),
    });
    const oldRunning = old.run();
    const orderId = randomUUID();
    const handle = await client.workflow.start(ORDER_WORKFLOW_TYPE, {
      taskQueue: queue,
      workflowId: orderWorkflowId(orderId),
      args: [{ orderId, plan: planFor(AFTER, orderId) } satisfies OrderFulfilmentInput],
    });
    // The SDK fails an unregistered activity with the retryable type NotFoundError, which no profile lists as
    // permanent (ours is RecordNotFoundError): the step is retried, the order neither fails nor waits for a person.
    for (let i = 0; ; i++) {
      const pending = (await handle.describe()).raw.pendingActivities ?? [];
      const added = pending.find((a) => a.activityType?.name === ADDED.name);
      if (added && (added.attempt ?? 0) >= 2) {
        expect(added.lastFailure?.applicationFailureInfo?.type).toBe('NotFoundError');
        break;
      }
      if (i > 200) throw new Error('the added step was not retried');
      await new Promise((r) => setTimeout(r, 100));
    }
    // The new deploy's workers replace the old ones: the order completes with the added step.
    old.shutdown();
    await oldRunning;
    const fresh = await createOrderWorkers({
      connection,
      namespace: 'default',
      taskQueue: queue,
      activities: activitiesByTaskQueue(scripted(), AFTER),
    });
    await fresh.runUntil(() => handle.result());
    expect(scheduledActivities(await handle.fetchHistory())).toContain(ADDED.name);
  }, 90_000);
});
