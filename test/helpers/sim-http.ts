/**
 * Raw HTTP against the provider simulators (global fetch): one request with or without an `Idempotency-Key` and a
 * bearer token, and the assertion of an RFC 9457 problem answer.
 */
import { expect } from 'vitest';

/** An answer of the simulator. */
export interface SimAnswer {
  status: number;
  headers: Headers;
  /** Parsed JSON (undefined for an empty body); loosely typed so assertions can reach into it. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/** Options of {@link simCall}. */
export interface SimCallOptions {
  /** JSON body. */
  body?: unknown;
  /** A raw body instead (e.g. malformed JSON). */
  rawBody?: string;
  /** The `Idempotency-Key` header; none when undefined. */
  key?: string;
  /** The bearer token; `null` sends no Authorization header. */
  token?: string | null;
}

/**
 * Sends `method url` with a JSON content type.
 * @throws the fetch error when the simulator drops the connection.
 */
export async function simCall(method: string, url: string, opts: SimCallOptions = {}): Promise<SimAnswer> {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (opts.key !== undefined) headers['idempotency-key'] = opts.key;
  if (opts.token !== null && opts.token !== undefined) headers.authorization = `Bearer ${opts.token}`;
  const body = opts.rawBody ?? (opts.body === undefined ? undefined : JSON.stringify(opts.body));
  const res = await fetch(url, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text === '' ? undefined : JSON.parse(text) };
}

/** Asserts an RFC 9457 problem document with `status` (and, when given, a `type` ending in `slug`). */
export function expectProblem(answer: SimAnswer, status: number, slug?: string): void {
  expect(answer.status).toBe(status);
  expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
  expect(answer.body).toMatchObject({
    type: expect.stringMatching(/^https:\/\//),
    title: expect.any(String),
    status,
    detail: expect.any(String),
  });
  if (slug !== undefined) expect(answer.body.type).toMatch(new RegExp(`/${slug}$`));
}
