/**
 * The worked examples' end-to-end order (scripts/check-extending.ts runs it in its copy with the steps the examples
 * added in `EXTENDING_EXAMPLE_STEPS`; vitest.config.ts leaves this folder out without them): one order through the whole stack, each added step done
 * once, with one effect.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STEPS } from '../../activities/steps/index.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';

const ADDED = (process.env.EXTENDING_EXAMPLE_STEPS ?? '').split(',').filter(Boolean);

describe.runIf(ADDED.length > 0)('the worked examples of docs/extending.md', () => {
  let stack: TestStack;
  beforeAll(async () => {
    stack = await startTestStack();
  });
  afterAll(async () => stack?.close());

  it(`completes an order with ${ADDED.join(', ')}: each once, one effect each`, async () => {
    const res = await stack.http
      .post('/orders')
      .send({
        customer: { email: 'ada@example.com', name: 'Ada Lovelace' },
        lines: [{ sku: 'TEE-BLK-M', quantity: 2 }],
      })
      .expect(202);
    const id = res.body.id as string;
    const order = await stack.waitForOrder(id);
    expect(order.status).toBe('completed');
    const events = (await stack.client.workflow.getHandle(`order-${id}`).fetchHistory()).events ?? [];
    for (const name of ADDED) {
      const step = STEPS.find((s) => s.name === name);
      expect(step, `${name} is in the registry`).toBeDefined();
      expect((order.steps as Array<{ name: string; state: string }>).find((s) => s.name === name)?.state).toBe('done');
      if (step!.kind === 'provider') {
        const scheduled = events
          .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === name)
          .map((e) => String(e.eventId));
        const completed = events.filter((e) =>
          scheduled.includes(String(e.activityTaskCompletedEventAttributes?.scheduledEventId ?? '')),
        );
        expect([name, scheduled.length, completed.length]).toEqual([name, 1, 1]);
        const key = step!.key(id);
        expect([key, stack.sims.provider(step!.provider.name).ledger.count(key)]).toEqual([key, 1]);
      } else if (step!.kind === 'database') {
        const rows = await stack.db.sql.$queryRaw<Array<{ n: number }>>`
          SELECT count(*)::int AS n FROM order_step_results WHERE order_id = ${id}::uuid AND step = ${name}`;
        expect([name, rows[0]!.n]).toEqual([name, step!.idempotency === 'recorded' ? 1 : 0]);
      }
    }
    console.log(`worked examples: order ${id} completed; ${ADDED.join(', ')} each ran once`);
  });
});
