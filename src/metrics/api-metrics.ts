/**
 * The API's Prometheus metrics (prom-client), served by `GET /metrics`:
 * - `order_fulfilment_orders_accepted_total{client}` and `order_fulfilment_idempotency_outcomes_total{outcome}`,
 *   counted from the responses of `POST /orders` ({@link OrdersMetricsMiddleware});
 * - `order_fulfilment_orders{status}`, `order_fulfilment_oldest_open_order_age_seconds{status}` and
 *   `order_fulfilment_longest_in_status_seconds{status}`, read from
 *   PostgreSQL when Prometheus scrapes (one grouped query, shared by the three gauges);
 * - `order_fulfilment_compensation_failed_orders{compensation}`: the orders that wait because a compensation failed
 *   for good, read from PostgreSQL when Prometheus scrapes;
 * - `order_fulfilment_payments{outcome,decline_code}` and `order_fulfilment_payment_authorization_seconds_to_deadline`:
 *   card payments by outcome and decline code, and the soonest capture deadline of a held authorization, read from
 *   PostgreSQL when Prometheus scrapes;
 * - `order_fulfilment_returns{status}` and `order_fulfilment_longest_waiting_return_seconds{status}`: returns by
 *   status and how long the one longest in an open status has waited, read from PostgreSQL when Prometheus scrapes;
 * - prom-client's default Node.js process metrics (`process_*`, `nodejs_*`).
 * Definitions (names, help, labels): src/metrics/metric-definitions.ts.
 *
 * Each app instance has its own Registry (not prom-client's global one), so several apps in one process (tests)
 * never collide.
 */
import { Inject, Injectable, Logger } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { COMPENSATION_FAILED, isTerminalStatus, OrderStatus } from '../../workflows/order-fulfilment.contract.js';
import { COMPENSATION_NAMES, ORDER_STATUSES } from '../orders/order-steps.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import { IdempotencyOutcome, METRICS } from './metric-definitions.js';
import { FINAL_RETURN_STATUSES, ReturnStatus } from '../../workflows/order-return.contract.js';

/** How long one database snapshot serves scrapes, ms: both gauges of one scrape read the same query. */
export const ORDER_SNAPSHOT_TTL_MS = 1_000;

/** One row of the orders snapshot. */
export interface OrderStatusSnapshot {
  status: string;
  /** Orders in this status. */
  count: number;
  /** now() - the oldest created_at among them, seconds. */
  oldestAgeSeconds: number;
  /** now() - the oldest updated_at among them (the last status write of the order longest in it), seconds. */
  longestInStatusSeconds: number;
}

/** Every status an order can have (from the step registry), so every series exists from the start. */
const ALL_STATUSES: readonly string[] = ORDER_STATUSES;
const OPEN_STATUSES = ALL_STATUSES.filter((s) => !isTerminalStatus(s));
/** The outcomes of a card payment (`payments.status`): every one present from the start. */
const PAYMENT_OUTCOMES = ['authorized', 'captured', 'voided', 'declined'] as const;
/** Every status of a return, and the open ones (a return in them still waits for something). */
const RETURN_STATUSES: readonly string[] = Object.values(ReturnStatus);
const OPEN_RETURN_STATUSES = RETURN_STATUSES.filter((s) => !(FINAL_RETURN_STATUSES as readonly string[]).includes(s));

@Injectable()
export class ApiMetrics {
  /** The registry `GET /metrics` renders. */
  readonly registry = new Registry();
  private readonly logger = new Logger(ApiMetrics.name);
  private readonly ordersAccepted: Counter<'client'>;
  private readonly idempotencyOutcomes: Counter<'outcome'>;
  private readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  private readonly httpDuration: Histogram<'method' | 'route' | 'status'>;
  private snapshot?: { at: number; rows: Promise<OrderStatusSnapshot[]> };

  constructor(@Inject(PRISMA) private readonly prisma: PrismaClient) {
    collectDefaultMetrics({ register: this.registry });
    this.ordersAccepted = new Counter({
      name: METRICS.ordersAccepted.name,
      help: METRICS.ordersAccepted.help,
      labelNames: METRICS.ordersAccepted.labels,
      registers: [this.registry],
    });
    this.idempotencyOutcomes = new Counter({
      name: METRICS.idempotencyOutcomes.name,
      help: METRICS.idempotencyOutcomes.help,
      labelNames: METRICS.idempotencyOutcomes.labels,
      registers: [this.registry],
    });
    // Every outcome present from the start, at 0, so rate() and absent() see a series.
    for (const outcome of Object.values(IdempotencyOutcome)) this.idempotencyOutcomes.inc({ outcome }, 0);
    this.httpRequests = new Counter({
      name: METRICS.httpRequests.name,
      help: METRICS.httpRequests.help,
      labelNames: METRICS.httpRequests.labels,
      registers: [this.registry],
    });
    this.httpDuration = new Histogram({
      name: METRICS.httpRequestDuration.name,
      help: METRICS.httpRequestDuration.help,
      labelNames: METRICS.httpRequestDuration.labels,
      buckets: [...METRICS.httpRequestDuration.buckets],
      registers: [this.registry],
    });
    const snapshot = () => this.orderSnapshot();
    new Gauge({
      name: METRICS.orders.name,
      help: METRICS.orders.help,
      labelNames: METRICS.orders.labels,
      registers: [this.registry],
      async collect() {
        const rows = await snapshot();
        this.reset();
        if (!rows) return;
        const counts = new Map(rows.map((r) => [r.status, r.count]));
        for (const status of new Set([...ALL_STATUSES, ...counts.keys()])) {
          this.set({ status }, counts.get(status) ?? 0);
        }
      },
    });
    new Gauge({
      name: METRICS.oldestOpenOrderAge.name,
      help: METRICS.oldestOpenOrderAge.help,
      labelNames: METRICS.oldestOpenOrderAge.labels,
      registers: [this.registry],
      async collect() {
        const rows = await snapshot();
        this.reset();
        if (!rows) return;
        const ages = new Map(rows.map((r) => [r.status, r.oldestAgeSeconds]));
        for (const status of OPEN_STATUSES) this.set({ status }, ages.get(status) ?? 0);
      },
    });
    const compensationFailures = () => this.compensationFailures();
    new Gauge({
      name: METRICS.compensationFailedOrders.name,
      help: METRICS.compensationFailedOrders.help,
      labelNames: METRICS.compensationFailedOrders.labels,
      registers: [this.registry],
      async collect() {
        const counts = await compensationFailures();
        this.reset();
        if (!counts) return;
        for (const compensation of new Set([...COMPENSATION_NAMES, ...counts.keys()])) {
          this.set({ compensation }, counts.get(compensation) ?? 0);
        }
      },
    });
    const paymentSnapshot = () => this.paymentSnapshot();
    new Gauge({
      name: METRICS.payments.name,
      help: METRICS.payments.help,
      labelNames: METRICS.payments.labels,
      registers: [this.registry],
      async collect() {
        const snap = await paymentSnapshot();
        this.reset();
        if (!snap) return;
        for (const outcome of PAYMENT_OUTCOMES) this.set({ outcome, decline_code: 'none' }, 0);
        for (const row of snap.rows) this.set({ outcome: row.outcome, decline_code: row.declineCode }, row.count);
      },
    });
    new Gauge({
      name: METRICS.paymentCaptureDeadline.name,
      help: METRICS.paymentCaptureDeadline.help,
      registers: [this.registry],
      async collect() {
        const snap = await paymentSnapshot();
        this.reset();
        if (snap?.secondsToDeadline != null) this.set(snap.secondsToDeadline);
      },
    });
    const returnSnapshot = () => this.returnSnapshot();
    new Gauge({
      name: METRICS.returns.name,
      help: METRICS.returns.help,
      labelNames: METRICS.returns.labels,
      registers: [this.registry],
      async collect() {
        const rows = await returnSnapshot();
        this.reset();
        if (!rows) return;
        const counts = new Map(rows.map((r) => [r.status, r.count]));
        for (const status of RETURN_STATUSES) this.set({ status }, counts.get(status) ?? 0);
      },
    });
    new Gauge({
      name: METRICS.longestWaitingReturn.name,
      help: METRICS.longestWaitingReturn.help,
      labelNames: METRICS.longestWaitingReturn.labels,
      registers: [this.registry],
      async collect() {
        const rows = await returnSnapshot();
        this.reset();
        if (!rows) return;
        const ages = new Map(rows.map((r) => [r.status, r.longestSeconds]));
        for (const status of OPEN_RETURN_STATUSES) this.set({ status }, ages.get(status) ?? 0);
      },
    });
    new Gauge({
      name: METRICS.longestInStatus.name,
      help: METRICS.longestInStatus.help,
      labelNames: METRICS.longestInStatus.labels,
      registers: [this.registry],
      async collect() {
        const rows = await snapshot();
        this.reset();
        if (!rows) return;
        const ages = new Map(rows.map((r) => [r.status, r.longestInStatusSeconds]));
        for (const status of OPEN_STATUSES) this.set({ status }, ages.get(status) ?? 0);
      },
    });
  }

  /** Counts an order accepted by `POST /orders` (a 202 that is not a replay). */
  orderAccepted(client: string): void {
    this.ordersAccepted.inc({ client });
  }

  /**
   * Counts one answered request and its duration.
   * @param route the route template (`/orders/:id`), `unmatched` or `static`: never a raw path.
   * @param seconds from the request's arrival to the end of its answer.
   */
  httpRequest(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    this.httpRequests.inc(labels);
    this.httpDuration.observe(labels, seconds);
  }

  /** Counts what an `Idempotency-Key` on `POST /orders` led to. */
  idempotencyOutcome(outcome: IdempotencyOutcome): void {
    this.idempotencyOutcomes.inc({ outcome });
  }

  /** The Prometheus text exposition of every metric (format 0.0.4). */
  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /**
   * Orders by status with the age of the oldest, from one grouped query; cached for {@link ORDER_SNAPSHOT_TTL_MS}.
   * @returns the rows, or undefined when the database could not be read (logged; the gauges are then left out of
   *   the scrape, so `absent(order_fulfilment_orders)` alerts, and the rest of the scrape still works).
   */
  private async orderSnapshot(): Promise<OrderStatusSnapshot[] | undefined> {
    const now = Date.now();
    if (!this.snapshot || now - this.snapshot.at > ORDER_SNAPSHOT_TTL_MS) {
      this.snapshot = { at: now, rows: this.queryOrderSnapshot() };
    }
    try {
      return await this.snapshot.rows;
    } catch (err) {
      this.snapshot = undefined;
      this.logger.warn({ err }, 'Could not read order counts for /metrics');
      return undefined;
    }
  }

  /**
   * The orders in `attention_required` whose reason says a compensation failed for good
   * (`compensation_failed: <compensation> failed: …`, as the workflow writes it), by compensation.
   * @returns the counts, or undefined when the database could not be read (logged; the gauge is left out).
   */
  private async compensationFailures(): Promise<Map<string, number> | undefined> {
    try {
      const rows = await this.prisma.$queryRaw<Array<{ compensation: string | null; count: number }>>`
        SELECT substring(failure_reason from ${`^${COMPENSATION_FAILED}: (\\w+) failed`}) AS compensation,
               count(*)::int AS count
        FROM orders
        WHERE status = ${OrderStatus.AttentionRequired} AND failure_reason LIKE ${`${COMPENSATION_FAILED}: %`}
        GROUP BY 1`;
      return new Map(rows.map((r) => [r.compensation ?? 'unknown', Number(r.count)]));
    } catch (err) {
      this.logger.warn({ err }, 'Could not read compensation failures for /metrics');
      return undefined;
    }
  }

  /**
   * Returns by status, with how long the one longest in each status has been in it (seconds since its last status
   * write), from one grouped query.
   * @returns undefined when the database could not be read (logged; the gauges are left out of the scrape).
   */
  private async returnSnapshot(): Promise<
    Array<{ status: string; count: number; longestSeconds: number }> | undefined
  > {
    try {
      const rows = await this.prisma.$queryRaw<Array<{ status: string; count: number; seconds: number }>>`
        SELECT status, count(*)::int AS count, EXTRACT(EPOCH FROM (now() - min(updated_at)))::float8 AS seconds
        FROM returns GROUP BY status`;
      return rows.map((r) => ({ status: r.status, count: Number(r.count), longestSeconds: Number(r.seconds) }));
    } catch (err) {
      this.logger.warn({ err }, 'Could not read returns for /metrics');
      return undefined;
    }
  }

  /**
   * Card payments by outcome and decline code, and the seconds to the soonest capture deadline of a held
   * authorization (null when none is held).
   * @returns undefined when the database could not be read (logged; the gauges are left out of the scrape).
   */
  private async paymentSnapshot(): Promise<
    | { rows: Array<{ outcome: string; declineCode: string; count: number }>; secondsToDeadline: number | null }
    | undefined
  > {
    try {
      const rows = await this.prisma.$queryRaw<Array<{ status: string; decline_code: string | null; count: number }>>`
        SELECT status, decline_code, count(*)::int AS count FROM payments GROUP BY status, decline_code`;
      const [deadline] = await this.prisma.$queryRaw<Array<{ seconds: number | null }>>`
        SELECT EXTRACT(EPOCH FROM (min(capture_before) - now()))::float8 AS seconds
        FROM payments WHERE status = 'authorized'`;
      return {
        rows: rows.map((r) => ({
          outcome: r.status,
          // A closed label set: the provider's codes are lower-case words; anything else is `other`.
          declineCode:
            r.decline_code === null ? 'none' : /^[a-z0-9_]{1,64}$/.test(r.decline_code) ? r.decline_code : 'other',
          count: Number(r.count),
        })),
        secondsToDeadline: deadline?.seconds == null ? null : Number(deadline.seconds),
      };
    } catch (err) {
      this.logger.warn({ err }, 'Could not read payments for /metrics');
      return undefined;
    }
  }

  private async queryOrderSnapshot(): Promise<OrderStatusSnapshot[]> {
    const rows = await this.prisma.$queryRaw<
      Array<{ status: string; count: number; oldest_age_seconds: number; longest_in_status_seconds: number }>
    >`
      SELECT status, count(*)::int AS count,
             EXTRACT(EPOCH FROM (now() - min(created_at)))::float8 AS oldest_age_seconds,
             EXTRACT(EPOCH FROM (now() - min(updated_at)))::float8 AS longest_in_status_seconds
      FROM orders GROUP BY status`;
    return rows.map((r) => ({
      status: r.status,
      count: Number(r.count),
      oldestAgeSeconds: Math.max(0, Number(r.oldest_age_seconds)),
      longestInStatusSeconds: Math.max(0, Number(r.longest_in_status_seconds)),
    }));
  }
}
