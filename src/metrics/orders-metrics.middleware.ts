/**
 * Counts what `POST /orders` answered, for `order_fulfilment_orders_accepted_total{client}` and
 * `order_fulfilment_idempotency_outcomes_total{outcome}`, from the response's documented contract (README, "The
 * API"), so neither the orders nor the idempotency code knows about metrics:
 * - 202 without `Idempotent-Replayed`: a new order (`accepted`), and with an `Idempotency-Key` the outcome `new`;
 * - 202 with `Idempotent-Replayed: true`: `replayed` (no new order);
 * - 409 with an `Idempotency-Key`: `in_use` (`idempotency-key-in-use`, the only 409 of this route);
 * - 422 with an `Idempotency-Key`: `reused` (`idempotency-key-reused`, the only 422 of this route).
 * Other answers (400 validation, 415, 5xx) count nothing. Counted when the response has been sent (`finish`).
 */
import { Injectable, type NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from '../idempotency/idempotency-key.js';
import { requestClient } from '../common/request-client.js';
import { ApiMetrics } from './api-metrics.js';
import { IdempotencyOutcome } from './metric-definitions.js';

@Injectable()
export class OrdersMetricsMiddleware implements NestMiddleware {
  constructor(private readonly metrics: ApiMetrics) {}

  use(req: Request, res: Response, next: NextFunction): void {
    const withKey = req.headers[IDEMPOTENCY_KEY_HEADER.toLowerCase()] !== undefined;
    res.once('finish', () => {
      const replayed = res.getHeader(IDEMPOTENT_REPLAYED_HEADER) === 'true';
      if (res.statusCode === 202) {
        if (replayed) {
          this.metrics.idempotencyOutcome(IdempotencyOutcome.Replayed);
          return;
        }
        this.metrics.orderAccepted(requestClient(req));
        if (withKey) this.metrics.idempotencyOutcome(IdempotencyOutcome.New);
      } else if (withKey && res.statusCode === 409) {
        this.metrics.idempotencyOutcome(IdempotencyOutcome.InUse);
      } else if (withKey && res.statusCode === 422) {
        this.metrics.idempotencyOutcome(IdempotencyOutcome.Reused);
      }
    });
    next();
  }
}
