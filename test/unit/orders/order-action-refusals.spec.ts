/**
 * The 409 of an operator action the workflow refused because the order no longer waits (another action sent at the
 * same time was accepted first): it says so, with the order's status now, and names no waiting step, even when the
 * workflow's state queried after the refusal still shows the wait being left. OrderActionsService over fakes of the
 * order read and of the Updates' outcomes (the refusal as the workflow's validators word it).
 */
import { describe, expect, it } from 'vitest';
import { ErrorType } from '../../../workflows/errors.js';
import type { OrderFulfilmentState } from '../../../workflows/order-fulfilment.contract.js';
import type { AppConfig } from '../../../src/config/config.js';
import { ProblemException } from '../../../src/common/problem-details.js';
import { OrderActionsService } from '../../../src/orders/order-actions.service.js';
import { ALL_ORDERS } from '../../../src/orders/order-access.js';
import type { OrderView } from '../../../src/orders/order-response.dto.js';
import type { OrdersService } from '../../../src/orders/orders.service.js';
import type { OrderWorkflowActions } from '../../../src/orders/workflow/order-workflow-actions.service.js';
import type { OrderWorkflowReconciler } from '../../../src/orders/workflow/order-workflow-reconciler.service.js';
import type { OrderWorkflowStarter } from '../../../src/orders/workflow/order-workflow-starter.service.js';
import type { PrismaClient } from '../../../src/prisma/prisma.js';

const ID = '0b6f4a5e-3c1d-4f7a-9a43-2b1e5c6d7e8f';

/** The workflow's state right after another action was accepted: it still shows the wait it is leaving. */
const leaving = {
  status: 'attention_required',
  currentStep: null,
  attention: { step: 'shipOrder', resolutions: ['performed'], closable: true },
} as unknown as OrderFulfilmentState;

/** The service over an order stored as `status` and Updates that all answer `outcome`. */
function service(status: string, outcome: unknown): OrderActionsService {
  const orders = { get: async () => ({ id: ID, status, workflowStartedAt: new Date() }) as unknown as OrderView };
  const actions = {
    retry: async () => outcome,
    resolve: async () => outcome,
    close: async () => outcome,
    previousAnswer: async () => null,
    previousRetry: async () => null,
  };
  const prisma = { orderResolution: { findUnique: async () => null } };
  return new OrderActionsService(
    {} as AppConfig,
    prisma as unknown as PrismaClient,
    orders as unknown as OrdersService,
    {} as OrderWorkflowStarter,
    actions as unknown as OrderWorkflowActions,
    {} as OrderWorkflowReconciler,
  );
}

async function problemOf(action: Promise<unknown>): Promise<Record<string, unknown>> {
  const err = await action.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ProblemException);
  return (err as ProblemException).problem as unknown as Record<string, unknown>;
}

describe('a losing concurrent operator action', () => {
  it('retry: the 409 says the order no longer waits and its status now, not "waits for a retry of shipOrder"', async () => {
    const refused = {
      kind: 'refused',
      failure: {
        type: ErrorType.OrderNotAwaitingRetry,
        message: `order ${ID} is attention_required and does not wait for a retry`,
        details: [{ status: 'attention_required', waitingStep: null }],
      },
      state: leaving,
    };
    const problem = await problemOf(service('shipped', refused).retry(ID, undefined, { access: ALL_ORDERS }));
    expect(problem).toMatchObject({ status: 409, waitingFor: null, orderStatus: 'shipped' });
    expect(problem.detail).toBe(
      `Order ${ID} no longer waits for an operator: another operator action on shipOrder was accepted first; the ` +
        'order is now shipped',
    );
  });

  it('resolve and close: the same, with no resolutions offered', async () => {
    const refused = {
      kind: 'refused',
      failure: {
        type: ErrorType.OrderNotAwaitingResolution,
        message: `order ${ID} is attention_required and does not wait for an operator`,
        details: [{ status: 'attention_required', waitingStep: null, resolutions: [], closable: false }],
      },
      state: leaving,
    };
    const options = { access: ALL_ORDERS, by: 'ops' };
    const resolve = await problemOf(
      service('shipped', refused).resolve(ID, { step: 'shipOrder', outcome: 'performed', reason: 'r' }, options),
    );
    const close = await problemOf(service('attention_required', refused).close(ID, { reason: 'r' }, options));
    for (const [problem, status, now] of [
      [resolve, 'shipped', 'the order is now shipped'],
      [close, 'attention_required', 'its status stays attention_required until the workflow moves on'],
    ] as const) {
      expect(problem).toMatchObject({ waitingFor: null, resolutions: [], closable: false, orderStatus: status });
      expect(problem.detail).toBe(
        `Order ${ID} no longer waits for an operator: another operator action on shipOrder was accepted first; ${now}`,
      );
    }
  });

  it('a refusal that names the wait still says which step waits', async () => {
    const refused = {
      kind: 'refused',
      failure: {
        type: ErrorType.OrderNotAwaitingRetry,
        message: `order ${ID} waits for a retry of shipOrder, not syncInvoiceToAccounting`,
        details: [{ status: 'attention_required', waitingStep: 'shipOrder' }],
      },
      state: leaving,
    };
    const problem = await problemOf(
      service('attention_required', refused).retry(ID, 'syncInvoiceToAccounting', { access: ALL_ORDERS }),
    );
    expect(problem).toMatchObject({ waitingFor: 'shipOrder' });
    expect(problem.detail).toBe(`Order ${ID} waits for a retry of shipOrder, not of syncInvoiceToAccounting`);
  });
});
