/**
 * Public failure text (issue 7, input 9): every reason format the workflow and the sweeper write maps to a stable
 * `{ code, message }`; internal text (Prisma/pg messages, hosts, source paths, provider answers) never shows.
 */
import { describe, expect, it } from 'vitest';
import { FailureCode, publicFailure } from '../../src/orders/public-failure.js';

const PRISMA_TEXT =
  'PrismaClientKnownRequestError: Invalid `prisma.order.update()` invocation in /app/dist/activities/inventory.activities.js:42:7 ' +
  '→ connection to db.internal:5432 (database "order_fulfilment") failed';

describe('publicFailure', () => {
  it.each([
    ['received', null],
    ['completed', null],
    ['shipped', null],
  ])('%s: no failure', (status, reason) => expect(publicFailure(status, reason)).toBeNull());

  it('insufficient stock: the customer’s own SKUs and quantities', () => {
    const reason =
      'InsufficientStockError: insufficient stock for CAP-RED: requested 4, available 3; MUG: requested 2, available -1';
    expect(publicFailure('failed', reason)).toEqual({
      code: FailureCode.InsufficientStock,
      message:
        'Not enough stock for CAP-RED (requested 4, available 3), MUG (requested 2, available 0). Nothing was reserved.',
    });
  });

  it('insufficient stock with a compensation failure appended: the suffix never shows', () => {
    const reason = `InsufficientStockError: insufficient stock for CAP: requested 1, available 0 (releaseInventory failed: ${PRISMA_TEXT})`;
    const failure = publicFailure('failed', reason)!;
    expect(failure.message).toBe('Not enough stock for CAP (requested 1, available 0). Nothing was reserved.');
  });

  it.each([
    'ProviderRejectedError: accounting system: POST https://books.internal/v1 → 422 {"error":"tax id"}',
    'UnauthorizedError: email provider: 401 key dev-email-key rejected',
    'ProviderUnavailableError: carrier: 503',
    'TimeoutFailure: activity START_TO_CLOSE timeout',
  ])('provider failures share one public message: %s', (reason) => {
    const failure = publicFailure('failed', reason)!;
    expect(failure.code).toBe(FailureCode.ProviderFailed);
    expect(failure.message).not.toMatch(/internal|401|422|503|key|https?:/i);
  });

  it.each([PRISMA_TEXT, 'NotFoundError: order x not found', 'Error: something', '', 'OrderHaltedError: halted'])(
    'anything else is internal_error and shows none of its text: %s',
    (reason) => {
      const failure = publicFailure('failed', reason)!;
      expect(failure.code).toBe(FailureCode.InternalError);
      expect(failure.message).not.toMatch(/prisma|db\.internal|\/app\/|order_fulfilment|NotFound|something/i);
    },
  );

  it('cancelled: the reason given to the cancel, without a compensation suffix', () => {
    expect(publicFailure('cancelled', 'cancelled: customer changed their mind')).toEqual({
      code: FailureCode.Cancelled,
      message: 'The order was cancelled: customer changed their mind',
    });
    expect(publicFailure('cancelled', `cancelled: late (voidInvoice failed: ${PRISMA_TEXT})`)!.message).toBe(
      'The order was cancelled: late',
    );
    expect(publicFailure('cancelled', null)!.message).toBe('The order was cancelled.');
  });

  it('attention_required: a delay, whatever the step or the sweeper wrote; a stopped workflow says so', () => {
    const waiting = publicFailure(
      'attention_required',
      'the confirmation email may have been sent (TimeoutFailure: activity HEARTBEAT timeout)',
    )!;
    const swept = publicFailure(
      'attention_required',
      "workflow order-1 closed (terminated) while the order was invoiced; an operator resumes it with `temporal workflow reset --workflow-id order-1 --type LastWorkflowTask --reason '<why>'`, then retries, resolves or cancels as usual",
    )!;
    expect([waiting.code, swept.code]).toEqual([FailureCode.NeedsAttention, FailureCode.NeedsAttention]);
    expect(waiting.message).toMatch(/continues once they have resolved it/);
    expect(swept.message).toMatch(/processing stopped and needs our staff to resume it/);
    expect(swept.message).not.toMatch(/order-1|temporal|invoiced/);
  });
});
