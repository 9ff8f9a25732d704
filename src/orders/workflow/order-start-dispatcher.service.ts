/**
 * The start dispatcher: "accepted means started, soon, whatever Temporal's state at POST time".
 *
 * `POST /orders` commits the order together with its row in `workflow_start_intents` and answers 202 without
 * calling Temporal; it then {@link OrderStartDispatcher.notify | notifies} this dispatcher, which starts the
 * workflow right after the commit:
 * 1. Claim: up to {@link DISPATCH_BATCH_SIZE} intents whose `available_at` has come (open orders only), in one
 *    statement with `FOR UPDATE SKIP LOCKED`, moving each `available_at` one lease ({@link DISPATCH_LEASE_MS})
 *    ahead. Several API processes never take the same intent at once, and an intent whose process died is taken
 *    again after the lease.
 * 2. Start each through {@link OrderWorkflowStarter.start} (workflow id `order-<orderId>`, conflict policy
 *    USE_EXISTING: at most one workflow per order however often it is started), {@link START_CONCURRENCY} at a
 *    time; the starter deletes the intent with setting `orders.workflow_started_at`, in one transaction.
 * 3. A start that fails because Temporal is unreachable releases the claims (`available_at = now()`) and switches
 *    the dispatcher to "Temporal down": it stops trying starts and probes Temporal (`GetSystemInfo`) every
 *    {@link PROBE_MIN_INTERVAL_MS}..{@link PROBE_MAX_INTERVAL_MS}; the first answer resumes the dispatch at once, so
 *    waiting orders start within about a second of Temporal's return, not at the next reconciler interval.
 *    Any other failure (Temporal refused the start) is recorded in `last_error` and retried with exponential
 *    backoff (1 s doubling, at most {@link MAX_BACKOFF_MS}).
 * Besides the notifications it passes every {@link DISPATCH_POLL_INTERVAL_MS}, for intents other processes left
 * (their lease expired) or whose backoff ended. The reconciler (RECONCILE_INTERVAL_MS) stays as the safety net.
 */
import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import type { Client } from '@temporalio/client';
import { TERMINAL_ORDER_STATUSES } from '../../../workflows/order-fulfilment.contract.js';
import type { PgSqlClient } from '../../database/sql-client.js';
import { SQL } from '../../prisma/prisma.module.js';
import { OrderWorkflowStarter } from './order-workflow-starter.service.js';
import { isTemporalUnavailable } from '../../temporal/temporal-errors.js';
import { TEMPORAL_CLIENT } from '../../temporal/temporal.constants.js';

/** Intents claimed per statement. */
export const DISPATCH_BATCH_SIZE = 50;
/** Workflow starts in flight at once per process. */
export const START_CONCURRENCY = 8;
/** How long a claim keeps other dispatchers away from an intent, ms (well above one start's 5 s deadline). */
export const DISPATCH_LEASE_MS = 30_000;
/** Period of the dispatcher's own pass, ms (intents of other processes, ended backoffs). */
export const DISPATCH_POLL_INTERVAL_MS = 5_000;
/** First and longest wait between two probes of an unreachable Temporal, ms. */
export const PROBE_MIN_INTERVAL_MS = 200;
export const PROBE_MAX_INTERVAL_MS = 1_000;
/** Deadline of one probe, ms. */
export const PROBE_TIMEOUT_MS = 1_000;
/** Longest backoff after a start Temporal refused, ms. */
export const MAX_BACKOFF_MS = 60_000;

/** What one {@link OrderStartDispatcher.dispatchOnce} pass did. */
export interface DispatchResult {
  /** Intents claimed. */
  claimed: number;
  /** Workflows started (or found started) and recorded. */
  started: number;
  /** Starts Temporal refused (backed off). */
  failed: number;
  /** Claims released because Temporal was unreachable. */
  deferred: number;
}

interface ClaimedIntent {
  orderId: string;
  attempts: number;
  /** Read with the claim, for the CustomerId search attribute (the starter need not read the order again). */
  customerEmail: string;
  /** The order's plan, passed in the workflow's input. */
  plan: unknown;
}

@Injectable()
export class OrderStartDispatcher implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(OrderStartDispatcher.name);
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private down = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private probeTimer: NodeJS.Timeout | undefined;

  constructor(
    @Inject(SQL) private readonly sql: PgSqlClient,
    @Inject(TEMPORAL_CLIENT) private readonly client: Client,
    private readonly starter: OrderWorkflowStarter,
  ) {}

  /** Starts the periodic pass and runs a first one (intents left from before this process). */
  onApplicationBootstrap(): void {
    this.pollTimer = setInterval(() => this.notify(), DISPATCH_POLL_INTERVAL_MS);
    this.pollTimer.unref();
    this.notify();
  }

  /** Stops dispatching and waits for the running pass, before the Prisma and Temporal clients close. */
  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearInterval(this.pollTimer);
    clearTimeout(this.probeTimer);
    await this.running;
  }

  /** True while the dispatcher found Temporal unreachable and waits for it to answer a probe. */
  get temporalDown(): boolean {
    return this.down;
  }

  /**
   * Asks for a pass as soon as possible (after the running one); returns at once, never throws. While Temporal is
   * down the probe resumes the dispatch instead.
   */
  notify(): void {
    if (this.stopped || this.down) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
  }

  /** Resolves when no pass is running (tests). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        const result = await this.dispatchOnce();
        if (result.claimed === DISPATCH_BATCH_SIZE && result.deferred === 0) this.again = true;
      } catch (err) {
        this.logger.error({ err }, 'Start dispatch pass failed');
        return;
      }
    } while (this.again && !this.stopped && !this.down);
  }

  /**
   * One pass now: claims the due intents and starts their workflows (see the file's docstring).
   * @throws the database's error when the claim fails (a failed start is never thrown).
   */
  async dispatchOnce(): Promise<DispatchResult> {
    const claimed = await this.sql.$queryRaw<ClaimedIntent[]>`
      UPDATE workflow_start_intents AS i
      SET available_at = now() + make_interval(secs => ${DISPATCH_LEASE_MS / 1000}), attempts = i.attempts + 1
      FROM orders AS o
      WHERE o.id = i.order_id AND i.order_id IN (
        SELECT c.order_id FROM workflow_start_intents c JOIN orders o ON o.id = c.order_id
        WHERE c.available_at <= now() AND o.status <> ALL(${[...TERMINAL_ORDER_STATUSES]})
        ORDER BY c.available_at, c.order_id
        LIMIT ${DISPATCH_BATCH_SIZE}
        FOR UPDATE OF c SKIP LOCKED
      )
      RETURNING i.order_id::text AS "orderId", i.attempts, o.customer_email AS "customerEmail", o.plan`;
    const result: DispatchResult = { claimed: claimed.length, started: 0, failed: 0, deferred: 0 };
    const deferred: string[] = [];
    let next = 0;
    const runOne = async (): Promise<void> => {
      for (let intent = claimed[next++]; intent; intent = claimed[next++]) {
        if (this.down || this.stopped) {
          deferred.push(intent.orderId);
          continue;
        }
        try {
          await this.starter.start(intent.orderId, { customerEmail: intent.customerEmail, plan: intent.plan });
          result.started++;
        } catch (err) {
          if (isTemporalUnavailable(err)) {
            deferred.push(intent.orderId);
            this.markDown(err);
          } else {
            result.failed++;
            await this.backOff(intent, err);
          }
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(START_CONCURRENCY, claimed.length) }, runOne));
    if (deferred.length > 0) {
      result.deferred = deferred.length;
      // Released, not backed off: they go as soon as Temporal answers again.
      await this.sql.$executeRaw`
        UPDATE workflow_start_intents SET available_at = now(), last_error = 'Temporal unavailable'
        WHERE order_id = ANY(${deferred}::uuid[])`;
    }
    if (result.started + result.failed > 0) this.logger.debug(result, 'Start dispatch pass');
    return result;
  }

  /** Records a refused start and moves the intent by 1 s × 2^(attempts-1), at most {@link MAX_BACKOFF_MS}. */
  private async backOff(intent: ClaimedIntent, err: unknown): Promise<void> {
    const delayMs = Math.min(MAX_BACKOFF_MS, 1000 * 2 ** Math.max(0, intent.attempts - 1));
    const message = (err instanceof Error ? `${err.name}: ${err.message}` : String(err)).slice(0, 1000);
    this.logger.error({ err, orderId: intent.orderId, attempts: intent.attempts, delayMs }, 'Workflow start refused');
    await this.sql.$executeRaw`
      UPDATE workflow_start_intents
      SET available_at = now() + make_interval(secs => ${delayMs / 1000}), last_error = ${message}
      WHERE order_id = ${intent.orderId}::uuid`;
  }

  /** Switches to "Temporal down" and starts probing (once). */
  private markDown(err: unknown): void {
    if (this.down || this.stopped) return;
    this.down = true;
    this.logger.warn({ err }, 'Temporal unreachable: workflow starts wait until it answers');
    this.probe(PROBE_MIN_INTERVAL_MS);
  }

  private probe(delayMs: number): void {
    this.probeTimer = setTimeout(() => {
      void this.client
        .withDeadline(Date.now() + PROBE_TIMEOUT_MS, () => this.client.workflowService.getSystemInfo({}))
        .then(
          () => true,
          () => false,
        )
        .then((up) => {
          if (this.stopped) return;
          if (!up) return this.probe(Math.min(delayMs * 2, PROBE_MAX_INTERVAL_MS));
          this.down = false;
          this.logger.log('Temporal answers again: resuming workflow starts');
          this.notify();
        });
    }, delayMs);
    this.probeTimer.unref();
  }
}
