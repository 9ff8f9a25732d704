/**
 * The `Idempotency-Key` request header in the API (draft-ietf-httpapi-idempotency-key-header): reading it from a
 * request with the shared parser ({@link parseIdempotencyKeyHeader}, RFC 8941) and the problem types of the
 * idempotency layer (RFC 9457).
 *
 * Keys are scoped per client: the same key sent by two clients names two unrelated requests (see
 * {@link IdempotencyService}).
 */
import type { IncomingMessage } from 'node:http';
import { PROBLEM_TYPE_BASE, ProblemException, ProblemType } from '../common/problem-details.js';
import {
  IDEMPOTENCY_KEY_HEADER,
  IdempotencyKeyHeaderError,
  parseIdempotencyKeyHeader,
} from './idempotency-protocol.js';

export {
  IDEMPOTENCY_KEY_HEADER,
  IDEMPOTENCY_KEY_MAX_LENGTH,
  IDEMPOTENT_REPLAYED_HEADER,
} from './idempotency-protocol.js';

/** Path of header errors in the `errors` extension. */
export const IDEMPOTENCY_KEY_ERROR_PATH = 'headers.idempotency-key';

/**
 * Problem types (RFC 9457) of the idempotency layer, next to the API's {@link ProblemType}s. A malformed key
 * is a plain `validation-error` naming {@link IDEMPOTENCY_KEY_ERROR_PATH}.
 */
export const IdempotencyProblemType = {
  /** 409: a request with this key is still being processed; retry after `Retry-After` seconds. */
  KeyInUse: `${PROBLEM_TYPE_BASE}idempotency-key-in-use`,
  /** 422: the key was already used with a different request (method, target or body). */
  KeyReused: `${PROBLEM_TYPE_BASE}idempotency-key-reused`,
} as const;
export type IdempotencyProblemType = (typeof IdempotencyProblemType)[keyof typeof IdempotencyProblemType];

/**
 * Reads the request's `Idempotency-Key` from its header lines as received (`headersDistinct`, so two lines are
 * seen as two).
 * @returns the key, or `undefined` when the header is absent.
 * @throws ProblemException 400 `validation-error` (with `errors: [{ path: 'headers.idempotency-key', … }]`)
 *   when the header is present but not exactly one valid key.
 */
export function idempotencyKeyOf(req: IncomingMessage): string | undefined {
  try {
    return parseIdempotencyKeyHeader(req.headersDistinct[IDEMPOTENCY_KEY_HEADER.toLowerCase()]);
  } catch (err) {
    if (!(err instanceof IdempotencyKeyHeaderError)) throw err;
    throw ProblemException.validation(
      [{ path: IDEMPOTENCY_KEY_ERROR_PATH, message: err.message }],
      `Invalid ${IDEMPOTENCY_KEY_HEADER} header: ${err.message}`,
      ProblemType.ValidationError,
    );
  }
}
