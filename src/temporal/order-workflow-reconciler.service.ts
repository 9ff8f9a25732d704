/**
 * The reconciler: "nothing accepted is lost". Every `RECONCILE_INTERVAL_MS` ms (0 disables it) it looks for
 * committed orders whose workflow was never started (`workflow_started_at IS NULL`, e.g. Temporal was down
 * at POST time), older than {@link RECONCILE_MIN_AGE_MS} ms so it does not race the POST handler, at most
 * {@link RECONCILE_BATCH_SIZE} per pass, and starts them through {@link OrderWorkflowStarter} (idempotent).
 *
 * A failed start is logged and the pass goes on with the next order; when Temporal is unreachable the pass
 * ends early (the others would fail the same way) and the next pass tries again. Passes never overlap; the
 * loop stops, and the running pass is awaited, when the application shuts down.
 *
 * After each pass the loop also purges `Idempotency-Key` records past `IDEMPOTENCY_RETENTION_MS`
 * ({@link IdempotencyService.purgeExpired}) when the IdempotencyModule is loaded (the API; not the worker).
 */
import {
  Inject,
  Injectable,
  Logger,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
  Optional,
} from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { IdempotencyService } from '../idempotency/idempotency.service.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import { OrderWorkflowStarter } from './order-workflow-starter.service.js';
import { isTemporalUnreachable } from './temporal-errors.js';
import { RECONCILE_BATCH_SIZE, RECONCILE_MIN_AGE_MS } from './temporal.constants.js';

/** What one reconciliation pass did. */
export interface ReconcileResult {
  /** Orders found without a started workflow. */
  found: number;
  /** Workflows started (or found already started) and recorded. */
  started: number;
  /** Orders whose start failed (the rest of a pass cut short by an unreachable Temporal is not counted). */
  failed: number;
}

@Injectable()
export class OrderWorkflowReconciler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(OrderWorkflowReconciler.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> | undefined;
  private stopped = false;

  constructor(
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly starter: OrderWorkflowStarter,
    @Optional() private readonly idempotency?: IdempotencyService,
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
    const orders = await this.prisma.order.findMany({
      where: { workflowStartedAt: null, createdAt: { lt: new Date(now.getTime() - RECONCILE_MIN_AGE_MS) } },
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
   * Deletes idempotency records past their retention (also run by the periodic loop after each pass).
   * Never throws: a failure is logged and the next pass tries again.
   * @returns the number of deleted records (0 without the IdempotencyModule).
   */
  async purgeExpiredIdempotencyRecords(now: Date = new Date()): Promise<number> {
    if (!this.idempotency || this.stopped) return 0;
    try {
      const deleted = await this.idempotency.purgeExpired(now);
      if (deleted > 0) this.logger.log({ deleted }, 'Purged expired idempotency records');
      return deleted;
    } catch (err) {
      this.logger.error({ err }, 'Purging expired idempotency records failed');
      return 0;
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.reconcileOnce()
        .catch((err: unknown) => this.logger.error({ err }, 'Reconciliation pass failed'))
        .then(() => this.purgeExpiredIdempotencyRecords())
        .finally(() => {
          this.running = undefined;
          this.schedule();
        });
    }, this.config.RECONCILE_INTERVAL_MS);
    this.timer.unref();
  }
}
