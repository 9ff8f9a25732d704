/**
 * Starts (idempotently) the fulfilment workflow of an order. Actions on a running workflow (cancel, retry) are
 * in {@link OrderWorkflowActions}.
 *
 * Idempotency layer 2 (README, Guarantees): the workflow id is `order-<orderId>` ({@link orderWorkflowId}), the
 * conflict policy `USE_EXISTING` turns a start of a running workflow into a no-op, and the reuse policy
 * `REJECT_DUPLICATE` makes a start of a closed one fail with `WorkflowExecutionAlreadyStartedError`, which
 * counts as success. So the API and the reconciler may both start the same order any number of times.
 */
import { Inject, Injectable } from '@nestjs/common';
import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
} from '@temporalio/client';
import {
  ORDER_WORKFLOW_TYPE,
  type OrderFulfilmentInput,
  type OrderFulfilmentResult,
  OrderStatus,
  orderWorkflowId,
  SEARCH_ATTRIBUTES,
} from '../../../workflows/order-fulfilment.contract.js';
import type { OrderPlan } from '../../../workflows/order-plan.js';
import { APP_CONFIG, type AppConfig } from '../../config/config.js';
import type { PgSqlClient } from '../../database/sql-client.js';
import { PRISMA, SQL } from '../../prisma/prisma.module.js';
import type { PrismaClient } from '../../prisma/prisma.js';
import { customerSearchId } from './customer-id.js';
import { TEMPORAL_CLIENT, WORKFLOW_START_TIMEOUT_MS } from '../../temporal/temporal.constants.js';

/** Signature of the workflow, for typing `workflow.start` by name (the function itself is never imported). */
type OrderFulfilmentWorkflow = (input: OrderFulfilmentInput) => Promise<OrderFulfilmentResult>;

/** Outcome of {@link OrderWorkflowStarter.start}. */
export interface StartOrderWorkflowResult {
  workflowId: string;
  /** True when Temporal reported the id as already used by a closed execution (nothing new started). */
  alreadyStarted: boolean;
}

@Injectable()
export class OrderWorkflowStarter {
  constructor(
    @Inject(TEMPORAL_CLIENT) private readonly client: Client,
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    @Inject(SQL) private readonly sql: PgSqlClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Starts the order's workflow on `TEMPORAL_TASK_QUEUE` (or finds it started), with the search attributes OrderId,
   * OrderStatus and the pseudonymous CustomerId (customer-id.ts; read from the order row), then records
   * in one transaction, records `orders.workflow_started_at` if it is still null and deletes the order's start intent
   * (its job is done).
   * @param orderId UUID of a committed order.
   * @param known the order's customer email and plan when the caller read them already (else they are read here).
   * @param deadline epoch ms by which the start must be done (default and cap: {@link WORKFLOW_START_TIMEOUT_MS}).
   * @throws the client's error when Temporal is unreachable (after {@link WORKFLOW_START_TIMEOUT_MS} ms at
   *   most) or rejects the request; `orders.workflow_started_at` then stays null for the reconciler.
   */
  async start(
    orderId: string,
    known?: { customerEmail: string; plan: unknown },
    deadline = Date.now() + WORKFLOW_START_TIMEOUT_MS,
  ): Promise<StartOrderWorkflowResult> {
    const workflowId = orderWorkflowId(orderId);
    const order =
      known ??
      (await this.prisma.order.findUnique({ where: { id: orderId }, select: { customerEmail: true, plan: true } }));
    const customerId = order && customerSearchId(order.customerEmail, this.config.CUSTOMER_ID_SECRET);
    // The display goes to the workflow's user metadata, not into its input (the workflow does not read it).
    const { display, ...plan } = (order?.plan ?? {}) as OrderPlan;
    const hasPlan = Array.isArray((plan as Partial<OrderPlan>).steps);
    let alreadyStarted = false;
    try {
      await this.client.withDeadline(Math.min(deadline, Date.now() + WORKFLOW_START_TIMEOUT_MS), () =>
        this.client.workflow.start<OrderFulfilmentWorkflow>(ORDER_WORKFLOW_TYPE, {
          taskQueue: this.config.TEMPORAL_TASK_QUEUE,
          workflowId,
          // The plan stored with the order: the run keeps it whatever the registry becomes (docs/versioning.md).
          args: [{ orderId, ...(hasPlan ? { plan: plan as OrderPlan } : {}) }],
          // How the order reads in the Temporal UI's list and on its page (src/orders/order-display.ts).
          ...(display ? { staticSummary: display.summary, staticDetails: display.details } : {}),
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
          typedSearchAttributes: [
            { key: SEARCH_ATTRIBUTES.OrderId, value: orderId },
            { key: SEARCH_ATTRIBUTES.OrderStatus, value: OrderStatus.Received },
            ...(customerId ? [{ key: SEARCH_ATTRIBUTES.CustomerId, value: customerId }] : []),
            ...(display ? [{ key: SEARCH_ATTRIBUTES.OrderSummary, value: display.plainSummary }] : []),
          ],
        }),
      );
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      alreadyStarted = true;
    }
    // One statement (one implicit transaction): the intent goes, the start time is recorded if still unset
    // (`updated_at` moves with it, as Prisma's @updatedAt would). It never waits for the order row: when someone
    // holds its lock (a long report, an open psql session), the start time is left for the reconciler (the intent is
    // gone, the workflow runs; the reconciler's repeated start is a no-op that records it), so one locked order
    // never holds up the starts of the others.
    const now = new Date();
    await this.sql.$executeRaw`
      WITH intent AS (DELETE FROM workflow_start_intents WHERE order_id = ${orderId}::uuid),
      free AS (
        SELECT id FROM orders WHERE id = ${orderId}::uuid AND workflow_started_at IS NULL
        FOR NO KEY UPDATE SKIP LOCKED)
      UPDATE orders SET workflow_started_at = ${now}, updated_at = ${now}
      WHERE id IN (SELECT id FROM free)`;
    return { workflowId, alreadyStarted };
  }
}
