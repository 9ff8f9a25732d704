/**
 * A worker dies (SIGKILL) while the confirmation email is in flight at the provider. Temporal notices the
 * missing heartbeats (heartbeat timeout 10 s of the providerCall profile, not the 30 s start-to-close) and a
 * second worker retries it: the retry finds its own earlier attempt's claim and re-sends with the same
 * Idempotency-Key, so the customer gets exactly one email, and the order completes. The confirmation runs on the
 * email provider's task queue (`<taskQueue>.email`), so the worker process runs every provider's worker too.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROVIDER_LIST } from '../../providers/index.js';
import { RETRY_UPDATE_TIMEOUT_MS } from '../../src/temporal/temporal.constants.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';
import { startWorkerProcess } from '../helpers/worker-process.js';

let stack: TestStack;
const children: ChildProcess[] = [];

async function startWorker(): Promise<ChildProcess> {
  const { child, providers } = await startWorkerProcess(stack);
  children.push(child);
  // The provider steps run on the providers' task queues: the process must serve them (the email one at least).
  expect(providers).toBe(
    PROVIDER_LIST.map((p) => p.name)
      .sort()
      .join(','),
  );
  return child;
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  stack = await startTestStack({ worker: false });
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await stack?.close();
});

describe('worker crash mid-step', () => {
  it('sends exactly one confirmation email when the worker dies while the provider is sending', async () => {
    stack.email.injectFault({ mode: 'slow', delayMs: 3_000, times: 1 });
    const first = await startWorker();
    const res = await stack.http
      .post('/orders')
      .send({ customer: { email: 'linus@example.com' }, lines: [{ sku: 'MUG-WHT', quantity: 1 }] })
      .expect(202);
    const id = res.body.id as string;
    const key = `order-confirmation:${id}`;

    await until(() => stack.email.inFlightKeys().includes(key), 20_000, 'the email request to reach the provider');
    first.kill('SIGKILL');
    await once(first, 'exit');
    const claim = await stack.db.prisma.sideEffectClaim.findUniqueOrThrow({ where: { key } });
    expect([claim.kind, claim.status]).toEqual(['sendOrderConfirmation', 'sending']);

    await startWorker();
    const killedAt = Date.now();
    const order = await stack.waitForOrder(id, 90_000);
    expect(order.status).toBe('completed');
    // Heartbeats: the retry starts within the 10 s heartbeat timeout (plus the backoff and the slow send).
    expect(Date.now() - killedAt).toBeLessThan(25_000);
    expect(stack.email.ledger.count(key)).toBe(1);
    const after = await stack.db.prisma.sideEffectClaim.findUniqueOrThrow({ where: { key } });
    expect(after.status).toBe('sent');
    expect(after.attempts).toBeGreaterThanOrEqual(2);
    expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(1);
    expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(1);
  }, 120_000);
});

describe('a worker crash while an operator retry is answered (issue 16, finding 4)', () => {
  it('answers the retry once the worker is back, not 503, and the same key again gets the same answer', async () => {
    const first = await startWorker();
    const res = await stack.http
      .post('/orders')
      .send({ customer: { email: 'grace@example.com' }, lines: [{ sku: 'MUG-WHT', quantity: 1 }] })
      .expect(202);
    const id = res.body.id as string;
    stack.accounting.injectFault({ mode: 'reject', times: 1, keyPrefix: `accounting-invoice:${id}` });
    await until(
      async () => (await stack.ops.get(`/orders/${id}`)).body.status === 'attention_required',
      60_000,
      'the order to wait for an operator',
    );

    // The retry is sent and the worker dies while it is being answered; another worker comes back a moment later.
    const key = randomUUID();
    const asked = Date.now();
    const answer = stack.ops.post(`/orders/${id}/retry`).set('Idempotency-Key', key).send({});
    await new Promise((r) => setTimeout(r, 100));
    first.kill('SIGKILL');
    await once(first, 'exit');
    await new Promise((r) => setTimeout(r, 1_000));
    await startWorker();
    const retried = await answer;
    const answeredMs = Date.now() - asked;
    console.log(`retry answered ${retried.status} ${answeredMs} ms after it was sent (the worker died meanwhile)`);
    // Within the Update's bound, which outlasts a workflow task timeout plus the worker's recovery.
    expect(retried.status).toBe(202);
    expect(answeredMs).toBeLessThan(RETRY_UPDATE_TIMEOUT_MS);
    expect(retried.body).toMatchObject({ orderId: id, step: 'syncInvoiceToAccounting', retry: 1 });

    // The same key again, once the retried step has completed the order and its workflow has closed: the outcome of
    // the Update it started (Temporal keeps it under the Update id), not "nothing to retry".
    expect((await stack.waitForOrder(id, 60_000)).status).toBe('completed');
    await stack.client.workflow.getHandle(`order-${id}`).result();
    const again = await stack.ops.post(`/orders/${id}/retry`).set('Idempotency-Key', key).send({});
    expect([again.status, again.body.retry, again.body.step]).toEqual([202, 1, 'syncInvoiceToAccounting']);
    // Another key is another request: nothing waits any more.
    expect((await stack.ops.post(`/orders/${id}/retry`).set('Idempotency-Key', randomUUID()).send({})).status).toBe(
      409,
    );
    expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(1);
  }, 120_000);
});
