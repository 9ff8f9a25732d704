/**
 * `GET /health`: readiness of the API's dependencies, with @nestjs/terminus.
 * - `database`: `SELECT 1` through Prisma.
 * - `temporal`: `GetSystemInfo` on the Temporal frontend (namespace-independent, cheap).
 * 200 `{ status: 'ok', info, error, details }` when all are up; 503 problem+json (`service-unavailable`) with
 * a `checks` extension (the per-dependency details) otherwise.
 */
import { Controller, Get, Inject, ServiceUnavailableException } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { HealthCheck, type HealthCheckResult, HealthCheckService, HealthIndicatorService } from '@nestjs/terminus';
import type { Client } from '@temporalio/client';
import { ApiProblemResponses } from '../common/api-problem-responses.decorator.js';
import { ProblemException, ProblemType } from '../common/problem-details.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import { TEMPORAL_CLIENT } from '../temporal/temporal.constants.js';

/** Deadline of each dependency check, ms. */
export const HEALTH_CHECK_TIMEOUT_MS = 3_000;

@ApiTags('health')
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
  @ApiOperation({ summary: 'Readiness of the database and Temporal' })
  @ApiOkResponse({ description: 'All dependencies are up' })
  @ApiProblemResponses({ 503: 'A dependency is down; see `checks`' })
  async check(): Promise<HealthCheckResult> {
    try {
      return await this.health.check([
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
    } catch (err) {
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
