/**
 * The `Idempotency-Key` request header in the API (draft-ietf-httpapi-idempotency-key-header): reading it from a
 * request with the shared parser ({@link parseIdempotencyKeyHeader}, RFC 8941) and the problem types of the
 * idempotency layer (RFC 9457).
 *
 * Keys are scoped per client: the same key sent by two clients names two unrelated requests (see
 * {@link IdempotencyService}).
 */
import type { IncomingMessage } from 'node:http';
import {
  defineProblemTypes,
  PROBLEM_TYPE_BASE,
  ProblemException,
  ProblemType,
  problemTypeUris,
} from '../common/problem-details.js';
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
export const IdempotencyProblemTypes = defineProblemTypes({
  KeyInUse: {
    uri: `${PROBLEM_TYPE_BASE}idempotency-key-in-use`,
    title: 'Idempotency key in use',
    statuses: [409],
    description:
      'A request with this `Idempotency-Key` is still being processed; repeat it after `Retry-After` seconds to get ' +
      'its response.',
    headers: {
      'Retry-After': {
        description: 'Seconds to wait before repeating the request',
        schema: { type: 'integer', minimum: 0 },
      },
    },
    example: {
      detail: 'A request with Idempotency-Key "abc" is still being processed; retry in 1 s to get its response',
    },
  },
  KeyReused: {
    uri: `${PROBLEM_TYPE_BASE}idempotency-key-reused`,
    title: 'Idempotency key reused with a different payload',
    statuses: [422],
    description:
      'The `Idempotency-Key` was already used for a different request (method, target or body): use a new key for a ' +
      'new request.',
    example: { detail: 'Idempotency-Key "abc" was already used for a request with a different body' },
  },
});

/** The URIs of {@link IdempotencyProblemTypes}. */
export const IdempotencyProblemType = problemTypeUris(IdempotencyProblemTypes);
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
