/**
 * `GET /metrics`: the API's Prometheus metrics in the text exposition format (see {@link ApiMetrics} and README,
 * "Monitoring"). Not logged per request (scrapes would drown the log). Public (no API key), like before
 * authentication existed: restrict it at the network or give it a key (see the README, "Authentication").
 */
import { Controller, Get, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../auth/auth.decorators.js';
import { ApiMetrics } from './api-metrics.js';

@ApiTags('metrics')
@Public()
@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: ApiMetrics) {}

  /** Renders every metric; the order gauges query PostgreSQL (one grouped query, cached for 1 s). */
  @Get()
  @ApiOperation({
    operationId: 'getMetrics',
    summary: 'Prometheus metrics',
    description:
      'Orders accepted, idempotency outcomes, orders by status and the oldest open order per status, plus Node.js ' +
      'process metrics. The worker serves its own (activities, side-effect claims, `temporal_*`) on ' +
      '`WORKER_METRICS_PORT`.',
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({
    description: 'Prometheus text exposition format 0.0.4',
    content: { 'text/plain': { schema: { type: 'string' } } },
  })
  async scrape(@Res() res: Response): Promise<void> {
    const { contentType, body } = await this.metrics.render();
    res.setHeader('Content-Type', contentType);
    res.send(body);
  }
}
