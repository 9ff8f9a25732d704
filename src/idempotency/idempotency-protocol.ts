/**
 * The `Idempotency-Key` protocol's pure parts, shared by the API (POST /orders, PUT /inventory/:sku, the order
 * actions) and the provider simulators: reading the header and fingerprinting a request. No Nest, no Prisma, no
 * Express: the simulators import this file directly (eslint.config.js allows exactly this file to them).
 *
 * Rules (draft-ietf-httpapi-idempotency-key-header, "the draft"):
 * - The header is an Item Structured Field (RFC 8941 §3.3) whose value is a String: `Idempotency-Key: "8e03…"`.
 *   It is parsed with `structured-headers` (RFC 8941/RFC 9651). Many clients send the bare value instead
 *   (`Idempotency-Key: 8e03…`, not valid Structured Field syntax for most UUIDs); it is accepted and names the
 *   same key (`abc` and `"abc"` are one key).
 * - The key: 1..{@link IDEMPOTENCY_KEY_MAX_LENGTH} visible ASCII characters (%x21-7E) after decoding.
 * - Exactly one header line. Node joins repeated lines into `a1, b2`, so callers pass the lines as received
 *   (`req.headersDistinct['idempotency-key']`, Node ≥ 16.17) and two lines are reported as two, not as one key
 *   with a space in it. Parameters (`"abc";p=1`), inner lists and a bare value containing `,` are refused.
 * - Fingerprint (draft §2.4: the server may compare the request payload): SHA-256 over the method, the request
 *   target and the RFC 8785 (JCS) canonical JSON of the body, computed with `canonicalize` (by one of RFC 8785's
 *   authors), so member order and insignificant whitespace do not change it.
 */
import { createHash } from 'node:crypto';
import canonicalize from 'canonicalize';
import { parseItem } from 'structured-headers';

/** Request header carrying the key. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** Response header set on replayed responses (value `true`). */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

/** Longest accepted key, in characters (after decoding the quoted form). */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/** Why a header was refused. */
export const IdempotencyKeyHeaderFault = {
  /** More than one `Idempotency-Key` header line. */
  Multiple: 'multiple',
  /** One line, but not one valid key. */
  Malformed: 'malformed',
} as const;
export type IdempotencyKeyHeaderFault = (typeof IdempotencyKeyHeaderFault)[keyof typeof IdempotencyKeyHeaderFault];

/** A present but unusable `Idempotency-Key` header; `message` is safe to show to the client. */
export class IdempotencyKeyHeaderError extends Error {
  constructor(
    readonly fault: IdempotencyKeyHeaderFault,
    message: string,
  ) {
    super(message);
    this.name = 'IdempotencyKeyHeaderError';
  }
}

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/**
 * Reads the `Idempotency-Key` header from its lines as received.
 * @param lines the header's field lines (`req.headersDistinct['idempotency-key']`); a single string is taken as one
 *   line. `undefined` or `[]` when absent.
 * @returns the key, or `undefined` when the header is absent.
 * @throws IdempotencyKeyHeaderError `multiple` for two or more lines; `malformed` when the one line is not a valid
 *   key (invalid Structured Field string, parameters, non-string item, empty, too long, not visible ASCII).
 */
export function parseIdempotencyKeyHeader(lines: string | readonly string[] | undefined): string | undefined {
  const values = typeof lines === 'string' ? [lines] : (lines ?? []);
  if (values.length === 0) return undefined;
  if (values.length > 1) {
    throw new IdempotencyKeyHeaderError(
      IdempotencyKeyHeaderFault.Multiple,
      `Send exactly one ${IDEMPOTENCY_KEY_HEADER} header (got ${values.length})`,
    );
  }
  const value = values[0]!.trim();
  const key = value.startsWith('"') ? parseQuoted(value) : parseBare(value);
  if (key.length === 0) throw malformed('The key is empty');
  if (key.length > IDEMPOTENCY_KEY_MAX_LENGTH) {
    throw malformed(`The key is ${key.length} characters long; at most ${IDEMPOTENCY_KEY_MAX_LENGTH} are allowed`);
  }
  if (!VISIBLE_ASCII.test(key)) {
    throw malformed('The key may contain visible ASCII characters only (no spaces, control or non-ASCII characters)');
  }
  return key;
}

/** The quoted form: an RFC 8941 Item whose bare item is a String, without parameters. */
function parseQuoted(value: string): string {
  let item: ReturnType<typeof parseItem>;
  try {
    item = parseItem(value);
  } catch (err) {
    const reason = err instanceof Error ? err.message : String(err);
    throw malformed(`The quoted key is not a valid Structured Field string (RFC 8941): ${reason}`);
  }
  const [bare, params] = item;
  if (typeof bare !== 'string') throw malformed('The key must be a Structured Field string');
  if (params.size > 0) throw malformed('Parameters after the key are not supported');
  return bare;
}

/** The bare form many clients send: the whole value is the key; a comma means a list (or joined lines). */
function parseBare(value: string): string {
  if (value.includes(',')) {
    throw malformed('A bare key may not contain "," (it separates list members); send one key, quoted if needed');
  }
  return value;
}

function malformed(message: string): IdempotencyKeyHeaderError {
  return new IdempotencyKeyHeaderError(IdempotencyKeyHeaderFault.Malformed, message);
}

/** What a request fingerprint covers. */
export interface FingerprintedRequest {
  /** HTTP method, any case (upper-cased). */
  method: string;
  /** Request target as received: path and query (`req.originalUrl`). */
  target: string;
  /** The parsed JSON body as the client sent it (before validation transformed it); `undefined` when none. */
  body: unknown;
}

/**
 * RFC 8785 canonical JSON of `value` (`undefined`, i.e. no body, as `null`).
 * @throws Error for values JSON cannot carry (NaN, Infinity, lone surrogates, cycles); parsed JSON has none.
 */
export function canonicalJson(value: unknown): string {
  return canonicalize(value ?? null) ?? 'null';
}

/**
 * The fingerprint compared when a key is used again (draft §2.4): lower-case hex SHA-256 of
 * `METHOD target\n<canonical JSON body>`. Same method, target and JSON value → same fingerprint, whatever the
 * member order or whitespace.
 */
export function requestFingerprint(request: FingerprintedRequest): string {
  return createHash('sha256')
    .update(`${request.method.toUpperCase()} ${request.target}\n${canonicalJson(request.body)}`, 'utf8')
    .digest('hex');
}
