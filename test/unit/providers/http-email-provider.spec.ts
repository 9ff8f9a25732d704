/**
 * HttpEmailProvider against the real email simulator over HTTP (in-process, random port).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { EmailMessage } from '../../../activities/ports.js';
import { providerError } from '../../helpers/provider-error.js';
import { HttpEmailProvider } from '../../../src/providers/http-email-provider.js';
import { startEmailSimulator, type RunningEmailSimulator } from '../../../simulators/email/email-simulator.js';

const API_KEY = 'test-email-key';
const message: EmailMessage = {
  to: 'ada@example.com',
  subject: 'Your order 42',
  text: 'Thanks for your order.',
  metadata: { orderId: '42' },
};

describe('HttpEmailProvider', () => {
  let sim: RunningEmailSimulator;
  let client: HttpEmailProvider;

  beforeAll(async () => {
    sim = await startEmailSimulator({ apiKey: API_KEY });
    client = new HttpEmailProvider({
      baseUrl: sim.url,
      apiKey: API_KEY,
      timeoutMs: 2_000,
      from: 'orders@shop.example',
    });
  });
  afterAll(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.reset();
  });

  it('sends a message and records one email.sent effect', async () => {
    const { messageId } = await client.send(message, 'order-confirmation:1');

    expect(messageId).toMatch(/^msg_[0-9a-f]+$/);
    const effects = sim.ledger.effects('order-confirmation:1');
    expect(effects).toHaveLength(1);
    expect(effects[0]).toMatchObject({ kind: 'email.sent', key: 'order-confirmation:1' });
    expect(effects[0]?.response.body).toMatchObject({ id: messageId, status: 'queued', to: message.to });
    expect(sim.messages()).toEqual([
      expect.objectContaining({
        id: messageId,
        from: 'orders@shop.example',
        to: message.to,
        subject: message.subject,
        metadata: { orderId: '42' },
      }),
    ]);
  });

  it('replays the same message id for the same key without a second effect', async () => {
    const first = await client.send(message, 'order-confirmation:2');
    const second = await client.send(message, 'order-confirmation:2');

    expect(second.messageId).toBe(first.messageId);
    expect(sim.ledger.count('order-confirmation:2')).toBe(1);
    expect(sim.messages()).toHaveLength(1);
  });

  it('maps 503 to unavailable, with no effect, and succeeds on retry', async () => {
    sim.injectFault({ mode: 'unavailable' });

    const error = await providerError(() => client.send(message, 'order-confirmation:3'));
    expect(error).toMatchObject({ kind: 'unavailable', status: 503 });
    expect(error.message).toContain('the provider is unavailable');
    expect(sim.ledger.count('order-confirmation:3')).toBe(0);

    await client.send(message, 'order-confirmation:3');
    expect(sim.ledger.count('order-confirmation:3')).toBe(1);
  });

  it('maps 422 (invalid recipient) to rejected with the problem detail', async () => {
    const error = await providerError(() => client.send({ ...message, to: 'not-an-address' }, 'order-confirmation:4'));

    expect(error).toMatchObject({ kind: 'rejected', status: 422 });
    expect(error.message).toMatch(/to/);
    expect(sim.ledger.count('order-confirmation:4')).toBe(0);
  });

  it('maps an injected 422 reject fault to rejected', async () => {
    sim.injectFault({ mode: 'reject' });
    const error = await providerError(() => client.send(message, 'order-confirmation:5'));
    expect(error).toMatchObject({ kind: 'rejected', status: 422 });
    expect(sim.ledger.count('order-confirmation:5')).toBe(0);
  });

  it('maps 401 (wrong key, or an injected fault) to unauthorized', async () => {
    const wrongKey = new HttpEmailProvider({ baseUrl: sim.url, apiKey: 'wrong', timeoutMs: 2_000 });
    const error = await providerError(() => wrongKey.send(message, 'order-confirmation:6'));
    expect(error).toMatchObject({ kind: 'unauthorized', status: 401 });
    expect(error.message).toContain('bearer token is not valid');

    sim.injectFault({ mode: 'unauthorized' });
    expect(await providerError(() => client.send(message, 'order-confirmation:6'))).toMatchObject({
      kind: 'unauthorized',
      status: 401,
    });
    expect(sim.ledger.count('order-confirmation:6')).toBe(0);
  });

  it('after a dropped response, a retry with the same key returns the same id and exactly one effect', async () => {
    sim.injectFault({ mode: 'drop-response' });

    const error = await providerError(() => client.send(message, 'order-confirmation:7'));
    expect(error.kind).toBe('unavailable');
    expect(error.status).toBeUndefined();
    expect(sim.ledger.count('order-confirmation:7')).toBe(1);

    const { messageId } = await client.send(message, 'order-confirmation:7');
    const [effect] = sim.ledger.effects('order-confirmation:7');
    expect(messageId).toBe((effect?.response.body as { id: string }).id);
    expect(sim.ledger.count('order-confirmation:7')).toBe(1);
  });

  it('maps a timeout to unavailable; the in-flight retry is a conflict; a later retry replays', async () => {
    sim.injectFault({ mode: 'slow', delayMs: 400 });
    // Same options but the timeout: a different `from` would change the fingerprint (→ 422).
    const impatient = new HttpEmailProvider({
      baseUrl: sim.url,
      apiKey: API_KEY,
      timeoutMs: 100,
      from: 'orders@shop.example',
    });

    const timeout = await providerError(() => impatient.send(message, 'order-confirmation:8'));
    expect(timeout.kind).toBe('unavailable');
    expect(timeout.message).toContain('timed out after 100 ms');

    const conflict = await providerError(() => client.send(message, 'order-confirmation:8'));
    expect(conflict).toMatchObject({ kind: 'conflict', status: 409 });

    await expect.poll(() => sim.ledger.count('order-confirmation:8'), { timeout: 2_000 }).toBe(1);
    const { messageId } = await client.send(message, 'order-confirmation:8');
    expect(messageId).toBe((sim.ledger.effects('order-confirmation:8')[0]?.response.body as { id: string }).id);
    expect(sim.ledger.count('order-confirmation:8')).toBe(1);
  });

  it('maps a refused connection to unavailable', async () => {
    const gone = await startEmailSimulator();
    const url = gone.url;
    await gone.close();
    const client2 = new HttpEmailProvider({ baseUrl: url, apiKey: API_KEY, timeoutMs: 2_000 });

    const error = await providerError(() => client2.send(message, 'order-confirmation:9'));
    expect(error.kind).toBe('unavailable');
    expect(error.status).toBeUndefined();
  });
});
