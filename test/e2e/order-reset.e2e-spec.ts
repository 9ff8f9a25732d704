/**
 * Final is final (issue 6, input 10): a `temporal workflow reset` of an order that failed and was compensated
 * starts a new run from the first workflow task. That run must not revive the order: its first step refuses an
 * order that is already final, so no stock is reserved again, the void invoice stays void, no confirmation is
 * sent, nothing reaches accounting or the carrier, and the row and the OrderStatus search attribute both say
 * `failed`. Uses the real Temporal CLI against the test stack's server.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findTemporalCli } from '../../scripts/lib/temporal-cli.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/order-fulfilment.contract.js';
import { stockOf } from '../helpers/fixtures.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';

let stack: TestStack;
let cli: string;

beforeAll(async () => {
  stack = await startTestStack();
  const found = await findTemporalCli();
  if (!found) throw new Error('this test needs the Temporal CLI (TEMPORAL_CLI_PATH or .tools/; see README, Temporal)');
  cli = found;
});
afterAll(async () => stack?.close());

describe('a reset never revives a final order', () => {
  it('a reset of a compensated order changes nothing and keeps one story', async () => {
    stack.email.injectFault({ mode: 'reject', times: 1, keyPrefix: 'order-confirmation:' });
    const before = await stockOf(stack.db.prisma, 'MUG-WHT');
    const res = await stack.http
      .post('/orders')
      .send({ customer: { email: 'ada@example.com' }, lines: [{ sku: 'MUG-WHT', quantity: 3 }] })
      .expect(202);
    const id = res.body.id as string;
    const failed = await stack.waitForOrder(id);
    expect(failed.status).toBe('failed');
    const handle = stack.client.workflow.getHandle(`order-${id}`);
    await handle.result().catch(() => undefined);
    const firstRun = (await handle.describe()).runId;

    await promisify(execFile)(cli, [
      'workflow',
      'reset',
      '--workflow-id',
      `order-${id}`,
      '--type',
      'FirstWorkflowTask',
      '--reason',
      'test: try to revive a failed order',
      '--address',
      stack.config.TEMPORAL_ADDRESS,
    ]);
    const reset = stack.client.workflow.getHandle(`order-${id}`);
    const closed = await reset.result().then(
      () => undefined,
      (err: { cause?: { type?: string; message?: string } }) => err.cause,
    );
    expect(closed?.type).toBe('OrderClosedError');
    expect(closed?.message).toMatch(/already failed; this run changed nothing/);
    const description = await reset.describe();
    expect(description.runId).not.toBe(firstRun);
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderStatus)).toBe('failed');

    const order = (await stack.http.get(`/orders/${id}`).expect(200)).body;
    expect(order.status).toBe('failed');
    expect(await stockOf(stack.db.prisma, 'MUG-WHT')).toEqual(before);
    expect((await stack.db.prisma.invoice.findUniqueOrThrow({ where: { orderId: id } })).status).toBe('void');
    expect(await stack.db.prisma.inventoryMovement.count({ where: { orderId: id, reason: 'reservation' } })).toBe(1);
    expect(stack.email.ledger.count(`order-confirmation:${id}`)).toBe(0);
    expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(0);
    expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(0);
  });
});
