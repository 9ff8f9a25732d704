/**
 * The idempotency, authentication, fault and control-API rules of the provider simulators, over raw HTTP
 * (global fetch) against the email and accounting simulators started in-process on port 0.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { startEmailSimulator, type RunningEmailSimulator } from '../../../simulators/email/email-simulator.js';

const API_KEY = 'sim-key';
const email = { to: 'ada@example.com', subject: 'Hello', text: 'Hi there' };

interface Answer {
  status: number;
  headers: Headers;
  /** Parsed JSON; loosely typed so assertions can reach into it. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** One request to the simulator; JSON in, JSON (or problem+json) out. */
async function call(
  base: string,
  method: string,
  path: string,
  opts: { body?: unknown; key?: string; token?: string | null; rawBody?: string } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.key !== undefined) headers['idempotency-key'] = opts.key;
  if (opts.token !== null) headers.authorization = `Bearer ${opts.token ?? API_KEY}`;
  const res = await fetch(`${base}${path}`, {
    method,
    headers,
    ...(opts.rawBody !== undefined
      ? { body: opts.rawBody }
      : opts.body !== undefined
        ? { body: JSON.stringify(opts.body) }
        : {}),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
}

/** Asserts an RFC 9457 problem document with `status`. */
function expectProblem(answer: Answer, status: number): void {
  expect(answer.status).toBe(status);
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(answer.body).toMatchObject({
    type: expect.stringMatching(/^https:\/\//),
    title: expect.any(String),
    status,
    detail: expect.any(String),
  });
}

describe('idempotent simulator (email)', () => {
  let sim: RunningEmailSimulator;
  const post = (key: string | undefined, body: unknown = email, token?: string | null): Promise<Answer> =>
    call(sim.url, 'POST', '/v1/messages', {
      body,
      ...(key === undefined ? {} : { key }),
      ...(token === undefined ? {} : { token }),
    });

  beforeAll(async () => {
    sim = await startEmailSimulator({ apiKey: API_KEY });
  });
  afterAll(async () => {
    await sim.close();
  });
  beforeEach(() => {
    sim.reset();
  });

  describe('Idempotency-Key (draft-ietf-httpapi-idempotency-key-header)', () => {
    it('answers 400 problem+json when the header is missing, with no effect', async () => {
      const answer = await post(undefined);
      expectProblem(answer, 400);
      expect(answer.body.type).toContain('idempotency-key-missing');
      expect(sim.ledger.effects()).toHaveLength(0);
    });

    it('answers 400 when the key is empty or longer than 255 characters', async () => {
      expectProblem(await post(''), 400);
      expectProblem(await post('k'.repeat(256)), 400);
    });

    it('answers 202 and replays the stored response with Idempotent-Replayed: true, one effect', async () => {
      const first = await post('k1');
      expect(first.status).toBe(202);
      expect(first.body).toMatchObject({
        id: expect.stringMatching(/^msg_/),
        status: 'queued',
        to: email.to,
        idempotencyKey: 'k1',
      });
      expect(first.headers.get('idempotent-replayed')).toBeNull();

      const again = await post('k1', { text: email.text, subject: email.subject, to: email.to });
      expect(again.status).toBe(202);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(sim.ledger.count('k1')).toBe(1);
    });

    it('treats a quoted sf-string key like the bare key', async () => {
      const bare = await post('k-quoted');
      const quoted = await post('"k-quoted"');
      expect(quoted.body.id).toBe(bare.body.id);
      expect(quoted.headers.get('idempotent-replayed')).toBe('true');
    });

    it('answers 422 problem+json when the key is reused with a different payload', async () => {
      await post('k2');
      const answer = await post('k2', { ...email, subject: 'Something else' });
      expectProblem(answer, 422);
      expect(answer.body.type).toContain('idempotency-key-reused');
      expect(sim.ledger.count('k2')).toBe(1);
    });

    it('answers 409 problem+json while the first request with the key is in flight', async () => {
      sim.injectFault({ mode: 'slow', delayMs: 300 });
      const first = post('k3');
      // Wait until the first request has reached the simulator and taken the key.
      await expect.poll(() => sim.inFlightKeys()).toEqual(['k3']);
      expect(sim.ledger.count('k3')).toBe(0);

      const second = await post('k3');
      expectProblem(second, 409);
      expect(second.body.type).toContain('idempotency-key-in-flight');

      expect((await first).status).toBe(202);
      const third = await post('k3');
      expect(third.headers.get('idempotent-replayed')).toBe('true');
      expect(sim.ledger.count('k3')).toBe(1);
    });

    it('stores nothing for a request that fails validation, so the key can be used again', async () => {
      const invalid = await post('k4', { ...email, to: 'nope' });
      expectProblem(invalid, 422);
      expect(invalid.body.errors).toEqual([expect.objectContaining({ path: 'to' })]);

      const fixed = await post('k4');
      expect(fixed.status).toBe(202);
      expect(sim.ledger.count('k4')).toBe(1);
    });
  });

  describe('authentication (RFC 6750 bearer)', () => {
    it('answers 401 with WWW-Authenticate when Authorization is missing', async () => {
      const answer = await post('a1', email, null);
      expectProblem(answer, 401);
      expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer/);
      expect(sim.ledger.effects()).toHaveLength(0);
    });

    it('answers 401 for a token other than the configured apiKey', async () => {
      expectProblem(await post('a2', email, 'other'), 401);
    });

    it('accepts any bearer token when no apiKey is configured', async () => {
      const open = await startEmailSimulator();
      try {
        const answer = await call(open.url, 'POST', '/v1/messages', { body: email, key: 'a3', token: 'anything' });
        expect(answer.status).toBe(202);
      } finally {
        await open.close();
      }
    });

    it('guards reads too, and serves GET /v1/messages/:id', async () => {
      const sent = await post('a4');
      expectProblem(await call(sim.url, 'GET', `/v1/messages/${sent.body.id}`, { token: null }), 401);
      const read = await call(sim.url, 'GET', `/v1/messages/${sent.body.id}`);
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ id: sent.body.id, to: email.to, subject: email.subject, idempotencyKey: 'a4' });
      expectProblem(await call(sim.url, 'GET', '/v1/messages/msg_missing'), 404);
    });
  });

  describe('faults', () => {
    it('unavailable → 503, reject → 422, unauthorized → 401, each without an effect', async () => {
      sim.injectFault({ mode: 'unavailable' });
      sim.injectFault({ mode: 'reject' });
      sim.injectFault({ mode: 'unauthorized' });
      expectProblem(await post('f1'), 503);
      expectProblem(await post('f1'), 422);
      expectProblem(await post('f1'), 401);
      expect(sim.ledger.count('f1')).toBe(0);
      expect((await post('f1')).status).toBe(202);
      expect(sim.ledger.count('f1')).toBe(1);
    });

    it('honours times and keyPrefix', async () => {
      sim.injectFault({ mode: 'unavailable', times: 2, keyPrefix: 'order-confirmation:' });
      expect((await post('other:1')).status).toBe(202);
      expectProblem(await post('order-confirmation:1'), 503);
      expectProblem(await post('order-confirmation:1'), 503);
      expect((await post('order-confirmation:1')).status).toBe(202);
    });

    it('drop-response performs the effect, drops the answer, and the retry replays it', async () => {
      sim.injectFault({ mode: 'drop-response' });
      await expect(post('f3')).rejects.toThrow();
      expect(sim.ledger.count('f3')).toBe(1);

      const retry = await post('f3');
      expect(retry.status).toBe(202);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.body.id).toBe((sim.ledger.effects('f3')[0]?.response.body as { id: string }).id);
      expect(sim.ledger.count('f3')).toBe(1);
    });
  });

  describe('control API /_sim', () => {
    it('GET /_sim/health → 200', async () => {
      const answer = await call(sim.url, 'GET', '/_sim/health', { token: null });
      expect(answer.status).toBe(200);
      expect(answer.body).toMatchObject({ status: 'ok', name: 'email' });
    });

    it('GET /_sim/ledger and /_sim/ledger/:key (URL-encoded) report effects per key', async () => {
      const key = 'order-confirmation:ord/1?x#1';
      await post(key);
      await post(key);
      await post('other');

      const all = await call(sim.url, 'GET', '/_sim/ledger', { token: null });
      expect(all.status).toBe(200);
      expect(all.body.countsByKey).toEqual({ [key]: 1, other: 1 });
      expect(all.body.effects).toHaveLength(2);
      expect(all.body.effects[0]).toMatchObject({
        key,
        effectId: expect.stringMatching(/^eff_/),
        kind: 'email.sent',
        at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
        request: email,
        response: { status: 202, body: expect.objectContaining({ idempotencyKey: key }) },
      });

      const one = await call(sim.url, 'GET', `/_sim/ledger/${encodeURIComponent(key)}`, { token: null });
      expect(one.body).toMatchObject({ key, count: 1 });
      expect(one.body.effects).toHaveLength(1);

      const none = await call(sim.url, 'GET', '/_sim/ledger/never-used', { token: null });
      expect(none.body).toEqual({ key: 'never-used', count: 0, effects: [] });
    });

    it('POST /_sim/faults queues (201), validates (400), DELETE clears', async () => {
      const queued = await call(sim.url, 'POST', '/_sim/faults', {
        token: null,
        body: { mode: 'unavailable', times: 3 },
      });
      expect(queued.status).toBe(201);
      expect(queued.body).toMatchObject({ mode: 'unavailable', remaining: 3 });
      expectProblem(await call(sim.url, 'POST', '/_sim/faults', { token: null, body: { mode: 'explode' } }), 400);

      expectProblem(await post('c1'), 503);
      expect((await call(sim.url, 'GET', '/_sim/faults', { token: null })).body.faults).toEqual([
        expect.objectContaining({ remaining: 2 }),
      ]);
      expect((await call(sim.url, 'DELETE', '/_sim/faults', { token: null })).status).toBe(204);
      expect((await post('c1')).status).toBe(202);
    });

    it('POST /_sim/faults with slow defaults delayMs to 5000', async () => {
      const queued = await call(sim.url, 'POST', '/_sim/faults', { token: null, body: { mode: 'slow' } });
      expect(queued.body).toMatchObject({ mode: 'slow', remaining: 1, delayMs: 5000 });
    });

    it('POST /_sim/reset clears ledger, stored responses and faults', async () => {
      const first = await post('r1');
      sim.injectFault({ mode: 'unavailable' });
      expect((await call(sim.url, 'POST', '/_sim/reset', { token: null })).status).toBe(204);

      expect(sim.ledger.effects()).toHaveLength(0);
      const after = await post('r1');
      expect(after.status).toBe(202);
      expect(after.headers.get('idempotent-replayed')).toBeNull();
      expect(after.body.id).not.toBe(first.body.id);
    });
  });

  it('answers unknown routes with 404 and malformed JSON with 400, as problem+json', async () => {
    expectProblem(await call(sim.url, 'GET', '/v2/nothing'), 404);
    expectProblem(await call(sim.url, 'POST', '/v1/messages', { key: 'm1', rawBody: '{"to":' }), 400);
    expect(sim.ledger.effects()).toHaveLength(0);
  });
});
