/**
 * The safety net behind `POST /orders/:id/returns`: a return is stored first and its workflow started after the
 * commit; when that start fails (Temporal down, the process died in between), the return stays accepted with
 * `workflow_started_at` null. This sweeper starts the workflows of such returns older than
 * {@link RETURN_SWEEP_MIN_AGE_MS} (so it never races the request that is about to start it), once at startup and then
 * every {@link RETURN_SWEEP_INTERVAL_MS}. Starts are idempotent (`return-<id>`, USE_EXISTING / REJECT_DUPLICATE), so
 * several API instances may sweep at once.
 */
import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import { isTemporalUnavailable } from '../temporal/temporal-errors.js';
import { ReturnWorkflows } from './return-workflows.service.js';

/** How often the sweeper looks for returns without a workflow, ms. */
export const RETURN_SWEEP_INTERVAL_MS = 30_000;

/** The sweeper starts only returns stored at least this long ago, ms. */
export const RETURN_SWEEP_MIN_AGE_MS = 10_000;

/** Most returns one pass starts. */
export const RETURN_SWEEP_BATCH_SIZE = 100;

@Injectable()
export class ReturnWorkflowSweeper implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ReturnWorkflowSweeper.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;
  private stopped = false;

  constructor(
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    private readonly workflows: ReturnWorkflows,
  ) {}

  /** Runs one pass now (in the background) and schedules the others; the timer does not keep the process alive. */
  onApplicationBootstrap(): void {
    this.tick();
    this.timer = setInterval(() => this.tick(), RETURN_SWEEP_INTERVAL_MS);
    this.timer.unref();
  }

  /** Stops the timer and waits for a running pass, before the Prisma and Temporal clients close. */
  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.running;
  }

  /**
   * One pass: starts the workflow of each return that has none yet and is older than {@link RETURN_SWEEP_MIN_AGE_MS},
   * oldest first, at most {@link RETURN_SWEEP_BATCH_SIZE}. Stops at the first start that finds Temporal unavailable.
   * @returns how many workflows it started (or found started). Never throws.
   */
  async sweep(): Promise<number> {
    let started = 0;
    try {
      const pending = await this.prisma.$queryRaw<Array<{ id: string }>>`
        SELECT id FROM returns
        WHERE workflow_started_at IS NULL AND created_at < now() - make_interval(secs => ${RETURN_SWEEP_MIN_AGE_MS / 1000}::double precision)
        ORDER BY created_at LIMIT ${RETURN_SWEEP_BATCH_SIZE}::int`;
      for (const { id } of pending) {
        if (this.stopped) break;
        try {
          if (await this.workflows.start(id)) started++;
        } catch (err) {
          this.logger.warn({ err, returnId: id }, 'the sweeper could not start the return workflow');
          if (isTemporalUnavailable(err)) break;
        }
      }
      if (started > 0) this.logger.log({ started }, 'started the workflows of accepted returns');
    } catch (err) {
      this.logger.warn({ err }, 'the return sweeper pass failed');
    }
    return started;
  }

  /** Starts a pass unless one runs or the app stops. */
  private tick(): void {
    if (this.stopped || this.running) return;
    this.running = this.sweep().finally(() => {
      this.running = undefined;
    });
  }
}
