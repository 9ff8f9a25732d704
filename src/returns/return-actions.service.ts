/**
 * The actions on a running return, sent to its workflow (`return-<id>`) as Temporal Updates
 * (workflows/order-return.contract.ts): the warehouse's receipt (`receive`), the customer's withdrawal (`withdraw`)
 * and an operator's retry (`retry`). Each Update id comes from the request's `Idempotency-Key`
 * (`<action>:<client>:<key>`, a random one without it), so a repeated request is the same action and gets the same
 * answer. The workflow's validators decide what the return can take; this maps their refusals, a closed run, no
 * worker and an unreachable Temporal to problems (409, 422, 503).
 */
import { randomUUID } from 'node:crypto';
import { HttpStatus, Injectable } from '@nestjs/common';
import {
  RETURN_RECEIPT_INVALID,
  receiveReturnUpdate,
  retryReturnUpdate,
  ReturnStatus,
  withdrawReturnUpdate,
} from '../../workflows/order-return.contract.js';
import { ProblemException, ServiceUnavailableProblem } from '../common/problem-details.js';
import { ALL_ORDERS, type OrderAccess } from '../orders/order-access.js';
import { RETRY_UPDATE_TIMEOUT_MS } from '../temporal/temporal.constants.js';
import type {
  ReceiveReturnRequest,
  RetryReturnRequest,
  ReturnReceivedView,
  ReturnRetryStartedView,
  ReturnView,
} from './return.dto.js';
import { ReturnProblemType } from './return-problems.js';
import type { ReturnUpdateOutcome } from './return-workflows.service.js';
import { ReturnWorkflows } from './return-workflows.service.js';
import { type ReturnViewOptions, ReturnsService } from './returns.service.js';

/** `Retry-After` of 503 answers from return actions, seconds. */
export const RETURN_RETRY_AFTER_SECONDS = 5;

/** How long a withdrawal waits for the workflow to end the return (`withdrawn`) before answering 202, ms. */
export const WITHDRAW_WAIT_MS = 5_000;

/** Options every action takes. */
export interface ReturnActionOptions {
  /** `<client>:<Idempotency-Key>` (the Update id's tail); without it every request is a new action. */
  actionKey: string | undefined;
  /** The API client acting (recorded by the workflow). */
  by: string;
  /** What the answer's return view shows. */
  view: ReturnViewOptions;
}

/** The outcome of a withdrawal: 200 once the return is `withdrawn`, 202 while the workflow still ends it. */
export interface WithdrawOutcome {
  status: HttpStatus.OK | HttpStatus.ACCEPTED;
  return: ReturnView;
}

@Injectable()
export class ReturnActionsService {
  constructor(
    private readonly returns: ReturnsService,
    private readonly workflows: ReturnWorkflows,
  ) {}

  /**
   * The warehouse's (or an operator's) receipt: the `receive` Update with `{ lines, by }`.
   * @returns the receipt the return holds (the first one; a repeat answers the same) and the return as stored now.
   * @throws ProblemException 404; 409 `return-not-awaiting-receipt`; 422 `return-receipt-invalid`; 503 when Temporal or
   *   its worker is unavailable.
   */
  async receive(id: string, body: ReceiveReturnRequest, options: ReturnActionOptions): Promise<ReturnReceivedView> {
    const before = await this.returns.get(id, ALL_ORDERS, options.view);
    const outcome = await this.workflows.update(
      id,
      receiveReturnUpdate,
      { lines: body.lines.map(({ sku, quantity, damaged }) => ({ sku, quantity, damaged })), by: options.by },
      `received:${options.actionKey ?? randomUUID()}`,
    );
    const notAwaiting = async (why?: string) => {
      const current = await this.returns.get(id, ALL_ORDERS, options.view);
      return new ProblemException({
        type: ReturnProblemType.ReturnNotAwaitingReceipt,
        detail: `Return ${id} does not wait for a receipt: ${why ?? `it is ${current.status}`}`,
        extensions: { returnStatus: current.status },
      });
    };
    switch (outcome.kind) {
      case 'done':
        return { receipt: outcome.result, return: await this.returns.get(id, ALL_ORDERS, options.view) };
      case 'refused':
        if (outcome.failure.type === RETURN_RECEIPT_INVALID) {
          throw new ProblemException({
            type: ReturnProblemType.ReturnReceiptInvalid,
            detail: `The receipt was refused: ${outcome.failure.message}`,
          });
        }
        throw await notAwaiting();
      case 'closed':
        if (outcome.previous) {
          return { receipt: outcome.previous, return: await this.returns.get(id, ALL_ORDERS, options.view) };
        }
        throw await notAwaiting();
      case 'not-found':
        throw await notAwaiting(`its workflow has not started (${before.status})`);
      default:
        throw unavailable(id, 'receipt', outcome);
    }
  }

  /**
   * The customer's (or an operator's) withdrawal before the receipt: the `withdraw` Update, then up to
   * {@link WITHDRAW_WAIT_MS} for the workflow to end the return as `withdrawn`.
   * @param access whose returns the caller may withdraw (another client's answers 404).
   * @returns 200 with the return once `withdrawn` (also when it already was), 202 while the workflow still ends it.
   * @throws ProblemException 404; 409 `return-not-withdrawable`; 503.
   */
  async withdraw(id: string, access: OrderAccess, options: ReturnActionOptions): Promise<WithdrawOutcome> {
    const before = await this.returns.get(id, access, options.view);
    const outcome = await this.workflows.update(
      id,
      withdrawReturnUpdate,
      { by: options.by },
      `withdraw:${options.actionKey ?? randomUUID()}`,
    );
    const notWithdrawable = async (why?: string) => {
      const current = await this.returns.get(id, access, options.view);
      return new ProblemException({
        type: ReturnProblemType.ReturnNotWithdrawable,
        detail: `Return ${id} can no longer be withdrawn: ${why ?? `it is ${current.status}`}`,
        extensions: { returnStatus: current.status },
      });
    };
    switch (outcome.kind) {
      case 'done': {
        const ended = await this.workflows.waitForResult(id, WITHDRAW_WAIT_MS);
        const current = await this.returns.get(id, access, options.view);
        const done = ended !== null || current.status === ReturnStatus.Withdrawn;
        return { status: done ? HttpStatus.OK : HttpStatus.ACCEPTED, return: current };
      }
      case 'refused':
        throw await notWithdrawable();
      case 'closed': {
        const current = await this.returns.get(id, access, options.view);
        if (current.status === ReturnStatus.Withdrawn) return { status: HttpStatus.OK, return: current };
        throw await notWithdrawable();
      }
      case 'not-found':
        throw await notWithdrawable(`its workflow has not started (${before.status})`);
      default:
        throw unavailable(id, 'withdrawal', outcome);
    }
  }

  /**
   * An operator's retry of the provider step a return in `attention_required` waits on: the `retry` Update.
   * @returns the step the workflow retries (the first answer, for a repeat with the same key).
   * @throws ProblemException 404; 409 `return-not-awaiting-retry`; 503.
   */
  async retry(id: string, body: RetryReturnRequest, options: ReturnActionOptions): Promise<ReturnRetryStartedView> {
    await this.returns.get(id, ALL_ORDERS, options.view);
    const outcome = await this.workflows.update(
      id,
      retryReturnUpdate,
      { by: options.by, ...(body?.reason ? { reason: body.reason } : {}) },
      `retry:${options.actionKey ?? randomUUID()}`,
    );
    const notAwaiting = async (why?: string) => {
      const current = await this.returns.get(id, ALL_ORDERS, options.view);
      return new ProblemException({
        type: ReturnProblemType.ReturnNotAwaitingRetry,
        detail: `Return ${id} does not wait for a retry: ${why ?? `it is ${current.status}`}`,
        extensions: { returnStatus: current.status },
      });
    };
    switch (outcome.kind) {
      case 'done':
        return outcome.result;
      case 'refused':
        throw await notAwaiting();
      case 'closed':
        if (outcome.previous) return outcome.previous;
        throw await notAwaiting();
      case 'not-found':
        throw await notAwaiting('its workflow has not started');
      default:
        throw unavailable(id, 'retry', outcome);
    }
  }
}

/** 503 for an Update no worker took in time, or a Temporal that cannot be reached. */
function unavailable(
  id: string,
  action: string,
  outcome: Extract<ReturnUpdateOutcome<unknown>, { kind: 'timeout' | 'unavailable' }>,
): ServiceUnavailableProblem {
  if (outcome.kind === 'timeout') {
    return new ServiceUnavailableProblem(
      `The workflow of return ${id} did not take the ${action} within ${RETRY_UPDATE_TIMEOUT_MS / 1000} s (is a ` +
        `worker running?); repeat the request with the same Idempotency-Key: it is the same ${action}`,
      RETURN_RETRY_AFTER_SECONDS,
    );
  }
  return new ServiceUnavailableProblem(
    'The workflow engine (Temporal) is unavailable; try again later',
    RETURN_RETRY_AFTER_SECONDS,
    { cause: outcome.error },
  );
}
