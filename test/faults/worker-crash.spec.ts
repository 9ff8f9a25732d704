/**
 * A worker dies (SIGKILL) while the confirmation email is in flight at the provider. Temporal notices the
 * missing heartbeats (heartbeat timeout 10 s of the providerCall profile, not the 30 s start-to-close) and a
 * second worker retries it: the retry finds its own earlier attempt's claim and re-sends with the same
 * Idempotency-Key, so the customer gets exactly one email, and the order completes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';

let stack: TestStack;
const children: ChildProcess[] = [];

async function startWorkerProcess(): Promise<ChildProcess> {
  const entry = fileURLToPath(new URL('./fixtures/worker-process.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: {
      ...process.env,
      DATABASE_URL: stack.config.DATABASE_URL,
      TEMPORAL_ADDRESS: stack.config.TEMPORAL_ADDRESS,
      TEMPORAL_TASK_QUEUE: stack.config.TEMPORAL_TASK_QUEUE,
      EMAIL_PROVIDER_URL: stack.config.EMAIL_PROVIDER_URL,
      EMAIL_PROVIDER_API_KEY: stack.config.EMAIL_PROVIDER_API_KEY,
      ACCOUNTING_PROVIDER_URL: stack.config.ACCOUNTING_PROVIDER_URL,
      ACCOUNTING_PROVIDER_API_KEY: stack.config.ACCOUNTING_PROVIDER_API_KEY,
      CARRIER_PROVIDER_URL: stack.config.CARRIER_PROVIDER_URL,
      CARRIER_PROVIDER_API_KEY: stack.config.CARRIER_PROVIDER_API_KEY,
      PROVIDER_TIMEOUT_MS: '20000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  let out = '';
  for await (const chunk of child.stdout!) {
    out += String(chunk);
    if (out.includes('worker-ready')) break;
  }
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
    const first = await startWorkerProcess();
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
    expect(claim.status).toBe('sending');

    await startWorkerProcess();
    const killedAt = Date.now();
    const order = await stack.waitForOrder(id, 90_000);
    expect(order.status).toBe('completed');
    // Heartbeats: the retry starts within the 10 s heartbeat timeout (plus the 2 s backoff and the slow send).
    expect(Date.now() - killedAt).toBeLessThan(25_000);
    expect(stack.email.ledger.count(key)).toBe(1);
    const after = await stack.db.prisma.sideEffectClaim.findUniqueOrThrow({ where: { key } });
    expect(after.status).toBe('sent');
    expect(after.attempts).toBeGreaterThanOrEqual(2);
    expect(stack.accounting.ledger.count(`accounting-invoice:${id}`)).toBe(1);
    expect(stack.carrier.ledger.count(`shipment:${id}`)).toBe(1);
  }, 120_000);
});
