/**
 * The API's request metrics (the RED method: rate, errors, duration), counted when each response has been sent:
 * `order_fulfilment_http_requests_total` and `order_fulfilment_http_request_duration_seconds`, by method, route
 * template and status. The route label is the template Express matched (`/orders/:id`), never the raw path: no
 * ids, no keys, no unbounded label values. A request no route matched is `unmatched` (a 404) or, when a file was
 * served (the web page, the OpenAPI UI), `static`. Registered for every path by {@link MetricsModule}.
 */
import { Injectable, type NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { ApiMetrics } from './api-metrics.js';
import { RouteLabel } from './metric-definitions.js';

/**
 * The route label of a finished request (see the module comment). A wildcard template (`{/*splat}`, `*`) is where
 * Nest mounted its middleware for every path, not a route of the API: such a request is `unmatched` or `static`.
 */
export function routeLabel(req: Pick<Request, 'route' | 'baseUrl'>, status: number): string {
  const template = (req.route as { path?: unknown } | undefined)?.path;
  if (typeof template === 'string' && !template.includes('*')) return `${req.baseUrl ?? ''}${template}` || '/';
  return status === 404 ? RouteLabel.Unmatched : RouteLabel.Static;
}

@Injectable()
export class HttpMetricsMiddleware implements NestMiddleware {
  constructor(private readonly metrics: ApiMetrics) {}

  use(req: Request, res: Response, next: NextFunction): void {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      this.metrics.httpRequest(req.method, routeLabel(req, res.statusCode), res.statusCode, seconds);
    });
    next();
  }
}
