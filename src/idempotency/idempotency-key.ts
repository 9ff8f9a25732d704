/**
 * The `Idempotency-Key` request header (draft-ietf-httpapi-idempotency-key-header), its parsing and the
 * problem types of the idempotency layer.
 *
 * Rules of the draft this API follows:
 * - The header is an Item Structured Header (RFC 8941) whose value is a String: `Idempotency-Key: "8e03…"`.
 *   Many clients send the bare value instead (`Idempotency-Key: 8e03…`); both are accepted and name the
 *   same key (`abc` and `"abc"` are one key).
 * - The key is unique per client and request intent; the client makes it (a UUID v4 is recommended).
 * - Same key, same payload, first request completed → the stored response is replayed.
 * - Same key while the first request is still being processed → 409 Conflict.
 * - Same key, different payload → 422 Unprocessable Content.
 * - The header is optional on `POST /orders`: without it the request is processed as before (no retry
 *   protection), so "missing where required → 400" does not arise yet.
 * - Every error is an RFC 9457 problem document.
 *
 * Accepted key: 1..255 visible ASCII characters (%x21-7E). In the quoted (sf-string) form the escapes `\"`
 * and `\\` are decoded first, and the decoded key must satisfy the same rule. Structured-Field parameters
 * (`"abc";p=1`), several keys (two header lines arrive joined as `a, b`), spaces and non-ASCII → 400.
 */
import { PROBLEM_TYPE_BASE, ProblemException, ProblemType } from '../common/problem-details.js';

/** Request header carrying the key. */
export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';

/** Path of header errors in the `errors` extension (as `PUT /inventory/:sku` reports its key). */
export const IDEMPOTENCY_KEY_ERROR_PATH = 'headers.idempotency-key';

/** Response header set on replayed responses (value `true`). */
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';

/** Longest accepted key, in characters. */
export const IDEMPOTENCY_KEY_MAX_LENGTH = 255;

/**
 * Problem types (RFC 9457) of the idempotency layer, next to the API's {@link ProblemType}s. A malformed key
 * is a plain `validation-error` naming {@link IDEMPOTENCY_KEY_ERROR_PATH}.
 */
export const IdempotencyProblemType = {
  /** 409: a request with this key is still being processed; retry after `Retry-After` seconds. */
  KeyInUse: `${PROBLEM_TYPE_BASE}idempotency-key-in-use`,
  /** 422: the key was already used with a different request payload. */
  KeyReused: `${PROBLEM_TYPE_BASE}idempotency-key-reused`,
} as const;
export type IdempotencyProblemType = (typeof IdempotencyProblemType)[keyof typeof IdempotencyProblemType];

const VISIBLE_ASCII = /^[\x21-\x7e]+$/;

/**
 * Parses the `Idempotency-Key` header value as Node delivers it (`req.headers['idempotency-key']`).
 * @returns the key, or `undefined` when the header is absent.
 * @throws ProblemException 400 `validation-error` (with `errors: [{ path: 'headers.idempotency-key', … }]`)
 *   when the header is present but not one valid key.
 */
export function parseIdempotencyKey(value: string | string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (Array.isArray(value)) {
    if (value.length === 0) return undefined;
    throw invalidKey('Send exactly one Idempotency-Key header');
  }
  const key = value.startsWith('"') ? decodeSfString(value) : value;
  if (key.length === 0) throw invalidKey('The key is empty');
  if (key.length > IDEMPOTENCY_KEY_MAX_LENGTH) {
    throw invalidKey(`The key is ${key.length} characters long; at most ${IDEMPOTENCY_KEY_MAX_LENGTH} are allowed`);
  }
  if (!VISIBLE_ASCII.test(key)) {
    throw invalidKey('The key may contain visible ASCII characters only (no spaces, control or non-ASCII characters)');
  }
  return key;
}

/**
 * Decodes an RFC 8941 §4.2.5 sf-string (`"…"` with `\"` and `\\` escapes) that must make up the whole value.
 * @throws ProblemException 400 when the string is unterminated, has an invalid escape or character, or is
 *   followed by anything (parameters, a second member).
 */
function decodeSfString(value: string): string {
  let out = '';
  for (let i = 1; i < value.length; i++) {
    const ch = value[i]!;
    if (ch === '\\') {
      const next = value[++i];
      if (next !== '"' && next !== '\\') throw invalidKey('Invalid escape in the quoted key: only \\" and \\\\');
      out += next;
    } else if (ch === '"') {
      if (i !== value.length - 1) {
        throw invalidKey('Unexpected characters after the quoted key (parameters and lists are not supported)');
      }
      return out;
    } else {
      const code = ch.charCodeAt(0);
      if (code < 0x20 || code > 0x7e) throw invalidKey('The quoted key contains a non-ASCII or control character');
      out += ch;
    }
  }
  throw invalidKey('The quoted key has no closing double quote');
}

function invalidKey(message: string): ProblemException {
  return ProblemException.validation(
    [{ path: IDEMPOTENCY_KEY_ERROR_PATH, message }],
    `Invalid ${IDEMPOTENCY_KEY_HEADER} header: ${message}`,
    ProblemType.ValidationError,
  );
}
