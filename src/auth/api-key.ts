/**
 * API keys: their format, generation, hashing and how a request presents one. Pure (node:crypto only), so the
 * keys CLI, `npm start` and the tests use the same code as the API.
 *
 * Format: `of_<env>_<secret>`, where `env` is `live` (keys made with `npm run keys -- create`) or `dev` (the
 * development keys `npm start` makes), and `secret` is 32 random bytes (256 bits, `crypto.randomBytes`) in
 * base64url without padding (43 characters). The prefix makes a leaked key recognisable (secret scanners, logs).
 * The key id is the prefix plus the first {@link KEY_ID_SECRET_CHARS} characters of the secret
 * (`of_live_Ab3dE_gh`): stored in clear, shown by `npm run keys -- list`, used to look the key up and to revoke it.
 *
 * Storage: only SHA-256 of the whole key. A fast, unsalted hash is right for a high-entropy random secret: a
 * password hash (bcrypt, Argon2) exists to slow down guessing of low-entropy human passwords, and nobody can
 * enumerate 2^256 secrets (OWASP Authentication Cheat Sheet / Password Storage Cheat Sheet on when slow hashes
 * are needed; NIST SP 800-63B §5.1.1.2 asks for them for memorised secrets only). The lookup by key id plus a
 * constant-time comparison of the hash keeps verification free of timing differences on the secret.
 *
 * Presentation (RFC 6750 §2.1): `Authorization: Bearer <key>`; the scheme is case-insensitive (RFC 9110 §11.1).
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Environments a key is made for; part of its prefix. */
export const ApiKeyEnv = {
  /** Made by an operator with `npm run keys -- create`. */
  Live: 'live',
  /** Made by `npm start` for local development (printed in its banner, written to `.data/api-keys.json`). */
  Dev: 'dev',
} as const;
export type ApiKeyEnv = (typeof ApiKeyEnv)[keyof typeof ApiKeyEnv];

/** Random bytes in a key's secret. */
export const KEY_SECRET_BYTES = 32;

/** Characters of the secret that belong to the key id. */
export const KEY_ID_SECRET_CHARS = 8;

const KEY_PATTERN = /^of_(live|dev)_([A-Za-z0-9_-]{43})$/;

/** Client ids: lower-case, safe as a log field and a metric label. */
export const CLIENT_ID_PATTERN = /^[a-z0-9][a-z0-9._-]{0,62}$/;

/** A new key: the secret to hand out once, its id and the hash to store. */
export interface GeneratedApiKey {
  /** The whole key (`of_live_…`): shown once, never stored. */
  key: string;
  /** Key id (`of_live_` + 8 characters). */
  id: string;
  /** SHA-256 of `key`, lower-case hex (64 characters). */
  hash: string;
}

/** Makes a new random key for `env`. */
export function generateApiKey(env: ApiKeyEnv = ApiKeyEnv.Live): GeneratedApiKey {
  const key = `of_${env}_${randomBytes(KEY_SECRET_BYTES).toString('base64url')}`;
  return { key, id: apiKeyId(key)!, hash: hashApiKey(key) };
}

/** True when `key` has the format of an API key (not whether it exists). */
export function isApiKeyFormat(key: string): boolean {
  return KEY_PATTERN.test(key);
}

/** The key id of a well-formed key, or null when `key` is not one. */
export function apiKeyId(key: string): string | null {
  const match = KEY_PATTERN.exec(key);
  return match ? `of_${match[1]}_${match[2]!.slice(0, KEY_ID_SECRET_CHARS)}` : null;
}

/** SHA-256 of the key, lower-case hex: what is stored. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Constant-time comparison of a presented key with a stored hash. */
export function apiKeyMatches(key: string, storedHash: string): boolean {
  const presented = Buffer.from(hashApiKey(key), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}

/** What an `Authorization` header said. */
export type BearerCredentials =
  /** No `Authorization` header. */
  | { kind: 'absent' }
  /** `Bearer <token>` (the token is not checked here). */
  | { kind: 'bearer'; token: string }
  /**
   * Another authentication scheme (e.g. `Basic`): RFC 6750 §3.1 treats it like no credentials ("attempted using an
   * unsupported authentication method": 401, no error code).
   */
  | { kind: 'other-scheme'; reason: string }
  /** A bearer header without a valid RFC 6750 b64token, or several header lines: `invalid_request` (400). */
  | { kind: 'malformed'; reason: string };

/** RFC 6750 §2.1: `b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="`. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*)$/i;

/**
 * Reads `Authorization` from its header lines as received (`req.headersDistinct.authorization`).
 * @returns `absent`, the bearer token, `other-scheme`, or `malformed`, each with a reason safe to show.
 */
export function parseAuthorization(lines: readonly string[] | undefined): BearerCredentials {
  if (lines === undefined || lines.length === 0) return { kind: 'absent' };
  if (lines.length > 1) return { kind: 'malformed', reason: 'Send exactly one Authorization header' };
  const value = lines[0]!.trim();
  const match = BEARER.exec(value);
  if (match) return { kind: 'bearer', token: match[1]! };
  if (/^Bearer\b/i.test(value)) return { kind: 'malformed', reason: 'The bearer token is missing or malformed' };
  return { kind: 'other-scheme', reason: 'Use the Bearer scheme: Authorization: Bearer <API key>' };
}
