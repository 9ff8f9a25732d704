/**
 * `GET /health`: readiness of the API's dependencies, fast and generic.
 * - `database`: `SELECT 1` through Prisma.
 * - `temporal`: `GetSystemInfo` on the Temporal frontend (namespace-independent, cheap).
 * Both run in parallel, each bounded by {@link HEALTH_CHECK_TIMEOUT_MS}, so the answer comes within about half a
 * second whatever the dependencies do (a stopped Temporal used to cost the 3 s timeout).
 *
 * The public body says only which dependency is up or down: 200 `{ status: 'ok', checks: { database: 'up',
 * temporal: 'up' } }`, or 503 problem+json (`service-unavailable`) with the same `checks`. The reason a check
 * failed (driver and gRPC messages, hosts, database names) is logged, and answered only to an `operator` key, as
 * the `details` extension/member (`{ database: { state, durationMs, error? }, temporal: ... }`).
 * Public (no API key needed, for probes).
 */
import { Controller, Get, Inject, Logger, Req } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { Client } from '@temporalio/client';
import type { Request } from 'express';
import { z } from 'zod';
import { Public } from '../auth/auth.decorators.js';
import { hasScope, Scope } from '../auth/scopes.js';
import { ApiProblems } from '../common/api-problem-responses.decorator.js';
import { ProblemException, ProblemType, ProblemTypes } from '../common/problem-details.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import { TEMPORAL_CLIENT } from '../temporal/temporal.constants.js';

/** Deadline of each dependency check, ms. */
export const HEALTH_CHECK_TIMEOUT_MS = 500;

/** The dependencies `/health` checks. */
export type Dependency = 'database' | 'temporal';

/** State of one dependency as the public body shows it. */
export type DependencyState = 'up' | 'down';

/** One check's outcome, with the internal detail (for logs and operators only). */
export interface DependencyCheck {
  state: DependencyState;
  /** How long the check took, ms. */
  durationMs: number;
  /** Why it is down (the driver's or client's message, or the timeout); absent when up. Internal. */
  error?: string;
}

/** The public 200 body; `details` only for operator keys. */
export interface HealthView {
  status: 'ok';
  checks: Record<Dependency, DependencyState>;
  details?: Record<Dependency, DependencyCheck>;
}

const dependencyState = z.enum(['up', 'down']);

/** The 200 body as the OpenAPI document describes it ({@link HealthView}). */
export const healthViewSchema = z
  .object({
    status: z.literal('ok'),
    checks: z.object({ database: dependencyState, temporal: dependencyState }),
    details: z
      .object(
        Object.fromEntries(
          (['database', 'temporal'] as const).map((d) => [
            d,
            z.object({
              state: dependencyState,
              durationMs: z.number().meta({ description: 'How long the check took, ms' }),
              error: z.string().optional().meta({ description: 'Why it is down' }),
            }),
          ]),
        ),
      )
      .optional()
      .meta({ description: 'Only for an operator key: each check with its duration (and error)' }),
  })
  .meta({ id: 'Health' });

/** Runs `check` with a deadline; never throws. */
async function bounded(check: (signal: AbortSignal) => Promise<unknown>, timeoutMs: number): Promise<DependencyCheck> {
  const started = Date.now();
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    await Promise.race([check(controller.signal), timeout]);
    return { state: 'up', durationMs: Date.now() - started };
  } catch (err) {
    return { state: 'down', durationMs: Date.now() - started, error: err instanceof Error ? err.message : String(err) };
  } finally {
    clearTimeout(timer);
  }
}

@ApiTags('health')
@Public()
@Controller('health')
export class HealthController {
  private readonly logger = new Logger(HealthController.name);

  constructor(
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    @Inject(TEMPORAL_CLIENT) private readonly temporal: Client,
  ) {}

  /**
   * @throws ProblemException 503 `service-unavailable` (extension `checks`) when a dependency is down.
   */
  @Get()
  @ApiOperation({
    operationId: 'checkHealth',
    summary: 'Readiness of the database and Temporal',
    description:
      `Each dependency is checked in parallel within ${HEALTH_CHECK_TIMEOUT_MS} ms. The body names each dependency ` +
      'as `up` or `down`; why a check failed (`details`) is answered only to an `operator` key. No API key needed.',
  })
  @ApiOkResponse({ description: 'All dependencies are up', standardSchema: healthViewSchema })
  @ApiProblems({
    type: ProblemTypes.ServiceUnavailable,
    description: 'A dependency is down; `checks` says which (`up`/`down`)',
  })
  async check(@Req() req: Request): Promise<HealthView> {
    const operator = req.apiClient !== undefined && hasScope(req.apiClient.scopes, Scope.Operator);
    const results = await this.checkDependencies();
    const checks = { database: results.database.state, temporal: results.temporal.state };
    const down = (Object.keys(results) as Dependency[]).filter((d) => results[d].state === 'down');
    if (down.length === 0) return operator ? { status: 'ok', checks, details: results } : { status: 'ok', checks };
    this.logger.warn({ checks: results }, `Unhealthy: ${down.join(', ')}`);
    throw new ProblemException({
      status: 503,
      type: ProblemType.ServiceUnavailable,
      title: 'Service unavailable',
      detail: `Unavailable: ${down.join(', ')}`,
      extensions: operator ? { checks, details: results } : { checks },
    });
  }

  /** Runs every check in parallel, each within {@link HEALTH_CHECK_TIMEOUT_MS}; the result holds internal detail. */
  async checkDependencies(): Promise<Record<Dependency, DependencyCheck>> {
    const [database, temporal] = await Promise.all([
      bounded(() => this.prisma.$queryRaw`SELECT 1`, HEALTH_CHECK_TIMEOUT_MS),
      bounded(
        (signal) => this.temporal.withAbortSignal(signal, () => this.temporal.workflowService.getSystemInfo({})),
        HEALTH_CHECK_TIMEOUT_MS,
      ),
    ]);
    return { database, temporal };
  }
}
