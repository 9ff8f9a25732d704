/**
 * The schema-driven fuzzer (test/helpers/openapi-fuzz.ts) against the real application: the Nest API listening on
 * a port, PostgreSQL, the Temporal dev server and a worker with the provider simulators (startTestStack). It reads
 * the API's own OpenAPI document (/docs-json) and sends FUZZ_RUNS requests (default 800; FUZZ_SEED to replay a run),
 * then asserts: no 5xx, no status the document does not list for the operation, every error a problem document.
 * Prints `api fuzz: requests sent N, failures: M` and the failures it found.
 */
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  checkResponse,
  fillKnown,
  type FuzzRequest,
  type KnownValues,
  type OpenApiDocument,
  requestArbitrary,
} from '../helpers/openapi-fuzz.js';
import { bearer, testKeys } from '../helpers/api-keys.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';

const RUNS = Number(process.env.FUZZ_RUNS ?? 800);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);

let stack: TestStack;
let baseUrl: string;
const orderIds: string[] = [];
const skus: string[] = [];

beforeAll(async () => {
  // Short waits, so cancels and retries answer within a request's time even when nothing is left to wait for.
  stack = await startTestStack({ overrides: { CANCEL_WAIT_MS: '2000' } });
  await stack.api.listen(0, '127.0.0.1');
  baseUrl = `http://127.0.0.1:${(stack.api.getHttpServer().address() as AddressInfo).port}`;
  skus.push(...(await stack.db.prisma.product.findMany({ select: { sku: true } })).map((p) => p.sku));
}, 120_000);

afterAll(() => stack?.close());

const pick = (list: string[]) => (list.length ? list[Math.floor(Math.random() * list.length)] : undefined);
const known: KnownValues = { id: () => pick(orderIds), sku: () => pick(skus) };

let sent = 0;
/**
 * Credentials rotate with the request: mostly the operator key (every route), a client key (scopes and ownership),
 * no key and an unknown key (401 on every protected route).
 */
function credentials(): Record<string, string> {
  const keys = testKeys();
  const n = sent++ % 10;
  if (n === 0) return {};
  if (n === 1) return { authorization: bearer('of_live_unknownkey_00000000000000000000000000000000') };
  return { authorization: bearer(n < 5 ? keys.shop.key : keys.operator.key) };
}

async function send(req: FuzzRequest): Promise<{ status: number; headers: Headers; text: string }> {
  const res = await fetch(`${baseUrl}${fillKnown(req.url, known)}`, {
    method: req.method,
    headers: { ...credentials(), ...req.headers },
    body: req.body,
    signal: AbortSignal.timeout(30_000),
  });
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe('schema-driven API fuzzing (OpenAPI document)', () => {
  it(`${RUNS} generated requests: no 5xx, only documented statuses, problem+json errors`, async () => {
    const docRes = await fetch(`${baseUrl}/docs-json`);
    expect(docRes.status).toBe(200);
    const doc = (await docRes.json()) as OpenApiDocument;

    // Valid orders first, so that ids exist for the operations on one order (and for the fuzzer's `known` ids).
    for (const sku of skus.slice(0, 3)) {
      const res = await fetch(`${baseUrl}/orders`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: bearer(testKeys().shop.key) },
        body: JSON.stringify({ customer: { email: 'fuzz@example.com' }, lines: [{ sku, quantity: 1 }] }),
      });
      expect(res.status).toBe(202);
      orderIds.push(((await res.json()) as { id: string }).id);
    }

    const requests = fc.sample(requestArbitrary(doc, known, { sku: skus, email: ['fuzz@example.com'] }), {
      numRuns: RUNS,
      seed: SEED,
    });
    const failures: string[] = [];
    const statuses = new Map<string, number>();
    const started = Date.now();
    for (const req of requests) {
      let res: { status: number; headers: Headers; text: string };
      try {
        res = await send(req);
      } catch (err) {
        failures.push(`${req.method} ${req.url}: no answer (${(err as Error).message})`);
        continue;
      }
      statuses.set(`${req.operation} → ${res.status}`, (statuses.get(`${req.operation} → ${res.status}`) ?? 0) + 1);
      if (req.operation === 'POST /orders' && res.status === 202) orderIds.push(JSON.parse(res.text).id as string);
      for (const problem of checkResponse(req, res)) {
        failures.push(
          `${req.method} ${req.url.slice(0, 160)} [${JSON.stringify(req.headers)}] body=${(req.body ?? '').slice(0, 200)}` +
            ` → ${res.status} ${res.text.slice(0, 200)}: ${problem}`,
        );
      }
    }
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    console.log(
      `api fuzz: requests sent ${requests.length}, failures: ${failures.length} (seed ${SEED}, ${seconds} s)\n` +
        [...statuses.entries()]
          .sort()
          .map(([k, n]) => `  ${k}: ${n}`)
          .join('\n') +
        (failures.length ? `\nfailures:\n  ${failures.slice(0, 30).join('\n  ')}` : ''),
    );
    expect(failures).toEqual([]);
  }, 180_000);
});
