/**
 * Problem types (RFC 9457) of authentication, authorisation and rate limiting, next to the API's ProblemTypes,
 * and the exceptions that carry them. 401 answers carry `WWW-Authenticate: Bearer …` (RFC 6750 §3), 429 answers
 * `Retry-After` (RFC 6585 §4, RFC 9110 §10.2.3).
 */
import { z } from 'zod';
import {
  defineProblemTypes,
  PROBLEM_TYPE_BASE,
  type ProblemHeader,
  ProblemException,
  problemTypeUris,
} from '../common/problem-details.js';
import { ALL_SCOPES, type Scope } from './scopes.js';

/** `realm` of the `WWW-Authenticate` challenge. */
export const AUTH_REALM = 'order-fulfilment';

/** The challenge of 401, 403 and this layer's 400 answers. */
const WWW_AUTHENTICATE: ProblemHeader = {
  description: `The Bearer challenge (RFC 6750 §3), e.g. \`Bearer realm="${AUTH_REALM}", error="invalid_token"\``,
};

/** Problem types of this layer (every authenticated operation may answer them; 403 those that need a scope). */
export const AuthProblemTypes = defineProblemTypes({
  Unauthorized: {
    uri: `${PROBLEM_TYPE_BASE}unauthorized`,
    title: 'Authentication required',
    statuses: [401],
    description:
      'No API key (or another scheme than Bearer), or a key that is unknown or revoked; `WWW-Authenticate` has ' +
      '`error="invalid_token"` for a bad key.',
    headers: { 'WWW-Authenticate': WWW_AUTHENTICATE },
    example: { detail: 'This operation needs an API key: send Authorization: Bearer <API key>' },
    appliesTo: [{ operations: 'authenticated', description: 'No API key, or a key that is unknown or revoked' }],
  },
  InvalidAuthorization: {
    uri: `${PROBLEM_TYPE_BASE}invalid-authorization`,
    title: 'Invalid Authorization header',
    statuses: [400],
    description: 'A malformed `Authorization: Bearer` header, or several of them (RFC 6750 §3.1 `invalid_request`).',
    headers: { 'WWW-Authenticate': WWW_AUTHENTICATE },
    example: { detail: 'The Authorization header has no bearer token' },
    appliesTo: [{ operations: 'authenticated', description: 'A malformed `Authorization` header' }],
  },
  Forbidden: {
    uri: `${PROBLEM_TYPE_BASE}forbidden`,
    title: 'Forbidden',
    statuses: [403],
    description:
      'The key is valid but lacks the scope the operation requires (`requiredScope`; RFC 6750 §3.1 ' +
      '`insufficient_scope`).',
    extensions: {
      requiredScope: z.enum(ALL_SCOPES as [Scope, ...Scope[]]).meta({ description: 'The scope the operation needs' }),
    },
    headers: { 'WWW-Authenticate': WWW_AUTHENTICATE },
    example: {
      detail: 'This API key lacks the scope "orders:cancel" that this operation requires',
      requiredScope: 'orders:cancel',
    },
    appliesTo: [{ operations: 'scoped', description: 'The API key lacks the scope this operation needs' }],
  },
  RateLimited: {
    uri: `${PROBLEM_TYPE_BASE}rate-limited`,
    title: 'Too many requests',
    statuses: [429],
    description: 'The client sent more requests than its limit allows; wait `Retry-After` seconds.',
    extensions: {
      limit: z.int().meta({ description: 'Requests allowed per window' }),
      windowSeconds: z.number().meta({ description: 'The window, seconds' }),
      retryAfterSeconds: z.int().meta({ description: 'Seconds until the client may send again' }),
    },
    headers: {
      'Retry-After': {
        description: 'Seconds to wait before retrying (RFC 6585 §4)',
        schema: { type: 'integer', minimum: 0 },
      },
    },
    example: {
      detail: 'Client "shop-a" sent more than 6000 requests in 60 s; retry in 12 s',
      limit: 6000,
      windowSeconds: 60,
      retryAfterSeconds: 12,
    },
    appliesTo: [{ operations: 'authenticated', description: "Over the client's rate limit" }],
  },
});

/** The URIs of {@link AuthProblemTypes}. */
export const AuthProblemType = problemTypeUris(AuthProblemTypes);
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
    super({ type: AuthProblemType.Unauthorized, detail });
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
    super({ type: AuthProblemType.InvalidAuthorization, detail });
    this.challenge = challenge('invalid_request', detail);
  }
}

/** 403 `forbidden`: the key lacks `requiredScope` (RFC 6750 §3.1 `insufficient_scope`). */
export class ForbiddenProblem extends ProblemException {
  readonly challenge: string;

  constructor(readonly requiredScope: Scope) {
    super({
      type: AuthProblemType.Forbidden,
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
      type: AuthProblemType.RateLimited,
      detail: `Client "${clientId}" sent more than ${limit} requests in ${windowMs / 1000} s; retry in ${retryAfterSeconds} s`,
      extensions: { limit, windowSeconds: windowMs / 1000, retryAfterSeconds },
    });
  }
}
