/**
 * The reconciler: "nothing accepted is lost", the safety net behind the {@link OrderStartDispatcher} (which starts
 * the workflow of every accepted order from its start intent). Every `RECONCILE_INTERVAL_MS` ms (0 disables it) it
 * looks for committed orders whose workflow was never started (`workflow_started_at IS NULL`: an intent the
 * dispatcher could not start yet, or an order older than the intents), older than {@link RECONCILE_MIN_AGE_MS} ms so it does not race the POST handler, at most
 * {@link RECONCILE_BATCH_SIZE} per pass, and starts them through {@link OrderWorkflowStarter} (idempotent).
 * Orders already final (`completed`, `failed`, `cancelled`) are never started: a workflow would have nothing to do,
 * and a final order's row must not be touched again.
 *
 * The sweeper ({@link OrderWorkflowReconciler.sweepOnce}, same loop, after the reconciler): "nothing open is
 * forgotten". Orders that are not final, whose workflow was started, and that have not changed for
 * `SWEEP_MIN_AGE_MS` (default 5 min) are checked with `describe`: a running workflow is left alone; a closed one
 * (or a missing one) behind an order that is not final means the row will never move again, so it is repaired
 * (the workflow COMPLETED with a result: its status is written, rank-guarded) or flagged `attention_required`
 * with a reason that names the operator's exit ({@link sweptReason}: a `temporal workflow reset` of the closed run).
 * A running workflow behind an order the sweeper flagged (the operator reset it) gets the order's status from
 * before the flag back ({@link OrderWorkflowReconciler.unflag}), so the order reads as its workflow stands. The
 * order actions sweep an order at once when they find its workflow closed ({@link OrderWorkflowReconciler.sweepNow}).
 * The sweeper never touches stock or invoices. At most {@link SWEEP_BATCH_SIZE}
 * orders per pass, taken in (updated_at, id) order after where the previous pass stopped, so long-waiting
 * running orders cannot starve the others.
 *
 * A failed start is logged and the pass goes on with the next order; when Temporal is unreachable the pass
 * ends early (the others would fail the same way) and the next pass tries again. Passes never overlap; the
 * loop stops, and the running pass is awaited, when the application shuts down.
 *
 * The purge of expired `Idempotency-Key` records is not here any more: a Temporal Schedule runs it
 * (src/worker/retention-schedule.ts).
 */
import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import {
  isTerminalStatus,
  OrderStatus,
  orderWorkflowId,
  TERMINAL_ORDER_STATUSES,
} from '../../../workflows/order-fulfilment.contract.js';
import { attentionRank, FINAL_FAILURE_RANK, RECEIVED_RANK } from '../../../workflows/order-plan.js';
import { planOf } from '../order-steps.js';
import { APP_CONFIG, type AppConfig } from '../../config/config.js';
import { PRISMA } from '../../prisma/prisma.module.js';
import type { PrismaClient } from '../../prisma/prisma.js';
import { OrderWorkflowStarter } from './order-workflow-starter.service.js';
import { isTemporalUnreachable } from '../../temporal/temporal-errors.js';
import {
  RECONCILE_BATCH_SIZE,
  RECONCILE_MIN_AGE_MS,
  SWEEP_BATCH_SIZE,
  TEMPORAL_CALL_TIMEOUT_MS,
  TEMPORAL_CLIENT,
} from '../../temporal/temporal.constants.js';

/** What one reconciliation pass did. */
export interface ReconcileResult {
  /** Orders found without a started workflow. */
  found: number;
  /** Workflows started (or found already started) and recorded. */
  started: number;
  /** Orders whose start failed (the rest of a pass cut short by an unreachable Temporal is not counted). */
  failed: number;
}

/** What one sweeper pass did. */
export interface SweepResult {
  /** Stale, non-final orders with a started workflow that were checked. */
  checked: number;
  /** Their workflow is still running: nothing to do. */
  running: number;
  /** Closed COMPLETED with a result: the result's status (`completed`/`cancelled`) was written. */
  repaired: number;
  /** Closed otherwise, or missing: set to `attention_required` with a reason for an operator. */
  flagged: number;
  /** Checks that failed (Temporal errors, unexpected results); the order is checked again in a later pass. */
  failed: number;
  /** Rows that changed between the read and the write (someone else moved them): left alone. */
  skipped: number;
  /**
   * Orders the sweeper had flagged whose workflow runs again (an operator reset it): the status they had before the
   * flag is written back, so the order reads (and cancels) as its workflow stands.
   */
  resumed: number;
}

/**
 * The operator's exit for an order whose workflow closed under it: a reset of the closed run to its last workflow
 * task, which starts a new run that replays the history and goes on from where the old one stopped (the steps'
 * claims make a step that runs again one effect per key). The operator's `--reason` (for `<why>`) is recorded in
 * the workflow's history.
 */
export function resetCommand(workflowId: string): string {
  return `temporal workflow reset --workflow-id ${workflowId} --type LastWorkflowTask --reason '<why>'`;
}

/** The sweeper's `failure_reason` when it flags an order whose workflow closed (or is missing). */
export function sweptReason(workflowId: string, workflowStatus: string, orderStatus: string): string {
  const closed = workflowStatus.toLowerCase().replace(/_/g, ' ');
  const exit =
    workflowStatus === 'NOT_FOUND'
      ? 'its history is gone, so an operator settles its stock and invoice by hand'
      : `an operator resumes it with \`${resetCommand(workflowId)}\`, then retries, resolves or cancels as usual`;
  return `workflow ${workflowId} closed (${closed}) while the order was ${orderStatus}; ${exit}`;
}

/** The order status a {@link sweptReason} names (the status the order had when flagged), or null. */
export function statusBeforeSweep(workflowId: string, failureReason: string | null): string | null {
  const prefix = `workflow ${workflowId} closed (`;
  if (!failureReason?.startsWith(prefix)) return null;
  return /^[^)]*\) while the order was ([a-z_]+);/.exec(failureReason.slice(prefix.length))?.[1] ?? null;
}

/**
 * The rank a sweeper's write takes: for `attention_required`, the attention rank of the step the order waits on
 * (the first step of its plan whose rank is above the order's, just above the order's current rank); for
 * `completed`, the plan's last step's rank; for `cancelled`, the final-failure rank. Null when the plan has no such
 * step (the order is at its last status already).
 */
function sweptRank(order: SweptOrder, status: string): number | null {
  const plan = planOf(order);
  if (status === OrderStatus.Cancelled || status === OrderStatus.Failed) return FINAL_FAILURE_RANK;
  if (status === OrderStatus.Completed) return plan.steps.at(-1)?.rank ?? null;
  if (order.status === OrderStatus.AttentionRequired) return order.statusStep;
  const next = plan.steps.find((s) => s.rank > order.statusStep);
  return next ? attentionRank(next) : null;
}

/** A swept order as read. */
interface SweptOrder {
  id: string;
  status: string;
  statusStep: number;
  updatedAt: Date;
  plan: unknown;
  failureReason: string | null;
}

/** The columns of a {@link SweptOrder}. */
const SWEPT_COLUMNS = {
  id: true,
  status: true,
  statusStep: true,
  updatedAt: true,
  plan: true,
  failureReason: true,
} as const;

@Injectable()
export class OrderWorkflowReconciler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(OrderWorkflowReconciler.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;
  /** Where the previous sweeper pass stopped; null: start from the oldest. */
  private sweepCursor: { updatedAt: Date; id: string } | null = null;

  constructor(
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    @Inject(TEMPORAL_CLIENT) private readonly client: Client,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly starter: OrderWorkflowStarter,
  ) {}

  /** Starts the periodic loop unless `RECONCILE_INTERVAL_MS` is 0. */
  onApplicationBootstrap(): void {
    if (this.config.RECONCILE_INTERVAL_MS > 0) this.schedule();
  }

  /** Stops the loop and waits for a running pass, before the Prisma and Temporal clients close. */
  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /**
   * Runs one pass now (also used by the periodic loop).
   * @param now reference time for the minimum age, default the current time.
   */
  async reconcileOnce(now: Date = new Date()): Promise<ReconcileResult> {
    // A final order needs no start: drop an intent left behind (nothing should leave one; this keeps it so).
    await this.prisma.$executeRaw`
      DELETE FROM workflow_start_intents i USING orders o
      WHERE o.id = i.order_id AND o.status = ANY(${[...TERMINAL_ORDER_STATUSES]})`;
    const orders = await this.prisma.order.findMany({
      where: {
        workflowStartedAt: null,
        status: { notIn: [...TERMINAL_ORDER_STATUSES] },
        createdAt: { lt: new Date(now.getTime() - RECONCILE_MIN_AGE_MS) },
      },
      orderBy: [{ createdAt: 'asc' }, { id: 'asc' }],
      take: RECONCILE_BATCH_SIZE,
      select: { id: true },
    });
    const result: ReconcileResult = { found: orders.length, started: 0, failed: 0 };
    for (const { id } of orders) {
      if (this.stopped) break;
      try {
        await this.starter.start(id);
        result.started++;
      } catch (err) {
        result.failed++;
        if (isTemporalUnreachable(err)) {
          this.logger.warn(
            { err, orderId: id },
            `Temporal unreachable; ${orders.length - result.started} order(s) left for the next pass`,
          );
          break;
        }
        this.logger.error({ err, orderId: id }, `Could not start the workflow of order ${id}`);
      }
    }
    if (result.found > 0) this.logger.log(result, 'Reconciled orders without a workflow');
    return result;
  }

  /**
   * One sweeper pass now (also run by the periodic loop): checks up to {@link SWEEP_BATCH_SIZE} orders that are not
   * final, have a started workflow and have not changed for `SWEEP_MIN_AGE_MS`, and repairs or flags those whose
   * workflow is closed or missing (see the file's docstring). Every write is conditional on the row being exactly
   * as read (status and updated_at), so a concurrent status write wins. Stops early when Temporal is unreachable.
   * @param now reference time for the minimum age, default the current time.
   */
  async sweepOnce(now: Date = new Date()): Promise<SweepResult> {
    const cursor = this.sweepCursor;
    const orders: SweptOrder[] = await this.prisma.order.findMany({
      where: {
        status: { notIn: [...TERMINAL_ORDER_STATUSES] },
        workflowStartedAt: { not: null },
        updatedAt: { lt: new Date(now.getTime() - this.config.SWEEP_MIN_AGE_MS) },
        ...(cursor
          ? { OR: [{ updatedAt: { gt: cursor.updatedAt } }, { updatedAt: cursor.updatedAt, id: { gt: cursor.id } }] }
          : {}),
      },
      orderBy: [{ updatedAt: 'asc' }, { id: 'asc' }],
      take: SWEEP_BATCH_SIZE,
      select: SWEPT_COLUMNS,
    });
    const last = orders.at(-1);
    this.sweepCursor = orders.length === SWEEP_BATCH_SIZE && last ? { updatedAt: last.updatedAt, id: last.id } : null;

    const result: SweepResult = {
      checked: 0,
      running: 0,
      repaired: 0,
      flagged: 0,
      failed: 0,
      skipped: 0,
      resumed: 0,
    };
    for (const order of orders) {
      if (this.stopped) break;
      try {
        const outcome = await this.sweepOrder(order);
        result.checked++;
        result[outcome]++;
      } catch (err) {
        result.checked++;
        result.failed++;
        if (isTemporalUnreachable(err)) {
          this.logger.warn({ err, orderId: order.id }, 'Temporal unreachable; the sweeper pass stops here');
          this.sweepCursor = cursor;
          break;
        }
        this.logger.error({ err, orderId: order.id }, `Could not sweep order ${order.id}`);
      }
    }
    if (result.checked > 0) {
      const log = result.flagged + result.failed > 0 ? 'warn' : 'log';
      this.logger[log](result, 'Swept stale orders');
    }
    return result;
  }

  /**
   * Sweeps one order now, whatever its age: what an order action does when it finds the order's workflow closed or
   * missing, so the order is flagged at once (and reads `cancellable: false`) instead of after `SWEEP_MIN_AGE_MS`.
   * A final order, or one whose workflow was never started, is left alone.
   * @returns what was done, or null when the order was left alone.
   * @throws the Temporal client's errors (describe, result).
   */
  async sweepNow(id: string): Promise<keyof Omit<SweepResult, 'checked'> | null> {
    const order = await this.prisma.order.findFirst({
      where: { id, status: { notIn: [...TERMINAL_ORDER_STATUSES] }, workflowStartedAt: { not: null } },
      select: SWEPT_COLUMNS,
    });
    return order ? this.sweepOrder(order) : null;
  }

  /** Checks one order's workflow and repairs, flags or resumes the row. */
  private async sweepOrder(order: SweptOrder): Promise<keyof Omit<SweepResult, 'checked'>> {
    const workflowId = orderWorkflowId(order.id);
    const handle = this.client.workflow.getHandle(workflowId);
    let workflowStatus: string;
    let runId: string | undefined;
    try {
      const description = await this.client.withDeadline(Date.now() + TEMPORAL_CALL_TIMEOUT_MS, () =>
        handle.describe(),
      );
      workflowStatus = description.status.name;
      runId = description.runId;
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      workflowStatus = 'NOT_FOUND';
    }
    // PAUSED (an operator paused it in Temporal) is open too: it resumes where it stopped.
    if (workflowStatus === 'RUNNING' || workflowStatus === 'PAUSED') {
      return (await this.unflag(order, workflowId)) ? 'resumed' : 'running';
    }

    if (workflowStatus === 'COMPLETED') {
      const closed = this.client.workflow.getHandle(workflowId, runId, { followRuns: false });
      const value: unknown = await this.client.withDeadline(Date.now() + TEMPORAL_CALL_TIMEOUT_MS, () =>
        closed.result(),
      );
      const final = finalStatusOf(value, order.id);
      if (final) {
        const rank = sweptRank(order, final.status);
        const applied = rank !== null && (await this.writeSwept(order, final.status, rank, final.reason));
        if (applied) {
          this.logger.warn(
            { orderId: order.id, from: order.status, to: final.status },
            `Order ${order.id} was ${order.status} although its workflow completed; wrote ${final.status}`,
          );
        }
        return applied ? 'repaired' : 'skipped';
      }
      this.logger.error({ orderId: order.id, result: value }, 'Completed workflow with an unexpected result');
    }

    const rank = sweptRank(order, OrderStatus.AttentionRequired);
    if (rank === null) {
      this.logger.error({ orderId: order.id, status: order.status }, 'Cannot flag an order with an unknown status');
      return 'failed';
    }
    // Flagged again (a later pass, an order action): the reason keeps naming the status from before the first flag,
    // which the resumed workflow's order gets back (see unflag).
    const reason = sweptReason(
      workflowId,
      workflowStatus,
      (order.status === OrderStatus.AttentionRequired && statusBeforeSweep(workflowId, order.failureReason)) ||
        order.status,
    );
    const applied = await this.writeSwept(order, OrderStatus.AttentionRequired, rank, reason);
    if (applied) this.logger.warn({ orderId: order.id, workflowStatus }, `Flagged order ${order.id}: ${reason}`);
    return applied ? 'flagged' : 'skipped';
  }

  /**
   * Writes a status as an absolute value with its rank (the guard of the workflow contract: applied when the stored
   * rank is lower, or equal with the same status), and only if the row is still as the sweeper read it.
   * `completed_at` is set on `completed`. Stock, invoices and claims are not touched.
   * @returns true when the row changed.
   */
  private async writeSwept(order: SweptOrder, status: string, rank: number, reason: string | null) {
    const stored = reason?.slice(0, 1000) ?? null;
    const updated = await this.prisma.$executeRaw`
      UPDATE orders
      SET status = ${status}, status_step = ${rank}, failure_reason = ${stored},
          completed_at = CASE WHEN ${status} = 'completed' THEN coalesce(completed_at, now()) ELSE completed_at END,
          updated_at = now()
      WHERE id = ${order.id}::uuid AND status = ${order.status} AND updated_at = ${order.updatedAt}
        AND (status_step < ${rank} OR (status_step = ${rank} AND status = ${status}))`;
    return updated === 1;
  }

  /**
   * Lifts the sweeper's own flag from an order whose workflow runs again (an operator reset it): writes back the
   * status the flag's reason names, with its rank, and clears the reason, only if the row is exactly as read (a
   * write of the workflow since wins). An order that waited for an operator before the flag keeps it (its workflow
   * waits too, and it did not write its wait again), as does any flag the sweeper did not write.
   * @returns true when the row changed.
   */
  private async unflag(order: SweptOrder, workflowId: string): Promise<boolean> {
    if (order.status !== OrderStatus.AttentionRequired) return false;
    const before = statusBeforeSweep(workflowId, order.failureReason);
    if (before === null) return false;
    const steps = planOf(order).steps;
    const rank = before === OrderStatus.Received ? RECEIVED_RANK : steps.find((s) => s.status === before)?.rank;
    // The flag's rank is the attention rank of the step after `before` (see sweptRank): check it is that flag.
    const next = steps.find((s) => rank !== undefined && s.rank > rank);
    if (rank === undefined || !next || attentionRank(next) !== order.statusStep) return false;
    const updated = await this.prisma.$executeRaw`
      UPDATE orders SET status = ${before}, status_step = ${rank}, failure_reason = NULL, updated_at = now()
      WHERE id = ${order.id}::uuid AND status = ${order.status} AND status_step = ${order.statusStep}
        AND updated_at = ${order.updatedAt} AND failure_reason = ${order.failureReason}`;
    if (updated !== 1) return false;
    this.logger.warn(
      { orderId: order.id, to: before },
      `The workflow of order ${order.id} runs again; its sweeper flag is lifted (${before})`,
    );
    return true;
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.reconcileOnce()
        .catch((err: unknown) => this.logger.error({ err }, 'Reconciliation pass failed'))
        .then(() => this.sweepOnce())
        .catch((err: unknown) => this.logger.error({ err }, 'Sweeper pass failed'))
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.config.RECONCILE_INTERVAL_MS);
    this.timer.unref();
  }
}

/**
 * The final status a completed workflow's result reports for `orderId`: `completed` (reason null) or `cancelled`
 * (reason `cancelled: <the cancel's reason>`); null for anything else.
 */
function finalStatusOf(
  value: unknown,
  orderId: string,
): { status: typeof OrderStatus.Completed | typeof OrderStatus.Cancelled; reason: string | null } | null {
  if (typeof value !== 'object' || value === null) return null;
  const result = value as { orderId?: unknown; status?: unknown; reason?: unknown };
  if (result.orderId !== orderId || !isTerminalStatus(String(result.status))) return null;
  if (result.status === OrderStatus.Completed) return { status: OrderStatus.Completed, reason: null };
  if (result.status === OrderStatus.Cancelled) {
    // The workflow stores a cancel as `cancelled: <reason>` (its compensate step); write the same.
    return {
      status: OrderStatus.Cancelled,
      reason: typeof result.reason === 'string' ? `cancelled: ${result.reason}` : 'cancelled',
    };
  }
  return null;
}
