/**
 * Unit: the shared Idempotency-Key protocol (src/idempotency/idempotency-protocol.ts): the header per RFC 8941 and
 * the fingerprint over RFC 8785 canonical JSON. The API and the simulators both use these functions.
 */
import { describe, expect, it } from 'vitest';
import {
  canonicalJson,
  IdempotencyKeyHeaderError,
  IdempotencyKeyHeaderFault,
  parseIdempotencyKeyHeader,
  requestFingerprint,
} from '../../../src/idempotency/idempotency-protocol.js';

describe('parseIdempotencyKeyHeader', () => {
  it('reads the bare and the Structured Field string form as the same key', () => {
    expect(parseIdempotencyKeyHeader(['8e03978e-40d5-43e8-bc93-6894a57f9324'])).toBe(
      '8e03978e-40d5-43e8-bc93-6894a57f9324',
    );
    expect(parseIdempotencyKeyHeader(['"8e03978e-40d5-43e8-bc93-6894a57f9324"'])).toBe(
      '8e03978e-40d5-43e8-bc93-6894a57f9324',
    );
    expect(parseIdempotencyKeyHeader('abc')).toBe('abc');
    expect(parseIdempotencyKeyHeader(['"a\\"b\\\\c"'])).toBe('a"b\\c');
    expect(parseIdempotencyKeyHeader(['k'.repeat(255)])).toBe('k'.repeat(255));
  });

  it('undefined when absent', () => {
    expect(parseIdempotencyKeyHeader(undefined)).toBeUndefined();
    expect(parseIdempotencyKeyHeader([])).toBeUndefined();
  });

  it('two header lines (Node would join them into "a1, b2") → multiple, with the "exactly one" message', () => {
    const error = capture(() => parseIdempotencyKeyHeader(['a1', 'b2']));
    expect(error.fault).toBe(IdempotencyKeyHeaderFault.Multiple);
    expect(error.message).toBe('Send exactly one Idempotency-Key header (got 2)');
  });

  it.each([
    ['empty', ''],
    ['an empty string item', '""'],
    ['256 characters', 'k'.repeat(256)],
    ['a space', 'two words'],
    ['non-ASCII', 'caf\u00e9'],
    ['a joined pair', 'a1, b2'],
    ['a bare comma', 'a1,b2'],
    ['an unterminated string', '"abc'],
    ['parameters', '"abc";p=1'],
    ['a bad escape', '"a\\bc"'],
    ['a list of strings', '"a", "b"'],
    ['a quoted space', '"a b"'],
  ])('malformed: %s', (_name, value) => {
    expect(capture(() => parseIdempotencyKeyHeader([value])).fault).toBe(IdempotencyKeyHeaderFault.Malformed);
  });
});

describe('requestFingerprint (RFC 8785 canonical JSON)', () => {
  const request = { method: 'POST', target: '/orders', body: { b: [1, { y: 2, x: 1 }], a: 'é' } };

  it('ignores member order and whitespace; method case does not matter', () => {
    const reordered = JSON.parse('{ "a" : "é", "b": [1, {"x":1,   "y":2}] }') as unknown;
    expect(requestFingerprint({ ...request, method: 'post', body: reordered })).toBe(requestFingerprint(request));
    expect(requestFingerprint(request)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('differs by method, target and body', () => {
    const base = requestFingerprint(request);
    expect(requestFingerprint({ ...request, method: 'PUT' })).not.toBe(base);
    expect(requestFingerprint({ ...request, target: '/orders?x=1' })).not.toBe(base);
    expect(requestFingerprint({ ...request, body: { ...request.body, a: 'e' } })).not.toBe(base);
  });

  it('writes numbers and strings as RFC 8785 does', () => {
    expect(canonicalJson({ n: [1.0, 1e21, 0.1, -0, 1e-7], s: '\u20ac\n' })).toBe(
      '{"n":[1,1e+21,0.1,0,1e-7],"s":"€\\n"}',
    );
    expect(canonicalJson(undefined)).toBe('null');
  });
});

function capture(fn: () => unknown): IdempotencyKeyHeaderError {
  try {
    fn();
  } catch (err) {
    if (err instanceof IdempotencyKeyHeaderError) return err;
    throw err;
  }
  throw new Error('expected an IdempotencyKeyHeaderError');
}
