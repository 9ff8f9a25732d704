/**
 * The simulator process (startSimulators over PROVIDER_LIST, in-process on port 0): every operation of every provider
 * under `/<name>` follows the same rules, over raw HTTP: the idempotency protocol (draft-ietf-httpapi-idempotency-key
 * -header: replay with `Idempotent-Replayed`, 409 in flight, 422 reused key, 400 missing or invalid key), bearer
 * authentication (RFC 6750), validation (422), the injectable faults, and the control API of each provider
 * (`/<name>/_sim`) and of the whole process (`/_sim`). Each provider's own answers: simulated-providers.spec.ts.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PROVIDER_LIST } from '../../../providers/index.js';
import { startSimulators, type RunningSimulators } from '../../../simulators/shared/idempotent-simulator.js';
import { testProviderApiKeys } from '../../../scripts/lib/stack-definition.js';
import { operationSamples } from '../../helpers/provider-samples.js';
import { expectProblem, simCall } from '../../helpers/sim-http.js';

const API_KEYS = testProviderApiKeys(PROVIDER_LIST);
const SAMPLES = operationSamples();
let sims: RunningSimulators;

beforeAll(async () => {
  sims = await startSimulators(PROVIDER_LIST, { apiKeys: API_KEYS });
});
afterAll(() => sims?.close());
beforeEach(() => sims.reset());

describe.each(SAMPLES)('$id', (sample) => {
  const name = sample.provider.name;
  const sim = () => sims.provider(name);
  const url = () => `${sims.url}/${name}${sample.path}`;
  const token = API_KEYS[name]!;
  /** The operation with `key` (none when undefined), the sample body unless `body` is given, the provider's token. */
  const send = (key: string | undefined, body: unknown = sample.body, bearer: string | null = token) =>
    simCall(sample.operation.method, url(), { body, token: bearer, ...(key === undefined ? {} : { key }) });

  describe('Idempotency-Key', () => {
    it('answers 400 problem+json when the header is missing, with no effect', async () => {
      expectProblem(await send(undefined), 400, 'idempotency-key-missing');
      expect(sim().ledger.effects()).toHaveLength(0);
    });

    it('answers 400 when the key is empty or longer than 255 characters; 255 is fine', async () => {
      expectProblem(await send(''), 400, 'idempotency-key-invalid');
      expectProblem(await send('k'.repeat(256)), 400, 'idempotency-key-invalid');
      expect(sim().ledger.effects()).toHaveLength(0);
      expect((await send('k'.repeat(255))).status).toBe(sample.answer.status);
    });

    it('performs once and replays the stored answer with Idempotent-Replayed: true', async () => {
      const first = await send('k1');
      expect(first.status).toBe(sample.answer.status);
      expect(first.headers.get('idempotent-replayed')).toBeNull();

      // The same request, its members in another order: the same fingerprint (canonical JSON).
      const reordered = Object.fromEntries(Object.entries(sample.body).reverse());
      const again = await send('k1', reordered);
      expect(again.status).toBe(first.status);
      expect(again.body).toEqual(first.body);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(sim().ledger.count('k1')).toBe(1);
    });

    it('treats a quoted sf-string key like the bare key', async () => {
      const bare = await send('k-quoted');
      const quoted = await send('"k-quoted"');
      expect(quoted.body).toEqual(bare.body);
      expect(quoted.headers.get('idempotent-replayed')).toBe('true');
    });

    it('answers 422 problem+json when the key is reused with a different request', async () => {
      await send('k2');
      expectProblem(await send('k2', { ...sample.body, extra: 'different' }), 422, 'idempotency-key-reused');
      expect(sim().ledger.count('k2')).toBe(1);
    });

    it('answers 409 problem+json while the first request with the key is in flight', async () => {
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
      const answer = await send('a1', sample.body, null);
      expectProblem(answer, 401, 'unauthorized');
      expect(answer.headers.get('www-authenticate')).toBe(`Bearer realm="${name}"`);
      expect(sim().ledger.effects()).toHaveLength(0);
    });

    it("answers 401 for another token, another provider's included", async () => {
      expectProblem(await send('a2', sample.body, 'other'), 401);
      const another = Object.entries(API_KEYS).find(([provider]) => provider !== name)![1];
      expectProblem(await send('a2', sample.body, another), 401);
      expect(sim().ledger.effects()).toHaveLength(0);
    });
  });

  describe('faults', () => {
    it('unavailable → 503 with Retry-After, reject → 422, unauthorized → 401, each without an effect', async () => {
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
      expect(sim().ledger.countsByKey()).toEqual({ 'other:1': 1, 'order:1': 1 });
    });

    it('slow waits, then performs as usual', async () => {
      sim().injectFault({ mode: 'slow', delayMs: 250 });
      const started = Date.now();
      expect((await send('f2')).status).toBe(sample.answer.status);
      expect(Date.now() - started).toBeGreaterThanOrEqual(240);
      expect(sim().ledger.count('f2')).toBe(1);
    });

    it('drop-response performs the effect, drops the answer, and the retry replays it', async () => {
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
      sim().injectFault({ mode: 'unavailable', times: 10 });
      for (const other of SAMPLES.filter((s) => s.provider.name !== name)) {
        const answer = await simCall(other.operation.method, `${sims.url}/${other.provider.name}${other.path}`, {
          body: other.body,
          key: 'f4',
          token: API_KEYS[other.provider.name]!,
        });
        expect([other.id, answer.status]).toEqual([other.id, other.answer.status]);
      }
      expect(sim().ledger.effects()).toEqual([]);
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
      expect(all.body.countsByKey).toEqual({ [key]: 1, other: 1 });
      expect(all.body.effects).toHaveLength(2);
      expect(all.body.effects[0]).toMatchObject({
        key,
        effectId: expect.stringMatching(/^eff_[0-9a-f]{32}$/),
        kind: expect.stringMatching(/^[a-z]+\.[a-z]+$/),
        at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
        request: sample.body,
        response: { status: sample.answer.status, body: expect.any(Object) },
      });

      const one = await control('GET', `/ledger/${encodeURIComponent(key)}`);
      expect(one.body).toMatchObject({ key, count: 1 });
      expect(one.body.effects).toEqual([all.body.effects[0]]);
      expect((await control('GET', '/ledger/never-used')).body).toEqual({ key: 'never-used', count: 0, effects: [] });
    });

    it('POST /_sim/faults queues (201), validates (400); GET lists; DELETE clears (204)', async () => {
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
      for (const other of others) {
        await simCall(other.operation.method, `${sims.url}/${other.provider.name}${other.path}`, {
          body: other.body,
          key: 'r1',
          token: API_KEYS[other.provider.name]!,
        });
      }
      sim().injectFault({ mode: 'unavailable' });
      expect(sim().state().size).toBeGreaterThan(0);

      expect((await control('POST', '/reset')).status).toBe(204);
      expect(sim().ledger.effects()).toHaveLength(0);
      expect(sim().state().size).toBe(0);
      const after = await send('r1');
      expect(after.status).toBe(sample.answer.status); // the fault went too
      expect(after.headers.get('idempotent-replayed')).toBeNull();
      expect(after.body).not.toEqual(first.body);
      for (const other of others) expect(sims.provider(other.provider.name).ledger.count('r1')).toBe(1);
    });
  });

  it('answers unknown routes with 404 and malformed JSON with 400, as problem+json', async () => {
    expectProblem(await simCall('GET', `${sims.url}/${name}/v2/nothing`, { token }), 404, 'not-found');
    expectProblem(
      await simCall(sample.operation.method, url(), { key: 'm1', token, rawBody: '{"to":' }),
      400,
      'bad-request',
    );
    expect(sim().ledger.effects()).toHaveLength(0);
  });
});

describe('the simulator process', () => {
  it('serves every registered provider under /<name>, and its health at /_sim/health', async () => {
    expect(Object.keys(sims.providers)).toEqual(PROVIDER_LIST.map((p) => p.name));
    for (const provider of PROVIDER_LIST) {
      expect(sims.provider(provider.name).url).toBe(`${sims.url}/${provider.name}`);
    }
    const health = await simCall('GET', `${sims.url}/_sim/health`);
    expect([health.status, health.body]).toEqual([200, { status: 'ok', providers: PROVIDER_LIST.map((p) => p.name) }]);
    expect(() => sims.provider('fax')).toThrow(
      `no simulated provider fax (served: ${PROVIDER_LIST.map((p) => p.name).join(', ')})`,
    );
    expectProblem(await simCall('GET', `${sims.url}/fax/v1/anything`), 404, 'not-found');
  });

  it('POST /_sim/reset at the root clears every provider', async () => {
    for (const sample of SAMPLES) {
      await simCall(sample.operation.method, `${sims.url}/${sample.provider.name}${sample.path}`, {
        body: sample.body,
        key: 'all-1',
        token: API_KEYS[sample.provider.name]!,
      });
      sims.provider(sample.provider.name).injectFault({ mode: 'unavailable' });
    }
    expect(PROVIDER_LIST.map((p) => sims.provider(p.name).ledger.count('all-1'))).toEqual(PROVIDER_LIST.map(() => 1));

    expect((await simCall('POST', `${sims.url}/_sim/reset`)).status).toBe(204);
    for (const sample of SAMPLES) {
      const sim = sims.provider(sample.provider.name);
      expect(sim.ledger.effects()).toEqual([]);
      expect(sim.state().size).toBe(0);
      const again = await simCall(sample.operation.method, `${sims.url}/${sample.provider.name}${sample.path}`, {
        body: sample.body,
        key: 'all-1',
        token: API_KEYS[sample.provider.name]!,
      });
      expect([sample.id, again.status, again.headers.get('idempotent-replayed')]).toEqual([
        sample.id,
        sample.answer.status,
        null,
      ]);
    }
  });

  it('accepts any bearer token for a provider without a configured key', async () => {
    const open = await startSimulators(PROVIDER_LIST);
    try {
      for (const sample of SAMPLES) {
        const answer = await simCall(sample.operation.method, `${open.url}/${sample.provider.name}${sample.path}`, {
          body: sample.body,
          key: 'open-1',
          token: 'anything',
        });
        expect([sample.id, answer.status]).toEqual([sample.id, sample.answer.status]);
        expectProblem(
          await simCall(sample.operation.method, `${open.url}/${sample.provider.name}${sample.path}`, {
            body: sample.body,
            key: 'open-2',
            token: null,
          }),
          401,
        );
      }
    } finally {
      await open.close();
    }
  });

  it('closes idempotently, cancelling a pending slow request', async () => {
    const closing = await startSimulators(PROVIDER_LIST);
    const [sample] = SAMPLES;
    closing.provider(sample!.provider.name).injectFault({ mode: 'slow', delayMs: 60_000 });
    const pending = simCall(sample!.operation.method, `${closing.url}/${sample!.provider.name}${sample!.path}`, {
      body: sample!.body,
      key: 'slow-1',
      token: 't',
    }).catch((err: unknown) => err);
    await expect.poll(() => closing.provider(sample!.provider.name).inFlightKeys()).toEqual(['slow-1']);
    const started = Date.now();
    await Promise.all([closing.close(), closing.close()]);
    expect(await pending).toBeInstanceOf(Error);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(closing.provider(sample!.provider.name).ledger.effects()).toEqual([]);
  });
});
