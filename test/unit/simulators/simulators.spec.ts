/**
 * The simulator process (startSimulators over PROVIDER_LIST, in-process on port 0): every operation of every provider
 * under `/<name>` follows the same rules, over raw HTTP: the idempotency protocol (draft-ietf-httpapi-idempotency-key
 * -header: replay with `Idempotent-Replayed`, 409 in flight, 422 reused key, 400 missing or invalid key), bearer
 * authentication (RFC 6750), validation (422), the injectable faults, and the control API of each provider
 * (`/<name>/_sim`) and of the whole process (`/_sim`). Each provider's own answers: simulated-providers.spec.ts.
 *
 * Besides the registered providers, a test provider with operations that depend on each other (../../helpers/
 * test-payments.ts: a capture and a void of an authorization, with the authorization id in the path only) proves the
 * rules hold for such operations: each key of a test acts on an effect of its own, prepared first under setup keys
 * (liveSample), and a test counts only its own keys' effects.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PROVIDER_LIST } from '../../../providers/index.js';
import type { LedgerEffect } from '../../../simulators/shared/idempotent-simulator.js';
import { startSimulators, type RunningSimulators } from '../../../simulators/shared/simulator-server.js';
import { testProviderApiKeys } from '../../../scripts/lib/stack-definition.js';
import { isSetupKey, liveSample, operationSamples, type OperationSample } from '../../helpers/provider-samples.js';
import { expectProblem, simCall, type SimAnswer } from '../../helpers/sim-http.js';
import { testpay } from '../../helpers/test-payments.js';

const PROVIDERS = [...PROVIDER_LIST, testpay];
const API_KEYS = testProviderApiKeys(PROVIDERS);
const SAMPLES = operationSamples(PROVIDERS);
let sims: RunningSimulators;

beforeAll(async () => {
  sims = await startSimulators(PROVIDERS, { apiKeys: API_KEYS });
});
afterAll(() => sims?.close());
beforeEach(() => sims.reset());

/** Sends a (live) sample under `key` to its provider on `server` (default: the shared simulators), with its token. */
function sendSample(
  sample: OperationSample,
  key: string | undefined,
  options: { body?: unknown; token?: string | null; server?: RunningSimulators } = {},
): Promise<SimAnswer> {
  const server = options.server ?? sims;
  return simCall(sample.operation.method, `${server.url}/${sample.provider.name}${sample.path}`, {
    body: options.body ?? sample.body,
    token: options.token === undefined ? API_KEYS[sample.provider.name]! : options.token,
    ...(key === undefined ? {} : { key }),
  });
}

/** Performs a setup call of a chain (see liveSample) on `server`. @throws Error unless it answers 2xx. */
function performer(server: () => RunningSimulators) {
  return async (sample: OperationSample, key: string): Promise<unknown> => {
    const answer = await sendSample(sample, key, { server: server() });
    if (answer.status >= 300)
      throw new Error(`setup ${sample.id} (${key}): ${answer.status} ${JSON.stringify(answer.body)}`);
    return answer.body;
  };
}

/** `sample` ready to send under `key` on the shared simulators (its chain performed first). */
function ready(sample: OperationSample, key: string): Promise<OperationSample> {
  return liveSample(
    sample,
    SAMPLES,
    key,
    performer(() => sims),
  );
}

/** The effects a test caused itself (not the setup of a chain). */
function own(effects: LedgerEffect[]): LedgerEffect[] {
  return effects.filter((e) => !isSetupKey(e.key));
}

describe.each(SAMPLES)('$id', (sample) => {
  const name = sample.provider.name;
  const sim = () => sims.provider(name);
  const token = API_KEYS[name]!;
  /** The sample live for each key of the test (prepared once per key, and again after a reset). */
  const live = new Map<string, Promise<OperationSample>>();
  beforeEach(() => live.clear());
  /** The sample ready for `key`: call it before queuing a fault, so the chain's setup does not consume it. */
  const prepare = (key: string): Promise<OperationSample> => {
    if (!live.has(key)) live.set(key, ready(sample, key));
    return live.get(key)!;
  };
  /** The operation with `key` (none when undefined), its live body unless `body` is given, the provider's token. */
  const send = async (key: string | undefined, body?: unknown, bearer: string | null = token) =>
    sendSample(await prepare(key ?? 'no-key'), key, { body, token: bearer });
  /** This test's effects at the provider (a chain's setup effects left out). */
  const effects = () => own(sim().ledger.effects());

  describe('Idempotency-Key', () => {
    it('answers 400 problem+json when the header is missing, with no effect', async () => {
      expectProblem(await send(undefined), 400, 'idempotency-key-missing');
      expect(effects()).toHaveLength(0);
    });

    it('answers 400 when the key is empty or longer than 255 characters; 255 is fine', async () => {
      expectProblem(await send(''), 400, 'idempotency-key-invalid');
      expectProblem(await send('k'.repeat(256)), 400, 'idempotency-key-invalid');
      expect(effects()).toHaveLength(0);
      expect((await send('k'.repeat(255))).status).toBe(sample.answer.status);
    });

    it('performs once and replays the stored answer with Idempotent-Replayed: true', async () => {
      const first = await send('k1');
      expect(first.status).toBe(sample.answer.status);
      expect(first.headers.get('idempotent-replayed')).toBeNull();

      // The same request, its members in another order: the same fingerprint (canonical JSON).
      const reordered = Object.fromEntries(Object.entries((await prepare('k1')).body).reverse());
      const again = await send('k1', reordered);
      expect(again.status).toBe(first.status);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(sim().ledger.count('k1')).toBe(1);
    });

    it('treats a quoted sf-string key like the bare key', async () => {
      const prepared = await prepare('k-quoted');
      const bare = await sendSample(prepared, 'k-quoted');
      const quoted = await sendSample(prepared, '"k-quoted"');
      expect(quoted.body).toEqual(bare.body);
      expect(quoted.headers.get('idempotent-replayed')).toBe('true');
    });

    it('answers 422 problem+json when the key is reused with a different request', async () => {
      await send('k2');
      const different = { ...(await prepare('k2')).body, extra: 'different' };
      expectProblem(await send('k2', different), 422, 'idempotency-key-reused');
      expect(sim().ledger.count('k2')).toBe(1);
    });

    it('answers 409 problem+json while the first request with the key is in flight', async () => {
      await prepare('k3');
      sim().injectFault({ mode: 'slow', delayMs: 300 });
      const first = send('k3');
      await expect.poll(() => sim().inFlightKeys()).toEqual(['k3']);
      expect(sim().ledger.count('k3')).toBe(0);

      expectProblem(await send('k3'), 409, 'idempotency-key-in-flight');

      expect((await first).status).toBe(sample.answer.status);
      expect((await send('k3')).headers.get('idempotent-replayed')).toBe('true');
      expect(sim().ledger.count('k3')).toBe(1);
      expect(sim().inFlightKeys()).toEqual([]);
    });

    it('stores nothing for a request that fails validation (422), so the key can be used again', async () => {
      const invalid = await send('k4', sample.invalid.request);
      expectProblem(invalid, 422, 'validation-failed');
      expect(invalid.body.detail).toMatch(sample.invalid.detail);
      expect(invalid.body.errors).toEqual(
        expect.arrayContaining([expect.objectContaining({ path: expect.any(String) })]),
      );
      expect(sim().ledger.count('k4')).toBe(0);

      expect((await send('k4')).status).toBe(sample.answer.status);
      expect(sim().ledger.count('k4')).toBe(1);
    });
  });

  describe('authentication (RFC 6750 bearer)', () => {
    it('answers 401 with WWW-Authenticate when Authorization is missing, with no effect', async () => {
      const answer = await send('a1', undefined, null);
      expectProblem(answer, 401, 'unauthorized');
      expect(answer.headers.get('www-authenticate')).toBe(`Bearer realm="${name}"`);
      expect(effects()).toHaveLength(0);
    });

    it("answers 401 for another token, another provider's included", async () => {
      expectProblem(await send('a2', undefined, 'other'), 401);
      const another = Object.entries(API_KEYS).find(([provider]) => provider !== name)![1];
      expectProblem(await send('a2', undefined, another), 401);
      expect(effects()).toHaveLength(0);
    });
  });

  describe('faults', () => {
    it('unavailable → 503 with Retry-After, reject → 422, unauthorized → 401, each without an effect', async () => {
      await prepare('f1');
      sim().injectFault({ mode: 'unavailable' });
      sim().injectFault({ mode: 'reject' });
      sim().injectFault({ mode: 'unauthorized' });
      const unavailable = await send('f1');
      expectProblem(unavailable, 503, 'unavailable');
      expect(unavailable.headers.get('retry-after')).toBe('1');
      expectProblem(await send('f1'), 422, 'rejected');
      const unauthorized = await send('f1');
      expectProblem(unauthorized, 401, 'unauthorized');
      expect(unauthorized.headers.get('www-authenticate')).toContain('error="invalid_token"');
      expect(sim().ledger.count('f1')).toBe(0);
      expect((await send('f1')).status).toBe(sample.answer.status);
      expect(sim().ledger.count('f1')).toBe(1);
    });

    it('honours times and keyPrefix', async () => {
      sim().injectFault({ mode: 'unavailable', times: 2, keyPrefix: 'order:' });
      expect((await send('other:1')).status).toBe(sample.answer.status);
      expectProblem(await send('order:1'), 503);
      expectProblem(await send('order:1'), 503);
      // A second effect of the operation (the accounting system answers 200 for a replacement): any 2xx.
      expect(String((await send('order:1')).status)).toMatch(/^2\d\d$/);
      expect(Object.fromEntries(Object.entries(sim().ledger.countsByKey()).filter(([k]) => !isSetupKey(k)))).toEqual({
        'other:1': 1,
        'order:1': 1,
      });
    });

    it('slow waits, then performs as usual', async () => {
      await prepare('f2');
      sim().injectFault({ mode: 'slow', delayMs: 250 });
      const started = Date.now();
      expect((await send('f2')).status).toBe(sample.answer.status);
      expect(Date.now() - started).toBeGreaterThanOrEqual(240);
      expect(sim().ledger.count('f2')).toBe(1);
    });

    it('drop-response performs the effect, drops the answer, and the retry replays it', async () => {
      await prepare('f3');
      sim().injectFault({ mode: 'drop-response' });
      await expect(send('f3')).rejects.toThrow();
      expect(sim().ledger.count('f3')).toBe(1);

      const retry = await send('f3');
      expect(retry.status).toBe(sample.answer.status);
      expect(retry.headers.get('idempotent-replayed')).toBe('true');
      expect(retry.body).toEqual(sim().ledger.effects('f3')[0]!.response.body);
      expect(sim().ledger.count('f3')).toBe(1);
    });

    it("are the provider's own: the others answer as usual", async () => {
      const others = await Promise.all(
        SAMPLES.filter((s) => s.provider.name !== name).map((other) => ready(other, `f4:${other.id}`)),
      );
      sim().injectFault({ mode: 'unavailable', times: 10 });
      for (const other of others) {
        const answer = await sendSample(other, `f4:${other.id}`);
        expect([other.id, answer.status]).toEqual([other.id, other.answer.status]);
      }
      expect(effects()).toEqual([]);
    });
  });

  describe(`control API /${name}/_sim`, () => {
    const control = (method: string, path: string, body?: unknown) =>
      simCall(method, `${sims.url}/${name}/_sim${path}`, body === undefined ? {} : { body });

    it('GET /_sim/health → 200 with the provider name, no credentials needed', async () => {
      const answer = await control('GET', '/health');
      expect([answer.status, answer.body]).toEqual([200, { status: 'ok', name }]);
    });

    it('GET /_sim/ledger and /_sim/ledger/:key (URL-encoded) report effects per key', async () => {
      const key = 'order-confirmation:ord/1?x#1';
      await send(key);
      await send(key);
      await send('other');

      const all = await control('GET', '/ledger');
      expect(all.status).toBe(200);
      const countsByKey = Object.fromEntries(
        Object.entries(all.body.countsByKey as Record<string, number>).filter(([k]) => !isSetupKey(k)),
      );
      expect(countsByKey).toEqual({ [key]: 1, other: 1 });
      const mine = own(all.body.effects as LedgerEffect[]);
      expect(mine).toHaveLength(2);
      expect(mine[0]).toMatchObject({
        key,
        effectId: expect.stringMatching(/^eff_[0-9a-f]{32}$/),
        kind: expect.stringMatching(/^[a-z]+\.[a-z]+$/),
        at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
        request: (await prepare(key)).body,
        response: { status: sample.answer.status, body: expect.any(Object) },
      });

      const one = await control('GET', `/ledger/${encodeURIComponent(key)}`);
      expect(one.body).toMatchObject({ key, count: 1 });
      expect(one.body.effects).toEqual([mine[0]]);
      expect((await control('GET', '/ledger/never-used')).body).toEqual({ key: 'never-used', count: 0, effects: [] });
    });

    it('POST /_sim/faults queues (201), validates (400); GET lists; DELETE clears (204)', async () => {
      await prepare('c1');
      const queued = await control('POST', '/faults', { mode: 'unavailable', times: 3 });
      expect(queued.status).toBe(201);
      expect(queued.body).toMatchObject({ id: expect.stringMatching(/^flt_/), mode: 'unavailable', remaining: 3 });
      expectProblem(await control('POST', '/faults', { mode: 'explode' }), 400, 'invalid-fault');
      expectProblem(await control('POST', '/faults', { mode: 'slow', times: 0 }), 400, 'invalid-fault');

      expectProblem(await send('c1'), 503);
      expect((await control('GET', '/faults')).body.faults).toEqual([
        expect.objectContaining({ id: queued.body.id, remaining: 2 }),
      ]);
      expect((await control('DELETE', '/faults')).status).toBe(204);
      expect((await control('GET', '/faults')).body.faults).toEqual([]);
      expect((await send('c1')).status).toBe(sample.answer.status);
    });

    it('POST /_sim/faults with slow defaults delayMs to 5000', async () => {
      const queued = await control('POST', '/faults', { mode: 'slow' });
      expect(queued.body).toMatchObject({ mode: 'slow', remaining: 1, delayMs: 5000 });
      await control('DELETE', '/faults');
    });

    it("POST /_sim/reset clears this provider's ledger, stored answers, faults and state, and no other's", async () => {
      const first = await send('r1');
      const others = SAMPLES.filter((s) => s.provider.name !== name);
      for (const other of others) await sendSample(await ready(other, `r1:${other.id}`), `r1:${other.id}`);
      sim().injectFault({ mode: 'unavailable' });
      expect(sim().state().size).toBeGreaterThan(0);

      expect((await control('POST', '/reset')).status).toBe(204);
      expect(sim().ledger.effects()).toHaveLength(0);
      expect(sim().state().size).toBe(0);
      live.clear(); // the reset forgot what the chain of r1 created: prepare it again
      const after = await send('r1');
      expect(after.status).toBe(sample.answer.status); // the fault went too
      expect(after.headers.get('idempotent-replayed')).toBeNull();
      expect(after.body).not.toEqual(first.body);
      for (const other of others) expect(sims.provider(other.provider.name).ledger.count(`r1:${other.id}`)).toBe(1);
    });
  });

  it('answers unknown routes with 404 and malformed JSON with 400, as problem+json', async () => {
    const prepared = await prepare('m1');
    expectProblem(await simCall('GET', `${sims.url}/${name}/v2/nothing`, { token }), 404, 'not-found');
    expectProblem(
      await simCall(sample.operation.method, `${sims.url}/${name}${prepared.path}`, {
        key: 'm1',
        token,
        rawBody: '{"to":',
      }),
      400,
      'bad-request',
    );
    expect(effects()).toHaveLength(0);
  });
});

describe('the simulator process', () => {
  it('serves every provider under /<name>, and its health at /_sim/health', async () => {
    expect(Object.keys(sims.providers)).toEqual(PROVIDERS.map((p) => p.name));
    for (const provider of PROVIDERS) {
      expect(sims.provider(provider.name).url).toBe(`${sims.url}/${provider.name}`);
    }
    const health = await simCall('GET', `${sims.url}/_sim/health`);
    expect([health.status, health.body]).toEqual([200, { status: 'ok', providers: PROVIDERS.map((p) => p.name) }]);
    expect(() => sims.provider('fax')).toThrow(
      `no simulated provider fax (served: ${PROVIDERS.map((p) => p.name).join(', ')})`,
    );
    expectProblem(await simCall('GET', `${sims.url}/fax/v1/anything`), 404, 'not-found');
  });

  it('POST /_sim/reset at the root clears every provider', async () => {
    // Each operation under a key of its own: two operations of one provider never share a key.
    const keyOf = (sample: OperationSample) => `all-1:${sample.id}`;
    for (const sample of SAMPLES) {
      expect((await sendSample(await ready(sample, keyOf(sample)), keyOf(sample))).status).toBe(sample.answer.status);
    }
    for (const provider of PROVIDERS) sims.provider(provider.name).injectFault({ mode: 'unavailable' });
    expect(SAMPLES.map((s) => sims.provider(s.provider.name).ledger.count(keyOf(s)))).toEqual(SAMPLES.map(() => 1));

    expect((await simCall('POST', `${sims.url}/_sim/reset`)).status).toBe(204);
    for (const provider of PROVIDERS) {
      const sim = sims.provider(provider.name);
      expect(sim.ledger.effects()).toEqual([]);
      expect(sim.state().size).toBe(0);
    }
    for (const sample of SAMPLES) {
      const again = await sendSample(await ready(sample, keyOf(sample)), keyOf(sample));
      expect([sample.id, again.status, again.headers.get('idempotent-replayed')]).toEqual([
        sample.id,
        sample.answer.status,
        null,
      ]);
    }
  });

  it('accepts any bearer token for a provider without a configured key', async () => {
    const open = await startSimulators(PROVIDERS);
    try {
      for (const sample of SAMPLES) {
        // Each operation under keys of its own: two operations of one provider never share a key.
        const key = `open-1:${sample.id}`;
        const prepared = await liveSample(sample, SAMPLES, key, async (s, setupKey) => {
          const answer = await sendSample(s, setupKey, { server: open, token: 'anything' });
          return answer.body;
        });
        const answer = await sendSample(prepared, key, { server: open, token: 'anything' });
        expect([sample.id, answer.status]).toEqual([sample.id, sample.answer.status]);
        expectProblem(await sendSample(prepared, `open-2:${sample.id}`, { server: open, token: null }), 401);
      }
    } finally {
      await open.close();
    }
  });

  it('closes idempotently, cancelling a pending slow request', async () => {
    const closing = await startSimulators(PROVIDERS);
    const [sample] = SAMPLES;
    closing.provider(sample!.provider.name).injectFault({ mode: 'slow', delayMs: 60_000 });
    const pending = sendSample(sample!, 'slow-1', { server: closing, token: 't' }).catch((err: unknown) => err);
    await expect.poll(() => closing.provider(sample!.provider.name).inFlightKeys()).toEqual(['slow-1']);
    const started = Date.now();
    await Promise.all([closing.close(), closing.close()]);
    expect(await pending).toBeInstanceOf(Error);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(closing.provider(sample!.provider.name).ledger.effects()).toEqual([]);
  });
});

describe('a slow simulated answer (Simulated.delayMs)', () => {
  it('performs at once, keeps the key in flight (409) until it answers, then replays', async () => {
    const slow = await startSimulators([
      {
        ...testpay,
        name: 'slowpay',
        operations: {
          authorize: {
            ...testpay.operations.authorize,
            simulate: (ctx) => ({ ...testpay.operations.authorize.simulate(ctx), delayMs: 400 }),
          },
        },
      },
    ]);
    try {
      const sample = SAMPLES.find((s) => s.id === 'testpay.authorize')!;
      const url = `${slow.url}/slowpay${sample.path}`;
      const call = () => simCall('POST', url, { body: sample.body, key: 'd1', token: 't' });
      const first = call();
      await expect.poll(() => slow.provider('slowpay').inFlightKeys()).toEqual(['d1']);
      expect(slow.provider('slowpay').ledger.count('d1')).toBe(1);
      expectProblem(await call(), 409, 'idempotency-key-in-flight');
      expect((await first).status).toBe(201);
      const replay = await call();
      expect([replay.status, replay.headers.get('idempotent-replayed')]).toEqual([201, 'true']);
      expect(slow.provider('slowpay').ledger.count('d1')).toBe(1);
    } finally {
      await slow.close();
    }
  });
});
