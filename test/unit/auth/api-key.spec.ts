/**
 * Unit: API key format, hashing and verification helpers (src/auth/api-key.ts), and scopes (src/auth/scopes.ts).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AuthProblemType, InvalidAuthorizationProblem } from '../../../src/auth/auth-problems.js';
import {
  ApiKeyEnv,
  apiKeyId,
  apiKeyMatches,
  generateApiKey,
  hashApiKey,
  isApiKeyFormat,
  parseAuthorization,
} from '../../../src/auth/api-key.js';
import { CLIENT_SCOPES, hasScope, parseScopes, Scope } from '../../../src/auth/scopes.js';

describe('generateApiKey', () => {
  it('makes of_<env>_ + 43 base64url characters (32 random bytes), its id and its SHA-256', () => {
    const live = generateApiKey();
    expect(live.key).toMatch(/^of_live_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(live.key.slice('of_live_'.length), 'base64url')).toHaveLength(32);
    expect(live.id).toBe(live.key.slice(0, 'of_live_'.length + 8));
    expect(live.hash).toBe(createHash('sha256').update(live.key).digest('hex'));
    expect(generateApiKey(ApiKeyEnv.Dev).key).toMatch(/^of_dev_[A-Za-z0-9_-]{43}$/);
  });

  it('never repeats itself', () => {
    const keys = new Set(Array.from({ length: 1000 }, () => generateApiKey().key));
    expect(keys.size).toBe(1000);
  });
});

describe('key format, id and hash', () => {
  const { key } = generateApiKey();

  it('recognises well-formed keys only', () => {
    expect(isApiKeyFormat(key)).toBe(true);
    for (const bad of ['', 'of_live_', `${key}x`, key.slice(0, -1), key.replace('of_live_', 'of_prod_'), `x${key}`]) {
      expect(isApiKeyFormat(bad), bad).toBe(false);
      expect(apiKeyId(bad), bad).toBeNull();
    }
  });

  it('compares a presented key with the stored hash', () => {
    expect(apiKeyMatches(key, hashApiKey(key))).toBe(true);
    expect(apiKeyMatches(generateApiKey().key, hashApiKey(key))).toBe(false);
    expect(apiKeyMatches(key, 'abc')).toBe(false);
  });
});

describe('parseAuthorization (RFC 6750 §2.1)', () => {
  it('reads a Bearer token, the scheme in any case', () => {
    expect(parseAuthorization(['Bearer abc.DEF-_~+/=='])).toEqual({ kind: 'bearer', token: 'abc.DEF-_~+/==' });
    expect(parseAuthorization(['bearer  tok'])).toEqual({ kind: 'bearer', token: 'tok' });
  });

  it('absent without the header', () => {
    expect(parseAuthorization(undefined)).toEqual({ kind: 'absent' });
    expect(parseAuthorization([])).toEqual({ kind: 'absent' });
  });

  it('another scheme: not a malformed request (RFC 6750 §3: a 401 without an error code)', () => {
    expect(parseAuthorization(['Basic dXNlcjpwYXNz'])).toMatchObject({ kind: 'other-scheme' });
  });

  it.each([
    ['no token', ['Bearer']],
    ['a token with a space', ['Bearer a b']],
    ['a token with a quote', ['Bearer "abc"']],
    ['two header lines', ['Bearer a', 'Bearer b']],
  ])('malformed: %s', (_name, lines) => {
    expect(parseAuthorization(lines)).toMatchObject({ kind: 'malformed', reason: expect.any(String) });
  });
});

describe('docs/api.md on a malformed Authorization header (issue 21)', () => {
  it('says 400 invalid-authorization, as the guard answers, not 401', () => {
    const problem = new InvalidAuthorizationProblem('The bearer token is missing or malformed').problem;
    expect(problem).toMatchObject({ status: 400, type: AuthProblemType.InvalidAuthorization });
    const doc = readFileSync(new URL('../../../docs/api.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    expect(doc).toContain('a malformed `Bearer` header');
    expect(doc).toMatch(/a malformed `Bearer` header[^.]*→ \*\*400\*\* `invalid-authorization`/);
    expect(doc).not.toMatch(/malformed `Authorization`[^.]*→ \*\*401\*\*/);
  });
});

describe('scopes', () => {
  it('operator satisfies every requirement; others only their own', () => {
    for (const scope of Object.values(Scope)) expect(hasScope([Scope.Operator], scope)).toBe(true);
    expect(hasScope(CLIENT_SCOPES, Scope.OrdersWrite)).toBe(true);
    expect(hasScope(CLIENT_SCOPES, Scope.InventoryWrite)).toBe(false);
    expect(hasScope(CLIENT_SCOPES, Scope.Operator)).toBe(false);
    expect(hasScope([], Scope.OrdersRead)).toBe(false);
  });

  it('parses comma or space separated lists, rejects unknown and empty ones', () => {
    expect(parseScopes('orders:read, orders:write orders:read')).toEqual(['orders:write', 'orders:read']);
    expect(() => parseScopes('orders:read,orders:delete')).toThrow(/orders:delete/);
    expect(() => parseScopes(' , ')).toThrow(/No scope/);
  });
});
