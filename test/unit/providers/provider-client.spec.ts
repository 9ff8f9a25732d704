/**
 * createProviderClient (providers/kit/define.ts over providers/kit/http.ts), for every operation of every registered
 * provider: what it sends (method, path with its parameters percent-encoded, JSON body with the provider's settings,
 * `Idempotency-Key` and the bearer token on every call), how it classifies every failure (kind, status, mayHaveActed),
 * against a recording HTTP server on a random local port; and the idempotency round trips (replay, lost answer,
 * timeout then 409 then replay) against the real simulator of the provider.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { PROVIDER_LIST } from '../../../providers/index.js';
import { createProviderClient, type ProviderAnswer } from '../../../providers/kit/define.js';
import type { ProviderFailureKind } from '../../../providers/kit/errors.js';
import { startSimulators, type RunningSimulators } from '../../../simulators/shared/idempotent-simulator.js';
import { providerError } from '../../helpers/provider-error.js';
import { operationSamples, type OperationSample } from '../../helpers/provider-samples.js';

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
const SAMPLES = operationSamples();

it('has a sample of every operation of every registered provider', () => {
  const operations = PROVIDER_LIST.flatMap((p) => Object.keys(p.operations).map((o) => `${p.name}.${o}`));
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

describe.each(SAMPLES)('$id: against its simulator', (sample) => {
  let sims: RunningSimulators;
  const sim = () => sims.provider(sample.provider.name);
  const send = (options: { apiKey?: string; timeoutMs?: number } = {}) => call(sample, sim().url, options);
  const idOf = (key: string) => (sim().ledger.effects(key)[0]?.response.body as { id: string } | undefined)?.id;

  beforeAll(async () => {
    sims = await startSimulators(PROVIDER_LIST, { apiKeys: { [sample.provider.name]: API_KEY } });
  });
  afterAll(() => sims.close());
  beforeEach(() => sims.reset());

  it('performs the operation once and returns the id the provider recorded', async () => {
    const answer = await send()(sample.request, 'k1');
    const [effect] = sim().ledger.effects('k1');
    expect(sim().ledger.count('k1')).toBe(1);
    expect(effect!.request).toEqual(sample.body);
    expect(answer.providerId).toBe(idOf('k1'));
    expect(answer.status).toBe(effect!.response.status);
  });

  it('replays the same id for the same key without a second effect', async () => {
    const first = await send()(sample.request, 'k2');
    const second = await send()(sample.request, 'k2');
    expect(second).toEqual(first);
    expect(sim().ledger.count('k2')).toBe(1);
  });

  it('maps an outage (503) to unavailable that did not act, and succeeds on retry', async () => {
    sim().injectFault({ mode: 'unavailable' });
    const error = await providerError(() => send()(sample.request, 'k3'));
    expect([error.kind, error.status, error.mayHaveActed]).toEqual(['unavailable', 503, false]);
    expect(error.message).toContain('the provider is unavailable');
    expect(sim().ledger.count('k3')).toBe(0);
    await send()(sample.request, 'k3');
    expect(sim().ledger.count('k3')).toBe(1);
  });

  it('maps an invalid request (422) to rejected with the problem detail, and an injected reject too', async () => {
    const invalid = await providerError(() => send()(sample.invalid.request, 'k4'));
    expect([invalid.kind, invalid.status, invalid.mayHaveActed]).toEqual(['rejected', 422, false]);
    expect(invalid.message).toMatch(sample.invalid.detail);
    sim().injectFault({ mode: 'reject' });
    expect((await providerError(() => send()(sample.request, 'k4'))).kind).toBe('rejected');
    expect(sim().ledger.count('k4')).toBe(0);
  });

  it('maps a wrong key, or an injected 401, to unauthorized', async () => {
    const wrong = await providerError(() => send({ apiKey: 'wrong' })(sample.request, 'k5'));
    expect([wrong.kind, wrong.status]).toEqual(['unauthorized', 401]);
    expect(wrong.message).toContain('bearer token is not valid');
    sim().injectFault({ mode: 'unauthorized' });
    expect((await providerError(() => send()(sample.request, 'k5'))).kind).toBe('unauthorized');
    expect(sim().ledger.count('k5')).toBe(0);
  });

  it('after a dropped answer (may have acted), a retry with the same key returns the same id: one effect', async () => {
    sim().injectFault({ mode: 'drop-response' });
    const error = await providerError(() => send()(sample.request, 'k6'));
    expect([error.kind, error.status, error.mayHaveActed]).toEqual(['unavailable', undefined, true]);
    expect(sim().ledger.count('k6')).toBe(1);
    const retry = await send()(sample.request, 'k6');
    expect(retry.providerId).toBe(idOf('k6'));
    expect(sim().ledger.count('k6')).toBe(1);
  });

  it('maps a timeout to unavailable; the retry in flight is a conflict; a later retry replays', async () => {
    sim().injectFault({ mode: 'slow', delayMs: 400 });
    const timeout = await providerError(() => send({ timeoutMs: 100 })(sample.request, 'k7'));
    expect([timeout.kind, timeout.mayHaveActed]).toEqual(['unavailable', true]);
    expect(timeout.message).toContain('timed out after 100 ms');

    const conflict = await providerError(() => send()(sample.request, 'k7'));
    expect([conflict.kind, conflict.status, conflict.mayHaveActed]).toEqual(['conflict', 409, true]);

    await expect.poll(() => sim().ledger.count('k7'), { timeout: 2_000 }).toBe(1);
    expect((await send()(sample.request, 'k7')).providerId).toBe(idOf('k7'));
    expect(sim().ledger.count('k7')).toBe(1);
  });
});
