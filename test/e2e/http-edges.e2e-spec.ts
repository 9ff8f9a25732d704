/**
 * E2E: the problem+json contract at the edges of the HTTP stack (issue 7, failing inputs 2, 4, 5, 6, 7):
 * requests Node's parser refuses, bodies the JSON parser accepts but the API must not, methods a path does not
 * support, and a cursor PostgreSQL cannot represent. Each failed before its fix.
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiSuite, PROBLEM_JSON, startApiApp } from '../helpers/api-app.js';
import { api } from '../helpers/api-keys.js';

const PROBLEMS = 'https://order-fulfilment.dev/problems/';
const suite = new ApiSuite(`http-edges-${randomUUID()}`);
let baseUrl: { host: string; port: number };

const validOrder = () => ({ customer: { email: 'edge@example.com' }, lines: [{ sku: 'SKU-EDGE', quantity: 1 }] });

beforeAll(async () => {
  await suite.open([{ sku: 'SKU-EDGE', name: 'Edge', priceMinor: 100, onHand: 100 }]);
  await suite.app.listen(0, '127.0.0.1');
  const address = suite.app.getHttpServer().address() as AddressInfo;
  baseUrl = { host: '127.0.0.1', port: address.port };
});

afterAll(() => suite.close());

/** Sends raw bytes on a fresh TCP connection and returns everything the server wrote before it closed. */
function rawRequest(bytes: Buffer | string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(baseUrl.port, baseUrl.host);
    const chunks: Buffer[] = [];
    socket.on('data', (c) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.setTimeout(5_000, () => socket.destroy(new Error('no answer within 5 s')));
    socket.write(bytes);
  });
}

/** Splits a raw HTTP/1.1 response into status, lower-cased headers and body. */
function parseRaw(raw: string): { status: number; headers: Record<string, string>; body: string } {
  const [head, ...rest] = raw.split('\r\n\r\n');
  const [statusLine, ...lines] = head!.split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine!.split(' ')[1]), headers, body: rest.join('\r\n\r\n') };
}

describe("requests Node's HTTP parser refuses (input 2)", () => {
  it.each([
    ['0x01', '\x01'],
    ['0x7f', '\x7f'],
  ])('a %s in Idempotency-Key → 400 problem+json, connection closed', async (_name, ch) => {
    const body = JSON.stringify(validOrder());
    const raw = await rawRequest(
      `POST /orders HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nIdempotency-Key: ab${ch}cd\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    const res = parseRaw(raw);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.headers.connection).toBe('close');
    expect(Number(res.headers['content-length'])).toBe(Buffer.byteLength(res.body));
    expect(JSON.parse(res.body)).toMatchObject({
      type: `${PROBLEMS}malformed-request`,
      title: 'Malformed HTTP request',
      status: 400,
      parserError: 'HPE_INVALID_HEADER_TOKEN',
      detail: expect.stringContaining('control characters'),
    });
    expect(await suite.db.prisma.order.count({ where: { customerEmail: 'edge@example.com' } })).toBe(0);
  });

  it('a malformed request line → 400 problem+json', async () => {
    const res = parseRaw(await rawRequest('GET /orders HTTP/9.x\r\n\r\n'));
    expect(res.status).toBe(400);
    expect(JSON.parse(res.body)).toMatchObject({ type: `${PROBLEMS}malformed-request`, status: 400 });
  });

  it('headers over the limit → 431 problem+json', async () => {
    const res = parseRaw(await rawRequest(`GET /orders HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`));
    expect(res.status).toBe(431);
    expect(JSON.parse(res.body)).toMatchObject({ status: 431, parserError: 'HPE_HEADER_OVERFLOW' });
  });
});

describe('JSON bodies the parser accepts but an order is not (inputs 4 and 5)', () => {
  const post = (body: string) => api(suite.app).post('/orders').set('Content-Type', 'application/json').send(body);

  it.each(['null', '"an order"', '42', 'true', '[]'])(
    'body %s → 400 saying the body must be an object',
    async (body) => {
      const res = await post(body);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
      expect(res.body.type).toBe(`${PROBLEMS}validation-error`);
      expect(res.body.detail).not.toMatch(/is not valid JSON/);
      expect(res.body.errors).toEqual([{ path: '', message: expect.stringMatching(/expected object/) }]);
    },
  );

  it('a body that is not JSON at all is still malformed-json', async () => {
    const res = await post('{"customer":');
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(`${PROBLEMS}malformed-json`);
  });

  it.each([
    ['top level', `{"__proto__":{"admin":true},${JSON.stringify(validOrder()).slice(1)}`, ''],
    [
      'customer',
      '{"customer":{"email":"edge@example.com","__proto__":{}},"lines":[{"sku":"SKU-EDGE","quantity":1}]}',
      'customer',
    ],
    [
      'a line',
      '{"customer":{"email":"edge@example.com"},"lines":[{"sku":"SKU-EDGE","quantity":1,"__proto__":null}]}',
      'lines.0',
    ],
  ])('a __proto__ member (%s) is rejected like any unknown member', async (_where, body, path) => {
    const res = await post(body);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(`${PROBLEMS}validation-error`);
    expect(res.body.errors).toEqual([expect.objectContaining({ path, message: expect.stringContaining('__proto__') })]);
    expect(await suite.db.prisma.order.count({ where: { customerEmail: 'edge@example.com' } })).toBe(0);
  });
});

describe('methods a path does not support (input 6)', () => {
  const id = randomUUID();
  it.each([
    ['DELETE', `/orders/${id}`, 'GET, HEAD, OPTIONS'],
    ['PUT', `/orders/${id}`, 'GET, HEAD, OPTIONS'],
    ['PATCH', '/orders', 'GET, HEAD, OPTIONS, POST'],
    ['DELETE', '/inventory/SKU-EDGE', 'OPTIONS, PUT'],
    ['GET', `/orders/${id}/cancel`, 'OPTIONS, POST'],
  ])('%s %s → 405 problem+json with Allow: %s', async (method, path, allow) => {
    const res = await api(suite.app)[method.toLowerCase() as 'delete'](path);
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe(allow);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({ type: `${PROBLEMS}method-not-allowed`, status: 405, instance: path });
  });

  it('OPTIONS on a known path → 204 with Allow', async () => {
    const res = await api(suite.app).options(`/orders/${id}`);
    expect(res.status).toBe(204);
    expect(res.headers.allow).toBe('GET, HEAD, OPTIONS');
  });

  it('an unknown path is still 404 problem+json', async () => {
    const res = await api(suite.app).delete('/nowhere');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.headers.allow).toBeUndefined();
  });
});

describe('cursors PostgreSQL cannot represent (input 7)', () => {
  const cursor = (createdAt: string) =>
    Buffer.from(JSON.stringify([createdAt, '00000000-0000-4000-8000-000000000000'])).toString('base64url');

  it.each(['0000-01-01T00:00:00Z', '0000-12-31T23:59:59.999Z'])('year 0000 (%s) → 400 validation-error', async (t) => {
    const res = await api(suite.app)
      .get('/orders')
      .query({ cursor: cursor(t) });
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: `${PROBLEMS}validation-error`,
      errors: [expect.objectContaining({ path: 'cursor' })],
    });
  });

  it.each(['0001-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z'])('%s is a valid position → 200', async (t) => {
    const res = await api(suite.app)
      .get('/orders')
      .query({ cursor: cursor(t) });
    expect(res.status).toBe(200);
  });
});

describe('OpenAPI document switch', () => {
  it('API_DOCS=false serves neither /docs nor /docs-json', async () => {
    const app = await startApiApp(suite.config({ API_DOCS: 'false' }));
    suite.extraApps.push(app);
    for (const path of ['/docs', '/docs-json']) {
      const res = await api(app).get(path);
      expect(res.status).toBe(404);
      expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    }
    expect((await api(suite.app).get('/docs-json')).status).toBe(200);
  });

  it("states the service's version from package.json", async () => {
    const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    const doc = (await api(suite.app).get('/docs-json').expect(200)).body as { info: { version: string } };
    expect(doc.info.version).toBe(version);
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
  });
});

describe('security headers on every answer (issue 16, finding 5)', () => {
  /** The headers every response must carry. */
  const expectSecure = (headers: Record<string, string | undefined>, what: string) => {
    expect(headers['content-security-policy'], what).toContain("frame-ancestors 'none'");
    expect(headers['content-security-policy'], what).toContain("default-src 'self'");
    expect(headers['x-frame-options'], what).toBe('DENY');
    expect(headers['x-content-type-options'], what).toBe('nosniff');
    expect(headers['referrer-policy'], what).toBe('no-referrer');
  };

  it('the page, an API answer, a problem, a 401, the OpenAPI UI and its document', async () => {
    const answers = {
      page: await api(suite.app).get('/'),
      orders: await api(suite.app).get('/orders'),
      notFound: await api(suite.app).get('/nowhere'),
      unauthorized: await api(suite.app, 'of_dev_wrong').get('/orders'),
      health: await api(suite.app).get('/health'),
      docs: await api(suite.app).get('/docs'),
      docsJson: await api(suite.app).get('/docs-json'),
    };
    for (const [what, res] of Object.entries(answers)) expectSecure(res.headers, what);
    expect(answers.unauthorized.status).toBe(401);
    // Only the OpenAPI UI (Swagger UI's inline styles) relaxes style-src; scripts stay the origin's own everywhere.
    expect(answers.page.headers['content-security-policy']).toContain("style-src 'self';");
    expect(answers.docs.headers['content-security-policy']).toContain("style-src 'self' 'unsafe-inline'");
    for (const res of Object.values(answers)) {
      expect(res.headers['content-security-policy']).toContain("script-src 'self';");
    }
  });

  it('the raw answer to a request Node refuses carries them too', async () => {
    const res = parseRaw(await rawRequest('GET /orders HTTP/9.x\r\n\r\n'));
    expect(res.status).toBe(400);
    expectSecure(res.headers, 'parser error');
  });
});
