/**
 * E2E: bodies and connections a hostile client sends (issue 21, findings 3 to 5), against the API with its real
 * PostgreSQL: a body nested 20,000 levels deep, duplicate member names, members named after Object.prototype's
 * properties, JSON variants and charsets the API does not read, a body over the size limit, a number RFC 8785
 * cannot canonicalise under an Idempotency-Key, and a client trickling its body a byte at a time. Each answer is a
 * problem document whose detail says what is wrong, and nothing is stored. Each failed before its fix.
 */
import { randomUUID } from 'node:crypto';
import { connect, type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JSON_BODY_LIMIT_BYTES, JSON_BODY_MAX_DEPTH } from '../../src/common/api-limits.js';
import { ApiSuite, PROBLEM_JSON, startApiApp, testKeys } from '../helpers/api-app.js';
import { responseValidator } from '../helpers/openapi-responses.js';

const PROBLEMS = 'https://order-fulfilment.dev/problems/';
const suite = new ApiSuite(`hostile-input-${randomUUID()}`);
const EMAIL = 'hostile@example.com';
const order = () => ({ customer: { email: EMAIL }, lines: [{ sku: 'SKU-HOSTILE', quantity: 1 }] });

beforeAll(async () => {
  await suite.open([{ sku: 'SKU-HOSTILE', name: 'Hostile', priceMinor: 100, onHand: 100 }]);
});

afterAll(() => suite.close());

let documentValidator: ReturnType<typeof responseValidator> | undefined;

/** The strict validator of test/helpers/openapi-responses.ts on the suite's own `/docs-json`. */
async function described(): Promise<ReturnType<typeof responseValidator>> {
  documentValidator ??= responseValidator(
    (await suite.http().get('/docs-json').expect(200)).body as Record<string, unknown>,
  );
  return documentValidator;
}

/** Orders and stock movements stored so far (a refused request must change neither). */
async function stored(): Promise<{ orders: number; movements: number; records: number }> {
  return {
    orders: await suite.db.prisma.order.count({ where: { customerEmail: EMAIL } }),
    movements: await suite.db.prisma.inventoryMovement.count({ where: { sku: 'SKU-HOSTILE' } }),
    records: await suite.db.prisma.idempotencyRecord.count(),
  };
}

/** Every route that takes a body, as the operator (who may call each). */
const ROUTES: Array<{ name: string; method: 'post' | 'put'; path: string }> = [
  { name: 'POST /orders', method: 'post', path: '/orders' },
  { name: 'POST /orders/:id/cancel', method: 'post', path: `/orders/${randomUUID()}/cancel` },
  { name: 'POST /orders/:id/retry', method: 'post', path: `/orders/${randomUUID()}/retry` },
  { name: 'PUT /inventory/:sku', method: 'put', path: '/inventory/SKU-HOSTILE' },
];

function send(route: (typeof ROUTES)[number], body: string, headers: Record<string, string> = {}) {
  let req = suite.http(testKeys().operator.key)[route.method](route.path).set('Content-Type', 'application/json');
  for (const [name, value] of Object.entries(headers)) req = req.set(name, value);
  return req.send(body);
}

describe('a body nested deeper than the limit (finding 3)', () => {
  const arrays = (n: number) => `{"lines":${'['.repeat(n)}${']'.repeat(n)}}`;
  const objects = (n: number) => `{"customer":${'{"a":'.repeat(n)}1${'}'.repeat(n)}}`;
  const bodies: Array<[string, string]> = [
    ['20,000 arrays in lines (40 KB)', arrays(20_000)],
    ['6,666 objects in customer', objects(6_666)],
    [`one level over the limit (${JSON_BODY_MAX_DEPTH + 1})`, arrays(JSON_BODY_MAX_DEPTH)],
  ];
  const cases = ROUTES.flatMap((route) =>
    bodies.flatMap(([what, body]) => [
      { route, what, body, key: false },
      { route, what, body, key: true },
    ]),
  );

  it.each(cases)('$route.name, $what, Idempotency-Key $key → 400 saying how deep', async ({ route, body, key }) => {
    const before = await stored();
    const res = await send(route, body, key ? { 'Idempotency-Key': randomUUID() } : {});
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body.type).toBe(`${PROBLEMS}validation-error`);
    expect(res.body.detail).toMatch(
      new RegExp(`more than ${JSON_BODY_MAX_DEPTH} levels deep .*at most ${JSON_BODY_MAX_DEPTH} are accepted`),
    );
    expect(res.body.detail).not.toMatch(/surrogate/);
    expect(await stored()).toEqual(before);
  });

  it(`takes a body exactly ${JSON_BODY_MAX_DEPTH} levels deep to validation`, async () => {
    const res = await send(ROUTES[0]!, arrays(JSON_BODY_MAX_DEPTH - 1));
    expect(res.status).toBe(400);
    expect(res.body.detail).not.toMatch(/levels deep/);
    expect(res.body.errors).toContainEqual(expect.objectContaining({ path: 'customer' }));
  });
});

describe('duplicate member names (finding 5)', () => {
  it.each([
    [
      'customer.email',
      `{"customer":{"email":"${EMAIL}","email":"other@example.com"},"lines":[{"sku":"SKU-HOSTILE","quantity":1}]}`,
    ],
    [
      'customer.email (escaped)',
      `{"customer":{"email":"${EMAIL}","em\\u0061il":"other@example.com"},"lines":[{"sku":"SKU-HOSTILE","quantity":1}]}`,
    ],
    [
      'lines',
      `{"customer":{"email":"${EMAIL}"},"lines":[{"sku":"SKU-HOSTILE","quantity":1}],"lines":[{"sku":"SKU-HOSTILE","quantity":2}]}`,
    ],
    ['lines.0.quantity', `{"customer":{"email":"${EMAIL}"},"lines":[{"sku":"SKU-HOSTILE","quantity":1,"quantity":9}]}`],
  ])('%s twice → 400 naming it, nothing stored', async (path, body) => {
    const before = await stored();
    const res = await send(ROUTES[0]!, body);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(`${PROBLEMS}validation-error`);
    expect(res.body.errors).toEqual([
      { path: path.replace(' (escaped)', ''), message: expect.stringMatching(/^Duplicate member "\w+"/) },
    ]);
    expect(await stored()).toEqual(before);
  });

  it.each([
    ['PUT /inventory/:sku', ROUTES[3]!, '{"onHand":1,"onHand":0}'],
    ['POST /orders/:id/cancel', ROUTES[1]!, '{"reason":"a","reason":"b"}'],
  ])('%s: a duplicate is refused there too', async (_name, route, body) => {
    const res = await send(route, body);
    expect(res.status).toBe(400);
    expect(res.body.errors).toEqual([{ path: expect.any(String), message: expect.stringContaining('Duplicate') }]);
  });
});

describe("members named after Object.prototype's properties (finding 4)", () => {
  const names = Object.getOwnPropertyNames(Object.prototype);

  it('knows the names it tries', () => {
    expect(names).toEqual(expect.arrayContaining(['constructor', '__proto__', 'toString', 'hasOwnProperty']));
  });

  const cases = names.flatMap((name) => [
    { name, where: 'customer', route: ROUTES[0]!, body: { ...order(), customer: { email: EMAIL, [name]: { x: 1 } } } },
    {
      name,
      where: 'lines.0',
      route: ROUTES[0]!,
      body: { ...order(), lines: [{ sku: 'SKU-HOSTILE', quantity: 1, [name]: 1 }] },
    },
    { name, where: '', route: ROUTES[0]!, body: { ...order(), [name]: null } },
    { name, where: '', route: ROUTES[1]!, body: { reason: 'changed mind', [name]: { x: 1 } } },
    { name, where: '', route: ROUTES[2]!, body: { [name]: 'x' } },
    { name, where: '', route: ROUTES[3]!, body: { onHand: 0, [name]: 1 } },
  ]);

  it.each(cases)(
    '$route.name: "$name" in "$where" → 400 like any unknown member',
    async ({ name, where, route, body }) => {
      const before = await stored();
      // JSON.stringify drops nothing here: `[name]` is an own member even for __proto__ (a computed key).
      const text = JSON.stringify(body);
      expect(text).toContain(`"${name}"`);
      const res = await send(route, text);
      expect(res.status).toBe(400);
      expect(res.body.type).toBe(`${PROBLEMS}validation-error`);
      expect(res.body.errors).toContainEqual({ path: where, message: `Unrecognized key: "${name}"` });
      expect(await stored()).toEqual(before);
    },
  );
});

describe('media types, charsets and sizes (finding 5)', () => {
  it.each([
    'application/merge-patch+json',
    'application/json-patch+json',
    'application/vnd.api+json',
    'application/problem+json',
  ])('%s → 415 unsupported-media-type', async (type) => {
    const before = await stored();
    const res = await suite.http().post('/orders').set('Content-Type', type).send(JSON.stringify(order()));
    expect(res.status).toBe(415);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({ type: `${PROBLEMS}unsupported-media-type`, status: 415 });
    expect(await stored()).toEqual(before);
  });

  it.each(['utf-16', 'iso-8859-1'])('application/json; charset=%s → 415 unsupported-media-type', async (charset) => {
    const res = await suite
      .http()
      .post('/orders')
      .set('Content-Type', `application/json; charset=${charset}`)
      .send(JSON.stringify(order()));
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ type: `${PROBLEMS}unsupported-media-type`, status: 415 });
    expect(res.body.detail).toMatch(/UTF-8/);
  });

  it('a Content-Encoding the API does not decode → 415 unsupported-media-type', async () => {
    const res = await suite
      .http()
      .post('/orders')
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'compress')
      .send(JSON.stringify(order()));
    expect(res.status).toBe(415);
    expect(res.body).toMatchObject({ type: `${PROBLEMS}unsupported-media-type`, status: 415 });
    expect(res.body.detail).toMatch(/compress/);
  });

  it('bytes that are not UTF-8 → 400 malformed-json, nothing stored (no U+FFFD in their place)', async () => {
    const before = await stored();
    // A valid order but for its customer's name: the bytes 0xFF 0xFE, which no UTF-8 text holds.
    const [head, tail] = JSON.stringify({ ...order(), customer: { email: 'x@example.com', name: 'NAME' } }).split(
      'NAME',
    );
    const body = Buffer.concat([Buffer.from(head!), Buffer.from([0xff, 0xfe]), Buffer.from(tail!)]);
    const res = await suite
      .http()
      .post('/orders')
      .set('Content-Type', 'application/json')
      .set('Idempotency-Key', randomUUID())
      .serialize((raw: Buffer) => raw as unknown as string) // the bytes as they are, not a Buffer as JSON
      .send(body);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({ type: `${PROBLEMS}malformed-json`, status: 400 });
    expect(res.body.detail).toMatch(/not valid UTF-8/);
    expect(await stored()).toEqual(before);
  });

  it('a gzip body whose data is corrupt → 400 malformed-json saying so', async () => {
    const res = await suite
      .http()
      .post('/orders')
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'gzip')
      .serialize((raw: Buffer) => raw as unknown as string)
      .send(Buffer.from('notgzip'));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: `${PROBLEMS}malformed-json`, status: 400 });
    expect(res.body.detail).toMatch(/could not be decompressed/);
  });

  it('a body over the limit → 413 body-too-large with the limit', async () => {
    const body = JSON.stringify({ ...order(), pad: 'x'.repeat(JSON_BODY_LIMIT_BYTES) });
    const res = await suite.http().post('/orders').set('Content-Type', 'application/json').send(body);
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(res.body).toMatchObject({
      type: `${PROBLEMS}body-too-large`,
      status: 413,
      limitBytes: JSON_BODY_LIMIT_BYTES,
      detail: `The request body is ${Buffer.byteLength(body)} bytes; at most ${JSON_BODY_LIMIT_BYTES} bytes are accepted`,
    });
  });
});

describe('as the OpenAPI document describes them', () => {
  /** One refusal of each kind this file proves, on a route with a body: its Content-Type and its text. */
  const refusals: Array<{ what: string; status: number; type?: string; encoding?: string; body: string }> = [
    {
      what: 'nested too deep',
      status: 400,
      body: `{"a":${'['.repeat(JSON_BODY_MAX_DEPTH)}${']'.repeat(JSON_BODY_MAX_DEPTH)}}`,
    },
    { what: 'a duplicate member', status: 400, body: '{"reason":"a","reason":"b","onHand":1,"onHand":2}' },
    { what: 'a constructor member', status: 400, body: '{"constructor":{"x":1}}' },
    { what: 'a merge patch', status: 415, type: 'application/merge-patch+json', body: '{}' },
    { what: 'UTF-16', status: 415, type: 'application/json; charset=utf-16', body: '{}' },
    { what: 'compress', status: 415, encoding: 'compress', body: '{}' },
    { what: 'over the size limit', status: 413, body: JSON.stringify({ pad: 'x'.repeat(JSON_BODY_LIMIT_BYTES) }) },
  ];
  const cases = ROUTES.flatMap((route) => refusals.map((refusal) => ({ route, ...refusal })));

  it.each(cases)('$route.name, $what → $status, valid against the document', async (c) => {
    let req = suite
      .http(testKeys().operator.key)
      [c.route.method](c.route.path)
      .set('Content-Type', c.type ?? 'application/json');
    if (c.encoding) req = req.set('Content-Encoding', c.encoding);
    const res = await req.send(c.body);
    expect(res.status).toBe(c.status);
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers as Record<string, unknown>)) {
      if (typeof value === 'string') headers.set(name, value);
    }
    const exchange = { method: c.route.method.toUpperCase(), url: c.route.path, status: res.status, headers };
    expect((await described()).check({ ...exchange, body: res.text })).toEqual([]);
  });
});

describe('an Idempotency-Key on a body RFC 8785 cannot canonicalise', () => {
  it('a number beyond double range → 400 saying so, not blaming a surrogate', async () => {
    const res = await send(ROUTES[3]!, '{"onHand":1e400}', { 'Idempotency-Key': randomUUID() });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(`${PROBLEMS}validation-error`);
    expect(res.body.detail).toMatch(/no canonical JSON form .*Infinity/);
    expect(res.body.detail).not.toMatch(/surrogate/);
  });
});

describe('a client trickling its request (finding 5)', () => {
  /** Sends `head` then one byte of the body every 200 ms; resolves with what the server wrote before it closed. */
  function trickle(port: number, head: string, body: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const chunks: Buffer[] = [];
      let sent = 0;
      const timer = setInterval(() => {
        if (sent < body.length && socket.writable) socket.write(body[sent++]!);
      }, 200);
      socket.on('data', (c) => chunks.push(c));
      socket.on('error', (err) => {
        clearInterval(timer);
        reject(err);
      });
      socket.on('close', () => {
        clearInterval(timer);
        resolve(Buffer.concat(chunks).toString('latin1'));
      });
      socket.write(head);
    });
  }

  it('is cut with 408 problem+json once HTTP_REQUEST_TIMEOUT_MS has passed', async () => {
    const app = await startApiApp(suite.config({ HTTP_REQUEST_TIMEOUT_MS: '1500', HTTP_HEADERS_TIMEOUT_MS: '1000' }));
    suite.extraApps.push(app);
    await app.listen(0, '127.0.0.1');
    const { port } = app.getHttpServer().address() as AddressInfo;
    const body = JSON.stringify(order());
    const raw = await trickle(
      port,
      `POST /orders HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${testKeys().shop.key}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`,
      body,
    );
    const [head, ...rest] = raw.split('\r\n\r\n');
    expect(head).toMatch(/^HTTP\/1\.1 408 /);
    expect(head).toMatch(/\r\nContent-Type: application\/problem\+json/i);
    const problem: unknown = JSON.parse(rest.join('\r\n\r\n'));
    expect(problem).toMatchObject({
      type: `${PROBLEMS}malformed-request`,
      status: 408,
      parserError: 'ERR_HTTP_REQUEST_TIMEOUT',
    });
    // Sent before any route is known, so no operation lists it; its type's schema describes it.
    expect((await described()).checkComponent('MalformedRequestProblem', problem)).toEqual([]);
    expect(await stored()).toMatchObject({ orders: 0 });
  });

  it('a client that never finishes its headers is cut too', async () => {
    const app = await startApiApp(suite.config({ HTTP_REQUEST_TIMEOUT_MS: '1500', HTTP_HEADERS_TIMEOUT_MS: '1000' }));
    suite.extraApps.push(app);
    await app.listen(0, '127.0.0.1');
    const { port } = app.getHttpServer().address() as AddressInfo;
    const raw = await trickle(port, 'GET /inventory HTTP/1.1\r\n', 'Host: x\r\nX-Slow: ' + 'y'.repeat(200));
    expect(raw).toMatch(/^HTTP\/1\.1 408 /);
  });
});
