/**
 * The HTTP call shared by the provider clients: JSON over global `fetch` with a per-request timeout, the
 * `Idempotency-Key` and bearer headers on every call, and the mapping of every failure to a
 * {@link ProviderError} kind as ./errors.ts documents it.
 */
import { ProviderError, type ProviderFailureKind } from './errors.js';

/** Connection settings of a provider client. */
export interface ProviderHttpOptions {
  /** Base URL of the provider, e.g. `http://127.0.0.1:4010`; a path prefix is kept, a trailing `/` ignored. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** Per-request timeout covering connect, response and body, in ms (`AbortSignal.timeout`). */
  timeoutMs: number;
}

/** One provider request. */
export interface ProviderRequest {
  /** Provider name for messages, e.g. `email`. */
  provider: string;
  method: 'POST' | 'PUT';
  /** Path under `baseUrl`, starting with `/`, already percent-encoded. */
  path: string;
  /** JSON request body. */
  body: unknown;
  /** Sent as `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header). */
  idempotencyKey: string;
}

/** A 2xx answer: status and parsed JSON body (`undefined` when the body was empty). */
export interface ProviderResponse {
  status: number;
  body: unknown;
}

/**
 * Classifies an HTTP status per ports.ts: 5xx/408/425/429 → `unavailable`, 409 → `conflict`,
 * 401/403 → `unauthorized`, other 4xx → `rejected`. Anything else that is not 2xx (1xx/3xx) is treated as
 * `unavailable`: unexpected, and retrying with the same key is safe. A 409 problem (RFC 9457) of a type of its own (not
 * `about:blank`) other than the key in flight (`…/idempotency-key-in-flight`) is a definite refusal of the resource's state, `rejected` (e.g.
 * the warehouse's `picking-started`: the pick can no longer be cancelled).
 * @param problemType the `type` of the answer's problem document, when it has one.
 */
export function classifyStatus(status: number, problemType?: string): ProviderFailureKind {
  if (status === 409) {
    const definite =
      problemType !== undefined &&
      problemType !== '' &&
      problemType !== 'about:blank' &&
      !problemType.endsWith('idempotency-key-in-flight');
    return definite ? 'rejected' : 'conflict';
  }
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 408 || status === 425 || status === 429) return 'unavailable';
  if (status >= 400 && status < 500) return 'rejected';
  return 'unavailable';
}

/**
 * Sends `request` as JSON and returns the 2xx answer.
 * Redirects are not followed (a POST/PUT must not be re-sent elsewhere silently): they count as a failure.
 * @throws ProviderError `unavailable` on timeout, network error, a lost response, a redirect, 5xx/408/425/429
 *   or a 2xx whose body is not JSON; `conflict` on 409; `unauthorized` on 401/403; `rejected` on other 4xx, and for
 *   a request that cannot be sent (a body that is not JSON-serialisable, a URL that is not http(s)). The message
 *   names provider, method, path and status and carries the provider's problem `detail` (RFC 9457) when given.
 *   `mayHaveActed` is false for every request that was never sent (see {@link NOT_SENT_CODES}).
 */
export async function callProvider(options: ProviderHttpOptions, request: ProviderRequest): Promise<ProviderResponse> {
  const url = `${options.baseUrl.replace(/\/+$/, '')}${request.path}`;
  const what = `${request.provider} provider ${request.method} ${request.path}`;
  let body: string;
  try {
    body = JSON.stringify(request.body);
  } catch (error) {
    throw new ProviderError(
      `${what} cannot be sent: the body is not JSON (${errorText(error)})`,
      'rejected',
      undefined,
      {
        notSent: true,
      },
    );
  }
  if (!URL.canParse(url) || !/^https?:$/.test(new URL(url).protocol)) {
    throw new ProviderError(`${what} cannot be sent: ${url} is not an http(s) URL`, 'rejected', undefined, {
      notSent: true,
    });
  }
  let status: number;
  let text: string;
  let contentType: string;
  try {
    const response = await fetch(url, {
      method: request.method,
      headers: {
        accept: 'application/json, application/problem+json',
        'content-type': 'application/json',
        authorization: `Bearer ${options.apiKey}`,
        'idempotency-key': request.idempotencyKey,
      },
      body,
      redirect: 'error',
      signal: AbortSignal.timeout(options.timeoutMs),
    });
    status = response.status;
    contentType = response.headers.get('content-type') ?? '';
    text = await response.text();
  } catch (error) {
    throw new ProviderError(
      `${what} failed: ${describeTransportError(error, options.timeoutMs)}`,
      'unavailable',
      undefined,
      { notSent: neverSent(error) },
    );
  }

  if (status >= 200 && status < 300) {
    if (text === '') return { status, body: undefined };
    try {
      return { status, body: JSON.parse(text) as unknown };
    } catch {
      throw new ProviderError(
        `${what} → ${status} with a body that is not JSON: ${truncate(text)}`,
        'unavailable',
        status,
      );
    }
  }
  const problem = problemDocument(text, contentType);
  const type = typeof problem?.type === 'string' ? problem.type : undefined;
  const kind = classifyStatus(status, type);
  throw new ProviderError(
    `${what} → ${status} (${kind}): ${problemDetail(text, contentType)}`,
    kind,
    status,
    problem ? { problem } : {},
  );
}

/** The RFC 9457 problem document of an answer (a JSON object), when it is one. */
function problemDocument(text: string, contentType: string): Record<string, unknown> | undefined {
  if (!/json/i.test(contentType) && !text.startsWith('{')) return undefined;
  try {
    const doc = JSON.parse(text) as unknown;
    return doc !== null && typeof doc === 'object' && !Array.isArray(doc)
      ? (doc as Record<string, unknown>)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The problem's `detail` (else `title`) from an RFC 9457 body, else the body text, truncated. */
function problemDetail(text: string, contentType: string): string {
  if (/json/i.test(contentType) || text.startsWith('{')) {
    try {
      const doc = JSON.parse(text) as { detail?: unknown; title?: unknown };
      if (typeof doc.detail === 'string' && doc.detail !== '') return truncate(doc.detail);
      if (typeof doc.title === 'string' && doc.title !== '') return truncate(doc.title);
    } catch {
      // fall through to the raw text
    }
  }
  return text === '' ? 'no response body' : truncate(text);
}

/**
 * Error codes of a request that never left this process: no connection was made, so nothing was sent. The host name
 * did not resolve (`ENOTFOUND`, `EAI_AGAIN`, `EAI_FAIL`, `EAI_NONAME`), the connection was refused or could not be
 * opened (`ECONNREFUSED`, `ENETUNREACH`, `EHOSTUNREACH`, `UND_ERR_CONNECT_TIMEOUT`: undici's connect phase), or the
 * URL could not be parsed (`ERR_INVALID_URL`). A reset or a timeout once connected is not among them: the request
 * may have gone out.
 */
export const NOT_SENT_CODES: ReadonlySet<string> = new Set([
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_FAIL',
  'EAI_NONAME',
  'ECONNREFUSED',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'ERR_INVALID_URL',
]);

/**
 * True when fetch failed before sending anything: one of {@link NOT_SENT_CODES}, or undici refusing the URL
 * itself (`unknown scheme`, `bad port`: fetch's blocked ports).
 */
function neverSent(error: unknown): boolean {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } } | undefined)?.cause;
  if (typeof cause?.code === 'string' && NOT_SENT_CODES.has(cause.code)) return true;
  return cause?.message === 'unknown scheme' || cause?.message === 'bad port';
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function describeTransportError(error: unknown, timeoutMs: number): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError') return `timed out after ${timeoutMs} ms`;
    if (error.name === 'AbortError') return 'aborted';
    const cause = (error as { cause?: unknown }).cause;
    const causeText =
      cause instanceof Error ? `${(cause as { code?: unknown }).code ?? cause.name}: ${cause.message}` : undefined;
    return causeText ? `${error.message} (${causeText})` : error.message;
  }
  return String(error);
}

function truncate(text: string, max = 500): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
