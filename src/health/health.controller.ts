/**
 * `GET /health`: readiness of the API's dependencies, with @nestjs/terminus.
 * - `database`: `SELECT 1` through Prisma.
 * - `temporal`: `GetSystemInfo` on the Temporal frontend (namespace-independent, cheap).
 * 200 `{ status: 'ok', info, error, details }` when all are up; 503 problem+json (`service-unavailable`) with
 * a `checks` extension (the per-dependency details) otherwise.
 * Public (no API key needed, for probes): without a key the answer is only `{ status: 'ok' }` or the 503 without
 * `checks`; the per-dependency details need an `operator` key.
 */
import { Controller, Get, Inject, Req, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, type HealthCheckResult, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { Client } from '@temporalio/client';
import type { Request } from 'express';
import { Public } from '../auth/auth.decorators.js';
import { hasScope, Scope } from '../auth/scopes.js';
import { ApiProblemResponses } from '../common/api-problem-responses.decorator.js';
import { ProblemException, ProblemType } from '../common/problem-details.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import { TEMPORAL_CLIENT } from '../temporal/temporal.constants.js';

/** Deadline of each dependency check, ms. */
export const HEALTH_CHECK_TIMEOUT_MS = 3_000;

@ApiTags('health')
@Public()
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly indicators: HealthIndicatorService,
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    @Inject(TEMPORAL_CLIENT) private readonly temporal: Client,
  ) {}

  /**
   * @throws ProblemException 503 when a dependency is down.
   */
  @Get()
  @HealthCheck({ swaggerDocumentation: false })
  @ApiOperation({
    summary: 'Readiness of the database and Temporal',
    description: 'No API key needed; the per-dependency details (`info`, `details`, `checks`) need an `operator` key.',
  })
  @ApiOkResponse({ description: 'All dependencies are up' })
  @ApiProblemResponses({ 503: 'A dependency is down; see `checks` (operator keys)' })
  async check(@Req() req: Request): Promise<HealthCheckResult | { status: 'ok' }> {
    const details = req.apiClient !== undefined && hasScope(req.apiClient.scopes, Scope.Operator);
    try {
      const result = await this.health.check([
        () =>
          this.indicators
            .check('database')
            .attempt(async () => {
              await this.prisma.$queryRaw`SELECT 1`;
            })
            .withTimeout(HEALTH_CHECK_TIMEOUT_MS),
        () =>
          this.indicators
            .check('temporal')
            .attempt(async ({ signal }) => {
              const info = await this.temporal.withAbortSignal(signal, () =>
                this.temporal.workflowService.getSystemInfo({}),
              );
              return { serverVersion: info.serverVersion ?? null };
            })
            .withTimeout(HEALTH_CHECK_TIMEOUT_MS),
      ]);
      return details ? result : { status: 'ok' };
    } catch (err) {
      if (err instanceof ServiceUnavailableException && !details) {
        throw new ProblemException(
          {
            status: 503,
            type: ProblemType.ServiceUnavailable,
            title: 'Service unavailable',
            detail: 'A dependency is unavailable (details with an operator key)',
          },
          { cause: err },
        );
      }
      if (err instanceof ServiceUnavailableException) {
        const body = err.getResponse() as Partial<HealthCheckResult>;
        throw new ProblemException(
          {
            status: 503,
            type: ProblemType.ServiceUnavailable,
            title: 'Service unavailable',
            detail: `Unhealthy: ${Object.keys(body.error ?? {}).join(', ') || 'unknown'}`,
            extensions: { checks: body.details ?? {} },
          },
          { cause: err },
        );
      }
      throw err;
    }
  }
}
