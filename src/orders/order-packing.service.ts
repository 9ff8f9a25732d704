/**
 * The warehouse's report that an order is packed (`POST /orders/:id/packed`), sent to the order's workflow as the
 * `reportPacked` Update (workflows/order-event-wait.ts). The Update id comes from the request's `Idempotency-Key`
 * (`packed:<client>:<key>`), so the same key is the same report; a second report (another key, e.g. an operator's
 * "mark packed" after the warehouse's own) answers the same as the first. Once the workflow has closed, the first
 * report stored by the order (`order_events`) answers.
 */
import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import type { ReportEventResult } from '../../workflows/order-fulfilment.contract.js';
import type { OrderPlan } from '../../workflows/order-plan.js';
import { ProblemException, ServiceUnavailableProblem } from '../common/problem-details.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import { RETRY_UPDATE_TIMEOUT_MS } from '../temporal/temporal.constants.js';
import type { PackedView, ReportPackedRequest } from './order-actions.dto.js';
import { RETRY_AFTER_SECONDS } from './order-actions.service.js';
import { ALL_ORDERS } from './order-access.js';
import { OrderProblemType } from './order-problems.js';
import type { OrderView } from './order-response.dto.js';
import { OrdersService } from './orders.service.js';
import { OrderWorkflowActions } from './workflow/order-workflow-actions.service.js';

/** The event a warehouse reports. */
const PACKED = 'packed';

@Injectable()
export class OrderPackingService {
  constructor(
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    private readonly orders: OrdersService,
    private readonly actions: OrderWorkflowActions,
  ) {}

  /**
   * Reports the order packed.
   * @param options.actionKey `<client>:<Idempotency-Key>` (the Update id's tail); without it every request is a new
   *   report (which still answers the first one's).
   * @param options.by the reporting API client.
   * @returns the first report the order received, and the order as stored now.
   * @throws ProblemException 404 (no such order); 409 `order-not-awaiting-packing` (no packing step in its plan,
   *   final, being cancelled); 422 `validation-error` (a report the workflow refuses); 503 when Temporal or its
   *   worker is unavailable.
   */
  async report(
    id: string,
    body: ReportPackedRequest,
    options: { actionKey: string | undefined; by: string },
  ): Promise<PackedView> {
    const order = await this.orders.get(id, ALL_ORDERS);
    if (!(await this.hasPackingStep(id))) {
      throw notAwaitingPacking(order, `Order ${id} does not wait for packing: its plan has no packing step`);
    }
    const stored = await this.storedReport(id);
    if (stored) return { ...stored, order };
    const outcome = await this.actions.reportEvent(
      id,
      PACKED,
      { by: options.by, ...(body ? { report: { ...body } } : {}) },
      `packed:${options.actionKey ?? randomUUID()}`,
    );
    switch (outcome.kind) {
      case 'done':
        return { ...(outcome.result as ReportEventResult & { event: 'packed' }), order: await this.current(id) };
      case 'refused': {
        const why = (outcome.failure.details[0] as { why?: string } | undefined)?.why ?? outcome.failure.message;
        if (outcome.failure.type === 'ValidationError') {
          throw new ProblemException({ status: 422, detail: `The report was refused: ${outcome.failure.message}` });
        }
        throw notAwaitingPacking(await this.current(id), `Order ${id} does not wait for packing: ${why}`);
      }
      case 'timeout':
      case 'not-recorded':
        throw new ServiceUnavailableProblem(
          `The workflow of order ${id} did not take the report within ${RETRY_UPDATE_TIMEOUT_MS / 1000} s (is a ` +
            'worker running?); repeat the request with the same Idempotency-Key: it is the same report',
          RETRY_AFTER_SECONDS,
        );
      case 'unavailable':
        throw new ServiceUnavailableProblem(
          'The workflow engine (Temporal) is unavailable; try again later',
          RETRY_AFTER_SECONDS,
          {
            cause: outcome.error,
          },
        );
      default: {
        // The workflow closed (or never ran): the report it stored, if it got one, is the answer.
        const after = await this.storedReport(id);
        const current = await this.current(id);
        if (after) return { ...after, order: current };
        throw notAwaitingPacking(current, `Order ${id} does not wait for packing: the order is ${current.status}`);
      }
    }
  }

  private current(id: string): Promise<OrderView> {
    return this.orders.get(id, ALL_ORDERS);
  }

  /** True when the order's stored plan has a step that waits for the `packed` event. */
  private async hasPackingStep(id: string): Promise<boolean> {
    const [row] = await this.prisma.$queryRaw<Array<{ plan: OrderPlan | null }>>`
      SELECT plan FROM orders WHERE id = ${id}::uuid`;
    return row?.plan?.steps.some((s) => s.kind === 'event' && s.event?.name === PACKED) ?? false;
  }

  /** The first `packed` report the order recorded (`order_events`), as the Update answered it; null: none yet. */
  private async storedReport(id: string): Promise<Omit<PackedView, 'order'> | null> {
    const [row] = await this.prisma.$queryRaw<Array<{ report_id: string; reported_by: string; received_at: Date }>>`
      SELECT report_id, reported_by, received_at FROM order_events WHERE order_id = ${id}::uuid AND event = ${PACKED}`;
    if (!row) return null;
    return {
      orderId: id,
      event: PACKED,
      reportId: row.report_id,
      receivedAt: row.received_at.toISOString(),
      by: row.reported_by,
    };
  }
}

/** 409 `order-not-awaiting-packing` for `order`, with its status. */
function notAwaitingPacking(order: OrderView, detail: string): ProblemException {
  return new ProblemException({
    type: OrderProblemType.OrderNotAwaitingPacking,
    detail,
    extensions: { orderStatus: order.status },
  });
}
