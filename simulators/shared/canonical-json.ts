/**
 * Canonical JSON for request fingerprints: object members sorted by key (code-unit order) at every depth,
 * no insignificant whitespace, `undefined` members dropped. This follows the spirit of RFC 8785 (JCS) closely
 * enough for fingerprinting JSON that came off the wire (numbers are printed by `JSON.stringify`).
 */
import { createHash } from 'node:crypto';

/** Serialises `value` canonically; `undefined` (no body) serialises as `null`. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortDeep(value)) ?? 'null';
}

function sortDeep(value: unknown): unknown {
  if (Array.isArray(value)) return value.map((v) => (v === undefined ? null : sortDeep(v)));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const member = (value as Record<string, unknown>)[key];
      if (member !== undefined) out[key] = sortDeep(member);
    }
    return out;
  }
  return value;
}

/**
 * The fingerprint of a request for idempotency-key reuse checks
 * (draft-ietf-httpapi-idempotency-key-header §2.4): SHA-256 hex of `METHOD path canonical-body`.
 * @param method HTTP method, any case.
 * @param path Request target (path and query as received).
 * @param body Parsed JSON body, or `undefined` when there was none.
 */
export function requestFingerprint(method: string, path: string, body: unknown): string {
  return createHash('sha256')
    .update(`${method.toUpperCase()} ${path}\n${canonicalJson(body)}`)
    .digest('hex');
}
