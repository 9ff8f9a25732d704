/**
 * `orderReturn` (workflow id `return-<returnId>`): a return of shipped units, from the label to the refund. See
 * ./order-return.contract.ts for its steps, keys and Updates. Every provider step is claim-first under its own key
 * (activities/kit/effect.ts) on its provider's task queue with the `providerCall` profile; the database writes use
 * `databaseStep`. Every wait has a bound: the receipt's `receiptTimeoutMs` (then `expired`, nothing refunded), an
 * operator's retry `ATTENTION_RECHECK_MS` at a time (the return stays in `attention_required`, and the
 * `ReturnsAwaitingOperator` alert fires, until someone retries).
 */
import {
  ApplicationFailure,
  condition,
  currentUpdateInfo,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { attentionWrite, databaseStep, providerCall } from './activity-options.js';
import {
  ATTENTION_RECHECK_MS,
  RETURN_NOT_AWAITING,
  RETURN_PROVIDER_OF,
  RETURN_RECEIPT_INVALID,
  receiveReturnUpdate,
  retryReturnUpdate,
  returnStatusQuery,
  ReturnStatus,
  withdrawReturnUpdate,
  type OrderReturnInput,
  type OrderReturnResult,
  type ReceiveReturnInput,
  type ReceiveReturnResult,
  type ReturnActivities,
} from './order-return.contract.js';

/** A provider activity of the return on its provider's task queue. */
function providerActivity<K extends keyof typeof RETURN_PROVIDER_OF>(name: K): ReturnActivities[K] {
  const taskQueue = `${workflowInfo().taskQueue}.${RETURN_PROVIDER_OF[name]}`;
  return proxyActivities<ReturnActivities>({ ...providerCall, taskQueue, summary: name })[name];
}

const database = proxyActivities<ReturnActivities>(databaseStep);
const statusWrites = proxyActivities<ReturnActivities>(attentionWrite);

/** Checks a receipt against the return's lines. @throws ApplicationFailure `ReturnReceiptInvalidError`. */
function checkReceipt(input: OrderReturnInput, receipt: ReceiveReturnInput): void {
  const asked = new Map(input.lines.map((l) => [l.sku, l.quantity]));
  const seen = new Set<string>();
  for (const line of receipt.lines) {
    const quantity = asked.get(line.sku);
    const problem =
      quantity === undefined
        ? `${line.sku} is not in the return`
        : seen.has(line.sku)
          ? `${line.sku} is named twice`
          : line.quantity > quantity
            ? `${line.sku}: ${line.quantity} received, the return has ${quantity}`
            : line.damaged > line.quantity
              ? `${line.sku}: ${line.damaged} damaged of ${line.quantity} received`
              : null;
    if (problem) throw ApplicationFailure.nonRetryable(problem, RETURN_RECEIPT_INVALID);
    seen.add(line.sku);
  }
}

/** The return workflow. */
export async function orderReturn(input: OrderReturnInput): Promise<OrderReturnResult> {
  const { returnId } = input;
  let status: ReturnStatus = ReturnStatus.Requested;
  let step: string | null = 'createReturnLabel';
  let attentionReason: string | null = null;
  let receipt: ReceiveReturnResult | null = null;
  let withdrawn = false;
  let retryRequested = false;
  let ended = false;
  // Until the return ends: a parcel that arrives is a fact, even before its label is recorded (the label's email
  // is then moot) or while that email waits for an operator.
  const awaitingReceipt = () => !ended && receipt === null && !withdrawn;

  setHandler(returnStatusQuery, () => ({ returnId, status, step, attentionReason }));
  setHandler(
    receiveReturnUpdate,
    (update) => {
      receipt ??= {
        returnId,
        receiptId: currentUpdateInfo()?.id ?? 'receipt',
        lines: update.lines,
        by: update.by,
        receivedAt: new Date().toISOString(),
      };
      return receipt;
    },
    {
      validator: (update) => {
        if (receipt !== null) return; // a second report answers the first
        if (!awaitingReceipt()) {
          throw ApplicationFailure.nonRetryable(
            `return ${returnId} does not wait for a receipt (${status})`,
            RETURN_NOT_AWAITING,
          );
        }
        checkReceipt(input, update);
      },
    },
  );
  setHandler(
    withdrawReturnUpdate,
    (_input) => {
      withdrawn = true;
      return { returnId, status: ReturnStatus.Withdrawn };
    },
    {
      validator: (_input) => {
        if (withdrawn) return;
        const open = [ReturnStatus.Requested, ReturnStatus.LabelCreated, ReturnStatus.AttentionRequired];
        if (receipt !== null || !open.includes(status as (typeof open)[number])) {
          throw ApplicationFailure.nonRetryable(
            `return ${returnId} can no longer be withdrawn (${status})`,
            RETURN_NOT_AWAITING,
          );
        }
      },
    },
  );
  setHandler(
    retryReturnUpdate,
    (_input) => {
      retryRequested = true;
      return { returnId, step: step ?? '' };
    },
    {
      validator: (_input) => {
        if (status !== ReturnStatus.AttentionRequired) {
          throw ApplicationFailure.nonRetryable(
            `return ${returnId} does not wait for a retry (${status})`,
            RETURN_NOT_AWAITING,
          );
        }
      },
    },
  );

  const show = (now: string) => setCurrentDetails(`**${status}**: ${now}`);

  /**
   * Runs a provider step; when it fails for good, waits in `attention_required` for an operator's retry (or a
   * withdrawal, or `moot()`: the step is no longer needed, e.g. the label's email once the parcel arrived).
   * @returns the step's result, or undefined when it became moot.
   */
  async function withOperatorRetry<T>(name: string, run: () => Promise<T>, moot = () => false): Promise<T | undefined> {
    step = name;
    const before = status;
    for (;;) {
      try {
        const result = await run();
        return result;
      } catch (err) {
        attentionReason = `${name} failed: ${innermostMessage(err)}`.slice(0, 500);
        status = ReturnStatus.AttentionRequired;
        show(attentionReason);
        await statusWrites.setReturnStatus({ returnId, status, reason: attentionReason });
        log.warn('return waits for an operator', { returnId, step: name, reason: attentionReason });
        while (!(await condition(() => retryRequested || withdrawn || moot(), ATTENTION_RECHECK_MS))) {
          log.warn('return still waits for an operator', { returnId, step: name });
        }
        retryRequested = false;
        attentionReason = null;
        status = before;
        await statusWrites.setReturnStatus({ returnId, status, reason: null });
        if (withdrawn) throw new ReturnWithdrawn();
        if (moot()) return undefined;
      }
    }
  }

  try {
    show('asks the carrier for a return label');
    await withOperatorRetry(
      'createReturnLabel',
      () => providerActivity('createReturnLabel')({ returnId }),
      () => receipt !== null,
    );
    status = ReturnStatus.LabelCreated;
    if (!withdrawn && receipt === null) {
      await withOperatorRetry(
        'sendReturnEmail',
        () => providerActivity('sendReturnEmail')({ returnId, kind: 'label' }),
        () => receipt !== null,
      );
    }
  } catch (err) {
    if (!(err instanceof ReturnWithdrawn)) throw err;
  }

  step = 'awaitReceipt';
  show(`waits for the warehouse's receipt (at most ${Math.round(input.receiptTimeoutMs / 3_600_000)} h)`);
  const arrived = await condition(() => receipt !== null || withdrawn, input.receiptTimeoutMs);
  if (withdrawn && receipt === null) return end(ReturnStatus.Withdrawn, 0);
  if (!arrived || receipt === null) return end(ReturnStatus.Expired, 0);

  step = 'recordReturnReceipt';
  const { refundMinor, refund } = await database.recordReturnReceipt({ returnId, receipt });
  const amount = refund ?? `${refundMinor} (minor units)`;
  status = ReturnStatus.Received;
  show(`received; refund of ${amount}`);
  await withOperatorRetry('refundReturn', () => providerActivity('refundReturn')({ returnId }));
  status = ReturnStatus.Refunded;
  await withOperatorRetry('creditReturn', () => providerActivity('creditReturn')({ returnId }));
  await withOperatorRetry('sendReturnEmail', () =>
    providerActivity('sendReturnEmail')({ returnId, kind: 'completed' }),
  );
  return end(ReturnStatus.Completed, refundMinor, amount);

  async function end(final: ReturnStatus, refunded: number, amount = ''): Promise<OrderReturnResult> {
    step = null;
    ended = true;
    status = final;
    show(final === ReturnStatus.Completed ? `refunded ${amount}` : 'nothing refunded');
    await statusWrites.setReturnStatus({ returnId, status: final });
    return { returnId, status: final, refundMinor: refunded };
  }
}

/** The customer withdrew the return while a step before the receipt waited for an operator. */
class ReturnWithdrawn extends Error {}

/** The innermost message of an activity failure (the activity's own error). */
function innermostMessage(err: unknown): string {
  let e = err as { message?: string; cause?: unknown } | undefined;
  while (e?.cause) e = e.cause as typeof e;
  return e?.message ?? String(err);
}
