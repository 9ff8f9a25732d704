/**
 * The return workflow (`orderReturn`, id `return-<returnId>`, workflows/order-return.contract.ts) seen from the API:
 * starting it idempotently, and sending it the `receive`, `withdraw` and `retry` Updates.
 *
 * Starts: the workflow id is `return-<id>`; the conflict policy `USE_EXISTING` turns a start of a running workflow into
 * a no-op and the reuse policy `REJECT_DUPLICATE` makes a start of a closed one fail with
 * `WorkflowExecutionAlreadyStartedError`, which counts as success. So `POST /orders/:id/returns` and the
 * {@link ReturnWorkflowSweeper} may both start the same return any number of times.
 *
 * Updates answer with an outcome (a tagged union) rather than throwing for the expected cases, so the HTTP layer maps
 * each case deliberately (as src/orders/workflow/order-workflow-actions.service.ts does for orders). The Update id is
 * derived from the request's `Idempotency-Key`: Temporal de-duplicates Updates by id within a run, so a repeated
 * request gets the first Update's outcome, and once the run closed Temporal's record of the Update still answers.
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  type WorkflowHandle,
  WorkflowIdConflictPolicy,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
} from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import {
  type OrderReturnInput,
  type OrderReturnResult,
  RETURN_WORKFLOW_TYPE,
  returnWorkflowId,
} from '../../workflows/order-return.contract.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import {
  isTemporalUnavailable,
  isWorkflowClosedError,
  type UpdateFailure,
  updateFailureOf,
} from '../temporal/temporal-errors.js';
import {
  RETRY_UPDATE_TIMEOUT_MS,
  TEMPORAL_CALL_TIMEOUT_MS,
  TEMPORAL_CLIENT,
  WORKFLOW_START_TIMEOUT_MS,
} from '../temporal/temporal.constants.js';

/** Signature of the workflow, for typing `workflow.start` by name (the function itself is never imported). */
type OrderReturnWorkflow = (input: OrderReturnInput) => Promise<OrderReturnResult>;

/** Longest Temporal UI summary of a return, characters (the lines are cut with `…` beyond it). */
const MAX_SUMMARY_LENGTH = 200;

/** Outcome of {@link ReturnWorkflows.update}. */
export type ReturnUpdateOutcome<T> =
  /** The workflow took the Update and answered. */
  | { kind: 'done'; result: T }
  /** The validator (or handler) refused it: `failure.type` is `ReturnNotAwaitingError` or `ReturnReceiptInvalidError`. */
  | { kind: 'refused'; failure: UpdateFailure }
  /** No worker completed the Update within {@link RETRY_UPDATE_TIMEOUT_MS}; the same Update id later returns it. */
  | { kind: 'timeout' }
  /**
   * The run has closed. `previous`: the answer of an Update with this id it took before it closed (a repeated
   * request), else null.
   */
  | { kind: 'closed'; workflowStatus: string; previous: T | null }
  /** No workflow with the return's id (not started, and it could not be started now). */
  | { kind: 'not-found' }
  /** Temporal is unreachable or rate-limits us. */
  | { kind: 'unavailable'; error: unknown };

/** What a start reads of a return. */
interface ReturnToStart {
  order_id: string;
  rma_number: string;
  reason_code: string;
  workflow_started_at: Date | null;
  lines: Array<{ sku: string; quantity: number }> | null;
}

@Injectable()
export class ReturnWorkflows {
  private readonly logger = new Logger(ReturnWorkflows.name);

  constructor(
    @Inject(TEMPORAL_CLIENT) private readonly client: Client,
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Starts the return's workflow on `TEMPORAL_TASK_QUEUE` (or finds it started) with the input
   * `{ returnId, orderId, receiptTimeoutMs: RETURN_RECEIPT_TIMEOUT, lines }` and a Temporal UI summary naming the RMA
   * number, the order and the lines; then records `returns.workflow_started_at` if it is still null (skipped while
   * an activity holds the row's lock: the sweeper's next start, a no-op, records it).
   * @param returnId UUID of a committed return.
   * @param deadline epoch ms by which the start must be done (default and cap: {@link WORKFLOW_START_TIMEOUT_MS}).
   * @returns false when there is no such return.
   * @throws the client's error when Temporal is unreachable or rejects the request; `workflow_started_at` then stays
   *   null for the sweeper.
   */
  async start(returnId: string, deadline = Date.now() + WORKFLOW_START_TIMEOUT_MS): Promise<boolean> {
    const stored = await this.read(returnId);
    if (!stored) return false;
    const lines = stored.lines ?? [];
    try {
      await this.client.withDeadline(Math.min(deadline, Date.now() + WORKFLOW_START_TIMEOUT_MS), () =>
        this.client.workflow.start<OrderReturnWorkflow>(RETURN_WORKFLOW_TYPE, {
          taskQueue: this.config.TEMPORAL_TASK_QUEUE,
          workflowId: returnWorkflowId(returnId),
          args: [{ returnId, orderId: stored.order_id, receiptTimeoutMs: this.config.RETURN_RECEIPT_TIMEOUT, lines }],
          staticSummary: returnSummary(stored.rma_number, stored.order_id, lines),
          staticDetails:
            `Return **${stored.rma_number}** of order \`${stored.order_id}\` (reason: ${stored.reason_code})\n\n` +
            lines.map((l) => `- ${l.quantity} × ${l.sku}`).join('\n'),
          workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
          workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
        }),
      );
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
    await this.prisma.$executeRaw`
      WITH free AS (
        SELECT id FROM returns WHERE id = ${returnId}::uuid AND workflow_started_at IS NULL
        FOR NO KEY UPDATE SKIP LOCKED)
      UPDATE returns SET workflow_started_at = now() WHERE id IN (SELECT id FROM free)`;
    return true;
  }

  /**
   * Sends `update` with `input` and `updateId` to the return's workflow, bounded by {@link RETRY_UPDATE_TIMEOUT_MS}.
   * A return whose workflow was never started (Temporal was down when it was asked for) gets it started first.
   * @throws the client's error for anything not listed in {@link ReturnUpdateOutcome} (a bug, a refused request).
   */
  async update<T, A>(
    returnId: string,
    update: UpdateDefinition<T, [A]>,
    input: A,
    updateId: string,
  ): Promise<ReturnUpdateOutcome<T>> {
    const handle = this.client.workflow.getHandle(returnWorkflowId(returnId));
    let outcome = await this.sendUpdate(handle, update, input, updateId);
    if (outcome.kind === 'not-found' && (await this.startIfNeverStarted(returnId))) {
      outcome = await this.sendUpdate(handle, update, input, updateId);
    }
    return outcome;
  }

  /**
   * Waits up to `timeoutMs` for the return's workflow to close.
   * @returns its result, or null when it did not close in time, failed, or Temporal did not answer. Never throws.
   */
  async waitForResult(returnId: string, timeoutMs: number): Promise<OrderReturnResult | null> {
    const handle = this.client.workflow.getHandle<OrderReturnWorkflow>(returnWorkflowId(returnId));
    try {
      return await this.client.withDeadline(Date.now() + timeoutMs, () => handle.result());
    } catch (err) {
      this.logger.debug({ err, returnId }, 'the return workflow did not close in time');
      return null;
    }
  }

  /** One Update: `describe` first (a closed or missing run, an unreachable Temporal), then `executeUpdate`. */
  private async sendUpdate<T, A>(
    handle: WorkflowHandle,
    update: UpdateDefinition<T, [A]>,
    input: A,
    updateId: string,
  ): Promise<ReturnUpdateOutcome<T>> {
    try {
      const description = await this.client.withDeadline(Date.now() + TEMPORAL_CALL_TIMEOUT_MS, () =>
        handle.describe(),
      );
      const status = description.status.name;
      if (status !== 'RUNNING' && status !== 'PAUSED') {
        return { kind: 'closed', workflowStatus: status, previous: await this.previousAnswer<T>(handle, updateId) };
      }
      const result = await this.client.withDeadline(Date.now() + RETRY_UPDATE_TIMEOUT_MS, () =>
        handle.executeUpdate(update, { args: [input], updateId }),
      );
      return { kind: 'done', result };
    } catch (err) {
      if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return { kind: 'timeout' };
      const failure = updateFailureOf(err);
      if (failure) return { kind: 'refused', failure };
      if (isWorkflowClosedError(err)) {
        return { kind: 'closed', workflowStatus: 'CLOSED', previous: await this.previousAnswer<T>(handle, updateId) };
      }
      if (err instanceof WorkflowNotFoundError) return { kind: 'not-found' };
      if (isTemporalUnavailable(err)) return { kind: 'unavailable', error: err };
      throw err;
    }
  }

  /**
   * The answer of the Update `updateId` a closed run took (Temporal's record of it), or null (never sent, refused, or
   * no answer within {@link TEMPORAL_CALL_TIMEOUT_MS}). Never throws.
   */
  private async previousAnswer<T>(handle: WorkflowHandle, updateId: string): Promise<T | null> {
    try {
      return await this.client.withDeadline(Date.now() + TEMPORAL_CALL_TIMEOUT_MS, () =>
        handle.getUpdateHandle<T>(updateId).result(),
      );
    } catch (err) {
      this.logger.debug({ err, workflowId: handle.workflowId, updateId }, 'no record of the Update');
      return null;
    }
  }

  /** Starts the return's workflow when its row says it never was; true when it started it. Never throws. */
  private async startIfNeverStarted(returnId: string): Promise<boolean> {
    try {
      const stored = await this.read(returnId);
      if (!stored || stored.workflow_started_at !== null) return false;
      return await this.start(returnId);
    } catch (err) {
      this.logger.warn({ err, returnId }, 'could not start the workflow of the return');
      return false;
    }
  }

  /** The return's order, RMA number, reason and lines, or null. */
  private async read(returnId: string): Promise<ReturnToStart | null> {
    const [row] = await this.prisma.$queryRaw<ReturnToStart[]>`
      SELECT r.order_id, r.rma_number, r.reason_code, r.workflow_started_at,
             (SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity) ORDER BY l.sku)
              FROM return_lines l WHERE l.return_id = r.id) AS lines
      FROM returns r WHERE r.id = ${returnId}::uuid`;
    return row ?? null;
  }
}

/**
 * The Temporal UI summary of a return: `Return RMA-000001 of order <id>: 2 × SKU-A, 1 × SKU-B`, cut to
 * {@link MAX_SUMMARY_LENGTH} characters.
 */
export function returnSummary(
  rmaNumber: string,
  orderId: string,
  lines: ReadonlyArray<{ sku: string; quantity: number }>,
): string {
  const summary = `Return ${rmaNumber} of order ${orderId}: ${lines.map((l) => `${l.quantity} × ${l.sku}`).join(', ')}`;
  return summary.length > MAX_SUMMARY_LENGTH ? `${summary.slice(0, MAX_SUMMARY_LENGTH - 1)}…` : summary;
}
