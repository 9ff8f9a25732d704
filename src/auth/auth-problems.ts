/**
 * Problem types (RFC 9457) of authentication, authorisation and rate limiting, next to the API's ProblemTypes,
 * and the exceptions that carry them. 401 answers carry `WWW-Authenticate: Bearer …` (RFC 6750 §3), 429 answers
 * `Retry-After` (RFC 6585 §4, RFC 9110 §10.2.3).
 */
import { PROBLEM_TYPE_BASE, ProblemException } from '../common/problem-details.js';
import type { Scope } from './scopes.js';

/** `realm` of the `WWW-Authenticate` challenge. */
export const AUTH_REALM = 'order-fulfilment';

/** Problem types of this layer. */
export const AuthProblemType = {
  /** 401: no API key (or another scheme than Bearer), or a key that is unknown or revoked. */
  Unauthorized: `${PROBLEM_TYPE_BASE}unauthorized`,
  /** 400: a malformed `Authorization: Bearer` header, or several of them (RFC 6750 §3.1 `invalid_request`). */
  InvalidAuthorization: `${PROBLEM_TYPE_BASE}invalid-authorization`,
  /** 403: the key is valid but lacks the scope the route requires (extension `requiredScope`). */
  Forbidden: `${PROBLEM_TYPE_BASE}forbidden`,
  /** 429: the client sent more requests than its limit allows; wait `Retry-After` seconds. */
  RateLimited: `${PROBLEM_TYPE_BASE}rate-limited`,
} as const;
export type AuthProblemType = (typeof AuthProblemType)[keyof typeof AuthProblemType];

/** The `WWW-Authenticate` challenge: with `error="…"` (and its description) when there is an error code. */
function challenge(error: 'invalid_request' | 'invalid_token' | undefined, detail: string): string {
  return error === undefined
    ? `Bearer realm="${AUTH_REALM}"`
    : `Bearer realm="${AUTH_REALM}", error="${error}", error_description="${detail.replace(/["\\]/g, '')}"`;
}

/**
 * 401 `unauthorized`. `challenge` is the `WWW-Authenticate` value the guard sets: without an error code when no
 * credentials were sent or another scheme was used (RFC 6750 §3.1), with `error="invalid_token"` for a key that is
 * unknown, revoked or not one of ours.
 */
export class UnauthorizedProblem extends ProblemException {
  readonly challenge: string;

  constructor(detail: string, error?: 'invalid_token') {
    super({ status: 401, type: AuthProblemType.Unauthorized, title: 'Authentication required', detail });
    this.challenge = challenge(error, detail);
  }
}

/**
 * 400 `invalid-authorization`: RFC 6750 §3.1 `invalid_request` ("the request is … otherwise malformed": a bearer
 * header without a token, a token that is not a b64token, several Authorization headers). "The resource server
 * SHOULD respond with the HTTP 400 (Bad Request) status code", with the challenge.
 */
export class InvalidAuthorizationProblem extends ProblemException {
  readonly challenge: string;

  constructor(detail: string) {
    super({ status: 400, type: AuthProblemType.InvalidAuthorization, title: 'Invalid Authorization header', detail });
    this.challenge = challenge('invalid_request', detail);
  }
}

/** 403 `forbidden`: the key lacks `requiredScope` (RFC 6750 §3.1 `insufficient_scope`). */
export class ForbiddenProblem extends ProblemException {
  readonly challenge: string;

  constructor(readonly requiredScope: Scope) {
    super({
      status: 403,
      type: AuthProblemType.Forbidden,
      title: 'Forbidden',
      detail: `This API key lacks the scope "${requiredScope}" that this operation requires`,
      extensions: { requiredScope },
    });
    this.challenge = `Bearer realm="${AUTH_REALM}", error="insufficient_scope", scope="${requiredScope}"`;
  }
}

/** 429 `rate-limited`; the throttler guard sets `Retry-After`. */
export class RateLimitedProblem extends ProblemException {
  constructor(
    clientId: string,
    limit: number,
    windowMs: number,
    readonly retryAfterSeconds: number,
  ) {
    super({
      status: 429,
      type: AuthProblemType.RateLimited,
      title: 'Too many requests',
      detail: `Client "${clientId}" sent more than ${limit} requests in ${windowMs / 1000} s; retry in ${retryAfterSeconds} s`,
      extensions: { limit, windowSeconds: windowMs / 1000, retryAfterSeconds },
    });
  }
}
