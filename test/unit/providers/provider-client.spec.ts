/**
 * createProviderClient (providers/kit/define.ts over providers/kit/http.ts), for every operation of every registered
 * provider: what it sends (method, path with its parameters percent-encoded, JSON body with the provider's settings,
 * `Idempotency-Key` and the bearer token on every call), how it classifies every failure (kind, status, mayHaveActed),
 * against a recording HTTP server on a random local port; and the idempotency round trips (replay, lost answer,
 * timeout then 409 then replay) against the real simulator of the provider. Besides the registered providers, a test
 * provider whose operations depend on each other and keep the path's members out of the body
 * (../../helpers/test-payments.ts) proves the client serves such operations; and a request that is never sent (no
 * member for its path, a body that is not JSON, a URL that is not http(s), a host that does not resolve, a refused
 * connection) is a ProviderError that did not act.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PROVIDER_LIST } from '../../../providers/index.js';
import { createProviderClient } from '../../../providers/kit/client.js';
import { pathParams, type ProviderAnswer } from '../../../providers/kit/define.js';
import type { ProviderFailureKind } from '../../../providers/kit/errors.js';
import { startSimulators, type RunningSimulators } from '../../../simulators/shared/simulator-server.js';
import { providerError } from '../../helpers/provider-error.js';
import { liveSample, operationSamples, type OperationSample } from '../../helpers/provider-samples.js';
import { testpay } from '../../helpers/test-payments.js';

/** A request as the recording server received it. */
interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** What the recording server answers: status, headers, raw body; or a delay before answering. */
interface Script {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  delayMs?: number;
}

/** An HTTP server that records every request and answers what the test scripted. */
class RecordingServer {
  readonly received: Received[] = [];
  script: Script = { status: 200, body: '{}' };
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let body = '';
      req.on('data', (chunk: Buffer) => (body += chunk.toString()));
      req.on('end', () => {
        this.received.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        const { status, headers = {}, body: answer = '', delayMs = 0 } = this.script;
        setTimeout(() => {
          if (res.destroyed) return;
          res.writeHead(status, headers).end(answer);
        }, delayMs);
      });
    });
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** Answers `status` with `body` as JSON (or problem+json for an error with a `detail`). */
  answerJson(status: number, body: unknown, headers: Record<string, string> = {}): void {
    const problem = typeof body === 'object' && body !== null && 'detail' in body;
    this.script = {
      status,
      headers: { 'content-type': problem ? 'application/problem+json' : 'application/json', ...headers },
      body: JSON.stringify(body),
    };
  }

  reset(): void {
    this.received.length = 0;
    this.script = { status: 200, body: '{}' };
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

const API_KEY = 'test-provider-key';
const PROVIDERS = [...PROVIDER_LIST, testpay];
const SAMPLES = operationSamples(PROVIDERS);

it('has a sample of every operation of every registered provider (and of the test provider)', () => {
  const operations = PROVIDERS.flatMap((p) => Object.keys(p.operations).map((o) => `${p.name}.${o}`));
  expect(SAMPLES.map((s) => s.id)).toEqual(operations);
  expect(operations.length).toBeGreaterThanOrEqual(3);
});

/** A client of the sample's provider at `baseUrl`, its method for the sample's operation. */
function call(
  sample: OperationSample,
  baseUrl: string,
  options: { apiKey?: string; timeoutMs?: number } = {},
): (request: unknown, key: string) => Promise<ProviderAnswer> {
  const client = createProviderClient(sample.provider, {
    baseUrl,
    apiKey: options.apiKey ?? API_KEY,
    timeoutMs: options.timeoutMs ?? 2_000,
    settings: sample.settings,
  });
  return client[sample.name] as (request: unknown, key: string) => Promise<ProviderAnswer>;
}

describe.each(SAMPLES)('$id: on the wire', (sample) => {
  const server = new RecordingServer();
  beforeAll(() => server.start());
  afterAll(() => server.close());
  beforeEach(() => server.reset());

  it('sends the method, the path, the JSON body with the settings, the key and the bearer token on every call', async () => {
    server.answerJson(sample.answer.status, sample.answer.body);
    const send = call(sample, server.url);
    await send(sample.request, 'key-1');
    await send(sample.request, 'key-2');
    expect(server.received).toHaveLength(2);
    for (const [i, received] of server.received.entries()) {
      expect(received.method).toBe(sample.operation.method);
      expect(received.url).toBe(sample.path);
      expect(JSON.parse(received.body)).toEqual(sample.body);
      expect(received.headers).toMatchObject({
        'content-type': 'application/json',
        authorization: `Bearer ${API_KEY}`,
        'idempotency-key': `key-${i + 1}`,
        accept: expect.stringContaining('application/json'),
      });
    }
  });

  it('keeps a path prefix of the base URL and ignores its trailing slash', async () => {
    server.answerJson(sample.answer.status, sample.answer.body);
    await call(sample, `${server.url}/tenant-7//`)(sample.request, 'key-1');
    expect(server.received[0]!.url).toBe(`/tenant-7${sample.path}`);
  });

  it('returns the parsed answer, its status and the provider id', async () => {
    server.answerJson(sample.answer.status, { ...sample.answer.body, extra: 'kept or dropped by the schema' });
    const answer = await call(sample, server.url)(sample.request, 'key-1');
    expect(answer.status).toBe(sample.answer.status);
    expect(answer.providerId).toBe(sample.answer.providerId);
    expect(answer.response).toMatchObject(sample.answer.body);
  });

  it.each([
    [500, 'unavailable', true],
    [502, 'unavailable', true],
    [503, 'unavailable', false],
    [504, 'unavailable', true],
    [408, 'unavailable', false],
    [425, 'unavailable', false],
    [429, 'unavailable', false],
    [409, 'conflict', true],
    [401, 'unauthorized', false],
    [403, 'unauthorized', false],
    [400, 'rejected', false],
    [404, 'rejected', false],
    [422, 'rejected', false],
  ] as Array<[number, ProviderFailureKind, boolean]>)(
    'classifies %i as %s (mayHaveActed %s), naming the call and the problem detail',
    async (status, kind, mayHaveActed) => {
      server.answerJson(status, { type: 'about:blank', title: 'Nope', status, detail: `detail of ${status}` });
      const error = await providerError(() => call(sample, server.url)(sample.request, 'key-1'));
      expect({ kind: error.kind, status: error.status, mayHaveActed: error.mayHaveActed }).toEqual({
        kind,
        status,
        mayHaveActed,
      });
      expect(error.message).toContain(`${sample.provider.name} provider ${sample.operation.method} ${sample.path}`);
      expect(error.message).toContain(`→ ${status} (${kind}): detail of ${status}`);
    },
  );

  it('carries a problem title, else the raw body, when there is no detail', async () => {
    server.answerJson(422, { title: 'Unprocessable invoice' });
    expect((await providerError(() => call(sample, server.url)(sample.request, 'k'))).message).toContain(
      'Unprocessable invoice',
    );
    server.script = { status: 502, headers: { 'content-type': 'text/html' }, body: '<h1>Bad gateway</h1>' };
    expect((await providerError(() => call(sample, server.url)(sample.request, 'k'))).message).toContain(
      '<h1>Bad gateway</h1>',
    );
  });

  it.each([
    ['does not match the response schema', { 'content-type': 'application/json' }, '{"unexpected":true}'],
    ['is not JSON', { 'content-type': 'text/plain' }, 'OK'],
    ['is empty', {}, ''],
  ])('treats a 2xx answer that %s as unavailable that may have acted', async (_what, headers, body) => {
    server.script = { status: sample.answer.status, headers, body };
    const error = await providerError(() => call(sample, server.url)(sample.request, 'key-1'));
    expect({ kind: error.kind, status: error.status, mayHaveActed: error.mayHaveActed }).toEqual({
      kind: 'unavailable',
      status: sample.answer.status,
      mayHaveActed: true,
    });
  });

  it('refuses to follow a redirect (the request is not re-sent elsewhere)', async () => {
    server.script = { status: 307, headers: { location: `${server.url}/elsewhere` } };
    const error = await providerError(() => call(sample, server.url)(sample.request, 'key-1'));
    expect([error.kind, error.status]).toEqual(['unavailable', undefined]);
    expect(server.received.map((r) => r.url)).toEqual([sample.path]);
  });

  it('maps a timeout to unavailable that may have acted', async () => {
    server.answerJson(sample.answer.status, sample.answer.body);
    server.script.delayMs = 1_000;
    const error = await providerError(() => call(sample, server.url, { timeoutMs: 100 })(sample.request, 'key-1'));
    expect({ kind: error.kind, status: error.status, mayHaveActed: error.mayHaveActed }).toEqual({
      kind: 'unavailable',
      status: undefined,
      mayHaveActed: true,
    });
    expect(error.message).toContain('timed out after 100 ms');
  });

  it('maps a refused connection to unavailable that did not act (nothing was sent)', async () => {
    const gone = new RecordingServer();
    await gone.start();
    await gone.close();
    const error = await providerError(() => call(sample, gone.url)(sample.request, 'key-1'));
    expect({ kind: error.kind, status: error.status, mayHaveActed: error.mayHaveActed }).toEqual({
      kind: 'unavailable',
      status: undefined,
      mayHaveActed: false,
    });
  });
});

describe('a request that is never sent is a ProviderError that did not act', () => {
  const [sample] = SAMPLES;
  const client = (baseUrl: string) => call(sample!, baseUrl);

  it.each([
    ['a host name that does not resolve (DNS)', 'http://no-such-host.invalid', 'unavailable', /ENOTFOUND|EAI_AGAIN/],
    ['a URL that does not parse', 'http//missing-colon', 'rejected', /cannot be sent: .* is not an http\(s\) URL/],
    ['a URL that is not http(s)', 'ftp://127.0.0.1:21', 'rejected', /cannot be sent: .* is not an http\(s\) URL/],
  ] as Array<[string, string, ProviderFailureKind, RegExp]>)('%s', async (_what, baseUrl, kind, message) => {
    const error = await providerError(() => client(baseUrl)(sample!.request, 'key-1'));
    expect({ kind: error.kind, status: error.status, mayHaveActed: error.mayHaveActed }).toEqual({
      kind,
      status: undefined,
      mayHaveActed: false,
    });
    expect(error.message).toMatch(message);
  });

  it('a body that cannot be serialised as JSON (rejected, nothing sent)', async () => {
    const server = new RecordingServer();
    await server.start();
    try {
      const error = await providerError(() => client(server.url)({ ...sample!.request, amount: 1n }, 'key-1'));
      expect([error.kind, error.status, error.mayHaveActed]).toEqual(['rejected', undefined, false]);
      expect(error.message).toMatch(/cannot be sent: the body is not JSON/);
      expect(server.received).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('a request without the member its path needs (rejected, nothing sent)', async () => {
    const server = new RecordingServer();
    await server.start();
    try {
      const capture = createProviderClient(testpay, { baseUrl: server.url, apiKey: API_KEY, timeoutMs: 2_000 });
      const error = await providerError(() =>
        capture.capture({ amountMinor: 100 } as unknown as Parameters<typeof capture.capture>[0], 'key-1'),
      );
      expect([error.kind, error.status, error.mayHaveActed]).toEqual(['rejected', undefined, false]);
      expect(error.message).toContain('it has no authorizationId for the path');
      expect(server.received).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it("keeps the path's members out of the body when the operation says paramsInBody: false", async () => {
    const server = new RecordingServer();
    await server.start();
    try {
      server.answerJson(201, { id: 'cap_1', authorizationId: 'auth/1', amountMinor: 100 });
      const client = createProviderClient(testpay, { baseUrl: server.url, apiKey: API_KEY, timeoutMs: 2_000 });
      await client.capture({ authorizationId: 'auth/1', amountMinor: 100 }, 'key-1');
      expect(server.received.map((r) => [r.url, JSON.parse(r.body)])).toEqual([
        ['/v1/authorizations/auth%2F1/capture', { amountMinor: 100 }],
      ]);
    } finally {
      await server.close();
    }
  });
});

describe.each(SAMPLES)('$id: against its simulator', (sample) => {
  let sims: RunningSimulators;
  const sim = () => sims.provider(sample.provider.name);
  const send = (options: { apiKey?: string; timeoutMs?: number } = {}) => call(sample, sim().url, options);
  const idOf = (key: string) => (sim().ledger.effects(key)[0]?.response.body as { id: string } | undefined)?.id;
  /** The sample for `key` (a chained sample's earlier operations performed first, through the client). */
  const prepared = (key: string) =>
    liveSample(sample, SAMPLES, key, async (earlier, setupKey) => {
      const answer = await call(earlier, sim().url)(earlier.request, setupKey);
      return answer.response;
    });
  const request = async (key: string) => (await prepared(key)).request;

  beforeAll(async () => {
    sims = await startSimulators(PROVIDERS, { apiKeys: { [sample.provider.name]: API_KEY } });
  });
  afterAll(() => sims.close());
  beforeEach(() => sims.reset());

  it('performs the operation once and returns the id the provider recorded', async () => {
    const live = await prepared('k1');
    const answer = await send()(live.request, 'k1');
    const [effect] = sim().ledger.effects('k1');
    expect(sim().ledger.count('k1')).toBe(1);
    expect(effect!.request).toEqual(live.body);
    expect(answer.providerId).toBe(idOf('k1'));
    expect(answer.status).toBe(effect!.response.status);
  });

  it('replays the same id for the same key without a second effect', async () => {
    const req = await request('k2');
    const first = await send()(req, 'k2');
    const second = await send()(req, 'k2');
    expect(second).toEqual(first);
    expect(sim().ledger.count('k2')).toBe(1);
  });

  it('maps an outage (503) to unavailable that did not act, and succeeds on retry', async () => {
    const req = await request('k3');
    sim().injectFault({ mode: 'unavailable' });
    const error = await providerError(() => send()(req, 'k3'));
    expect([error.kind, error.status, error.mayHaveActed]).toEqual(['unavailable', 503, false]);
    expect(error.message).toContain('the provider is unavailable');
    expect(sim().ledger.count('k3')).toBe(0);
    await send()(req, 'k3');
    expect(sim().ledger.count('k3')).toBe(1);
  });

  it('maps an invalid request to rejected that did not act (a 422 with its detail, or never sent), and an injected reject too', async () => {
    const invalid = await providerError(() => send()(sample.invalid.request, 'k4'));
    // A request without the members its path needs cannot be sent at all: the client refuses it before any call.
    const unsendable = pathParams(sample.operation.path).some((p) => !(p in sample.invalid.request));
    expect([invalid.kind, invalid.status, invalid.mayHaveActed]).toEqual(
      unsendable ? ['rejected', undefined, false] : ['rejected', 422, false],
    );
    expect(invalid.message).toMatch(unsendable ? /cannot be sent/ : sample.invalid.detail);
    const req = await request('k4');
    sim().injectFault({ mode: 'reject' });
    expect((await providerError(() => send()(req, 'k4'))).kind).toBe('rejected');
    expect(sim().ledger.count('k4')).toBe(0);
  });

  it('maps a wrong key, or an injected 401, to unauthorized', async () => {
    const req = await request('k5');
    const wrong = await providerError(() => send({ apiKey: 'wrong' })(req, 'k5'));
    expect([wrong.kind, wrong.status]).toEqual(['unauthorized', 401]);
    expect(wrong.message).toContain('bearer token is not valid');
    sim().injectFault({ mode: 'unauthorized' });
    expect((await providerError(() => send()(req, 'k5'))).kind).toBe('unauthorized');
    expect(sim().ledger.count('k5')).toBe(0);
  });

  it('after a dropped answer (may have acted), a retry with the same key returns the same id: one effect', async () => {
    const req = await request('k6');
    sim().injectFault({ mode: 'drop-response' });
    const error = await providerError(() => send()(req, 'k6'));
    expect([error.kind, error.status, error.mayHaveActed]).toEqual(['unavailable', undefined, true]);
    expect(sim().ledger.count('k6')).toBe(1);
    const retry = await send()(req, 'k6');
    expect(retry.providerId).toBe(idOf('k6'));
    expect(sim().ledger.count('k6')).toBe(1);
  });

  it('maps a timeout to unavailable; the retry in flight is a conflict; a later retry replays', async () => {
    const req = await request('k7');
    sim().injectFault({ mode: 'slow', delayMs: 400 });
    const timeout = await providerError(() => send({ timeoutMs: 100 })(req, 'k7'));
    expect([timeout.kind, timeout.mayHaveActed]).toEqual(['unavailable', true]);
    expect(timeout.message).toContain('timed out after 100 ms');

    const conflict = await providerError(() => send()(req, 'k7'));
    expect([conflict.kind, conflict.status, conflict.mayHaveActed]).toEqual(['conflict', 409, true]);

    await expect.poll(() => sim().ledger.count('k7'), { timeout: 2_000 }).toBe(1);
    expect((await send()(req, 'k7')).providerId).toBe(idOf('k7'));
    expect(sim().ledger.count('k7')).toBe(1);
  });
});
