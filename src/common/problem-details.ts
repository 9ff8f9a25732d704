/**
 * Problem Details for HTTP APIs (RFC 9457, https://www.rfc-editor.org/rfc/rfc9457): the one error format
 * of this API. Every error response has `Content-Type: application/problem+json` and a body of
 * {@link ProblemDetails}; `type` is a URI from {@link ProblemType} (or `about:blank` for errors that carry
 * nothing beyond their HTTP status), `instance` is the request path.
 */
import { HttpException } from '@nestjs/common';
import { z } from 'zod';

/** Media type of problem documents (RFC 9457 §3). */
export const PROBLEM_JSON = 'application/problem+json';

/** Base of this API's problem type URIs. */
export const PROBLEM_TYPE_BASE = 'https://order-fulfilment.dev/problems/';

/**
 * The operations a problem type applies to without their controller naming it (the OpenAPI document adds it to
 * each): every operation; those with parameters or a body; those with a body; those that need an API key; those that
 * need a scope.
 */
export type OperationKind = 'every' | 'with-input' | 'with-body' | 'authenticated' | 'scoped';

/** A response header a problem type's answers carry (RFC 9110 field name → what it says). */
export interface ProblemHeader {
  description: string;
  /** JSON Schema of the value; default a string. */
  schema?: { type: 'string' | 'integer'; minimum?: number };
  /** Sent with every occurrence (default true). */
  required?: boolean;
}

/**
 * One problem type (RFC 9457 §3.1.1 `type`, §4 defining new problem types): the one place that says what its
 * occurrences look like. The OpenAPI document derives a schema per type from it (`type` fixed to {@link uri},
 * `status` to {@link statuses}, the {@link extensions} as members) and the responses of each operation, so the code
 * that throws and the document that describes cannot drift apart.
 */
export interface ProblemTypeSpec<U extends string = string> {
  /** The `type` URI (`about:blank`, or {@link PROBLEM_TYPE_BASE} + a slug). */
  uri: U;
  /** The `title` of every occurrence (RFC 9457 §3.1.3). `about:blank` uses the status's reason phrase instead. */
  title: string;
  /** The HTTP statuses an occurrence can have; empty for `about:blank` (any error status). */
  statuses: readonly number[];
  /** What the type means and what a client should do about it (the schema's description). */
  description: string;
  /** Extension members (RFC 9457 §3.2), as zod schemas; optional ones `.optional()`. */
  extensions?: z.ZodRawShape;
  /** Headers its answers carry, e.g. `Retry-After` (RFC 9110 §10.2.3), `WWW-Authenticate` (RFC 9110 §11.6.1). */
  headers?: Readonly<Record<string, ProblemHeader>>;
  /** An occurrence's `detail` and extension members, for the document's examples. */
  example: { detail: string } & Record<string, unknown>;
  /**
   * Where the document lists this type without a controller naming it: the kinds of operations, and for
   * `about:blank` the status it stands for there (with what it means).
   */
  appliesTo?: readonly { operations: OperationKind; status?: number; description?: string }[];
}

/** A registered {@link ProblemTypeSpec}: `name` is its schema's name in the document (`<Key>Problem`). */
export type ProblemTypeDefinition<U extends string = string> = ProblemTypeSpec<U> & { readonly name: string };

const REGISTRY = new Map<string, ProblemTypeDefinition>();

/**
 * Defines and registers problem types, one per key (`OrderNotCancellable` → schema `OrderNotCancellableProblem`).
 * Each layer defines its own (this file the generic ones, auth, idempotency, orders, inventory theirs); the OpenAPI
 * document describes every registered one.
 * @throws Error when a URI or a name is already registered for another type (two definitions of one problem).
 */
export function defineProblemTypes<const T extends Record<string, ProblemTypeSpec>>(
  specs: T,
): { readonly [K in keyof T]: T[K] & { readonly name: string } } {
  const defined: Record<string, ProblemTypeDefinition> = {};
  for (const [key, spec] of Object.entries(specs)) {
    const definition: ProblemTypeDefinition = { ...spec, name: `${key}Problem` };
    for (const other of REGISTRY.values()) {
      const sameUri = other.uri === definition.uri;
      if (sameUri !== (other.name === definition.name)) {
        throw new Error(
          `problem type ${definition.uri} (${definition.name}) clashes with ${other.uri} (${other.name})`,
        );
      }
    }
    REGISTRY.set(definition.uri, definition);
    defined[key] = definition;
  }
  return defined as { readonly [K in keyof T]: T[K] & { readonly name: string } };
}

/** Every registered problem type, in registration order. */
export function registeredProblemTypes(): readonly ProblemTypeDefinition[] {
  return [...REGISTRY.values()];
}

/** The registered definition of the type `uri`, if any. */
export function problemTypeOf(uri: string): ProblemTypeDefinition | undefined {
  return REGISTRY.get(uri);
}

/** `{ Key: uri }` of a set of definitions: the constants code throws with. */
export function problemTypeUris<T extends Record<string, { uri: string }>>(
  definitions: T,
): { readonly [K in keyof T]: T[K]['uri'] } {
  return Object.fromEntries(Object.entries(definitions).map(([key, d]) => [key, d.uri])) as {
    readonly [K in keyof T]: T[K]['uri'];
  };
}

/** One failed constraint of a validation problem: `path` is dotted (`lines.0.quantity`, `''` for the root). */
export interface ValidationErrorItem {
  path: string;
  message: string;
}

/** The `errors` extension member of validation problems. */
export const validationErrorsSchema = z
  .array(
    z
      .object({
        path: z.string().meta({ description: 'Dotted path of the member (`lines.0.quantity`); `` for the root' }),
        message: z.string(),
      })
      .meta({ id: 'ValidationErrorItem' }),
  )
  .meta({ description: 'Validation failures, one per violated constraint' });

/** Every 503 carries `Retry-After` (the problem filter sets it when the code that threw did not). */
const RETRY_AFTER: ProblemHeader = {
  description: 'Seconds to wait before repeating the request (RFC 9110 §10.2.3)',
  schema: { type: 'integer', minimum: 0 },
};

/**
 * The generic problem types of this API, used by every layer. Each is a stable URI clients may switch on
 * (RFC 9457 §3.1.1); `about:blank` means "no more semantics than the HTTP status" (RFC 9457 §4.2.1).
 */
export const ProblemTypes = defineProblemTypes({
  AboutBlank: {
    uri: 'about:blank',
    title: 'The reason phrase of the status',
    statuses: [],
    description:
      'No more semantics than the HTTP status (RFC 9457 §4.2.1); `title` is its reason phrase. The framework answers ' +
      'so for statuses nothing else describes (a path no route serves: 404); no operation lists it.',
    example: { detail: 'Cannot GET /no-such-route' },
  },
  ValidationError: {
    uri: `${PROBLEM_TYPE_BASE}validation-error`,
    title: 'Your request is not valid',
    statuses: [400],
    description:
      'The body, a query or path parameter, or a header (`Idempotency-Key`) failed validation; `errors` names each ' +
      'failed constraint. That includes a body nested deeper than the API accepts or naming a member twice in one ' +
      'object (both refused before the body is parsed), and members named `__proto__`, `constructor` or ' +
      '`prototype`. Nothing was changed: fix the request and send it again.',
    extensions: { errors: validationErrorsSchema },
    example: {
      detail: 'lines.0.quantity: Too small: expected number to be >=1',
      errors: [{ path: 'lines.0.quantity', message: 'Too small: expected number to be >=1' }],
    },
    appliesTo: [
      {
        operations: 'with-input',
        description:
          'A parameter, header or the body failed validation, or the body is nested too deep or names a member twice',
      },
    ],
  },
  CardNumberRefused: {
    uri: `${PROBLEM_TYPE_BASE}card-number-refused`,
    title: 'Card numbers are not accepted',
    statuses: [422],
    description:
      'The body carries a value that looks like a payment card number (13 to 19 digits, spaces or dashes allowed, ' +
      'passing the Luhn check), anywhere in it. This service never takes card numbers: pay with a payment-method ' +
      'token from the payments provider (`payment: { method: "pm_…" }`). Checked on the raw body before it is ' +
      'parsed; the value is neither stored nor logged, and nothing was changed.',
    example: {
      detail:
        'The body carries a value that looks like a card number; this service never takes card numbers. Send a ' +
        'payment-method token (pm_…) instead.',
    },
    appliesTo: [{ operations: 'with-body', description: 'The body carries a card-number-like value' }],
  },
  UnsupportedMediaType: {
    uri: `${PROBLEM_TYPE_BASE}unsupported-media-type`,
    title: 'Unsupported media type',
    statuses: [415],
    description:
      'The request has a body that is not plain UTF-8 JSON: another media type (a form, text, or a JSON variant with ' +
      'its own semantics such as `application/merge-patch+json`), no `Content-Type`, a charset other than UTF-8, or a ' +
      '`Content-Encoding` the API does not decode. Send it as `Content-Type: application/json` in UTF-8, uncompressed ' +
      'or with gzip, deflate or br.',
    example: { detail: 'Send the body as application/json (got application/merge-patch+json)' },
    appliesTo: [
      {
        operations: 'with-body',
        description:
          'The body is not sent as `application/json` in UTF-8 (a `+json` variant such as ' +
          '`application/merge-patch+json` included), or with a Content-Encoding the API does not decode',
      },
    ],
  },
  BodyTooLarge: {
    uri: `${PROBLEM_TYPE_BASE}body-too-large`,
    title: 'Request body too large',
    statuses: [413],
    description:
      'The request body is larger than the API accepts (`limitBytes`, the JSON body limit); it was not read further ' +
      'and nothing was changed. The largest valid body, an order of 50 lines, is a few KB.',
    extensions: {
      limitBytes: z
        .int()
        .positive()
        .optional()
        .meta({ description: 'The most bytes a request body may have', example: 102400 }),
    },
    example: { detail: 'The request body is 204851 bytes; at most 102400 bytes are accepted', limitBytes: 102400 },
    appliesTo: [{ operations: 'with-body', description: 'The body is larger than the JSON body limit' }],
  },
  MalformedJson: {
    uri: `${PROBLEM_TYPE_BASE}malformed-json`,
    title: 'Malformed JSON body',
    statuses: [400],
    description:
      'The request body is not valid JSON, not valid UTF-8, or its gzip, deflate or br data is corrupt; `errors` ' +
      'holds the message.',
    extensions: { errors: validationErrorsSchema },
    example: {
      detail: 'The request body is not valid JSON: Unexpected end of JSON input',
      errors: [{ path: '', message: 'Unexpected end of JSON input' }],
    },
    appliesTo: [{ operations: 'with-body', description: 'The body is not JSON' }],
  },
  MalformedRequest: {
    uri: `${PROBLEM_TYPE_BASE}malformed-request`,
    title: 'Malformed HTTP request',
    statuses: [400, 408, 413, 431],
    description:
      "The request is not valid HTTP/1.1 (Node's parser refused it: a control character in a header, a bad request " +
      'line, headers too large), or did not arrive in time (408, `ERR_HTTP_REQUEST_TIMEOUT`: headers within ' +
      '`HTTP_HEADERS_TIMEOUT_MS`, the whole request within `HTTP_REQUEST_TIMEOUT_MS`); `parserError` is the ' +
      "parser's code. The connection is closed. Answered before any route is known, so no operation lists it.",
    extensions: {
      parserError: z
        .string()
        .optional()
        .meta({ description: "The parser's code", example: 'HPE_INVALID_HEADER_TOKEN' }),
    },
    example: {
      detail: 'A header name or value contains a character HTTP does not allow',
      parserError: 'HPE_INVALID_HEADER_TOKEN',
    },
  },
  MethodNotAllowed: {
    uri: `${PROBLEM_TYPE_BASE}method-not-allowed`,
    title: 'Method not allowed',
    statuses: [405],
    description: 'The resource exists but not with this method; `allow` and the `Allow` header list its methods.',
    extensions: { allow: z.array(z.string()).meta({ description: 'The methods the resource supports' }) },
    headers: { Allow: { description: 'The methods the resource supports (RFC 9110 §10.2.1)' } },
    example: { detail: 'DELETE is not supported on /orders; supported: GET, POST', allow: ['GET', 'POST'] },
  },
  NotFound: {
    uri: `${PROBLEM_TYPE_BASE}not-found`,
    title: 'Resource not found',
    statuses: [404],
    description: "The addressed resource does not exist (another client's order counts as not existing).",
    example: { detail: 'Order 3f0c2a5e-8b1d-4c8e-9d4f-0a1b2c3d4e5f does not exist' },
  },
  ServiceUnavailable: {
    uri: `${PROBLEM_TYPE_BASE}service-unavailable`,
    title: 'Service unavailable',
    statuses: [503],
    description:
      'A dependency (the database, Temporal, or a worker to run the workflow) is unavailable right now; nothing was ' +
      'changed. Repeat the request after `Retry-After` seconds (with the same `Idempotency-Key`). `/health` adds ' +
      '`checks` (and, for an operator key, `details`).',
    extensions: {
      checks: z
        .record(z.string(), z.enum(['up', 'down']))
        .optional()
        .meta({ description: '`/health` only: each dependency, `up` or `down`' }),
      details: z
        .record(
          z.string(),
          z.object({
            state: z.enum(['up', 'down']),
            durationMs: z.number().meta({ description: 'How long the check took, ms' }),
            error: z.string().optional().meta({ description: 'Why it is down' }),
          }),
        )
        .optional()
        .meta({ description: '`/health` with an operator key only: why a check failed' }),
    },
    headers: { 'Retry-After': RETRY_AFTER },
    example: { detail: 'The workflow engine (Temporal) is unavailable; try again later' },
    appliesTo: [
      {
        operations: 'every',
        description:
          'A dependency (the database) is unavailable right now: nothing changed; repeat after `Retry-After` seconds',
      },
    ],
  },
  InternalError: {
    uri: `${PROBLEM_TYPE_BASE}internal-error`,
    title: 'Internal Server Error',
    statuses: [500],
    description: 'An unexpected server error; details are in the server log, never in the response.',
    example: { detail: 'An unexpected error occurred. It has been logged.' },
  },
});

/** The URIs of {@link ProblemTypes}, e.g. `ProblemType.ValidationError`. */
export const ProblemType = problemTypeUris(ProblemTypes);
export type ProblemType = (typeof ProblemType)[keyof typeof ProblemType];

/**
 * An RFC 9457 problem document. Extension members (e.g. `errors`, `skus`) sit next to the standard ones.
 */
export interface ProblemDetails {
  /** URI identifying the problem type. */
  type: string;
  /** Short, human-readable summary of the problem type (the same for every occurrence). */
  title: string;
  /** The HTTP status code, repeated for convenience. */
  status: number;
  /** Human-readable explanation of this occurrence. */
  detail?: string;
  /** The request path this occurrence relates to. */
  instance?: string;
  /** Validation failures (only on `validation-error` and similar 400 problems). */
  errors?: ValidationErrorItem[];
  [extension: string]: unknown;
}

/**
 * What a {@link ProblemException} is built from. `type` defaults to `about:blank`; `status` and `title` default to
 * the registered type's (its only status, its title), so a throw site restates neither.
 */
export interface ProblemInit {
  /** Required for `about:blank` and for types with several statuses. */
  status?: number;
  type?: string;
  title?: string;
  detail?: string;
  /** Extension members, e.g. `{ errors: [...] }` or `{ skus: ['X'] }`. Must not reuse standard member names. */
  extensions?: Record<string, unknown>;
}

/**
 * An HTTP error that renders as the given problem document (the filter adds `instance`).
 * Throw it from controllers and services for every expected error.
 */
export class ProblemException extends HttpException {
  /** The problem document, without `instance` (added by the filter). */
  readonly problem: ProblemDetails;

  /**
   * @throws Error when the status is missing (and the type does not define exactly one) or is not one of the
   *   registered type's statuses: a programming error, found by the tests that reach the throw site.
   */
  constructor(init: ProblemInit, options?: { cause?: unknown }) {
    const type = init.type ?? ProblemType.AboutBlank;
    const definition = type === ProblemType.AboutBlank ? undefined : problemTypeOf(type);
    const status = init.status ?? (definition?.statuses.length === 1 ? definition.statuses[0] : undefined);
    if (status === undefined) throw new Error(`ProblemException of type ${type} needs a status`);
    if (definition && !definition.statuses.includes(status)) {
      throw new Error(`Problem type ${type} is defined for ${definition.statuses.join(', ')}, not ${status}`);
    }
    const title = init.title ?? definition?.title ?? defaultTitle(status);
    super(init.detail ?? title, status, options);
    this.problem = {
      ...init.extensions,
      type,
      title,
      status,
      ...(init.detail !== undefined ? { detail: init.detail } : {}),
    };
  }

  /** 404 for the resource `what` (e.g. `Order 3f…`). */
  static notFound(what: string): ProblemException {
    return new ProblemException({ type: ProblemType.NotFound, detail: `${what} does not exist` });
  }

  /** 400 validation problem with the given failures. */
  static validation(errors: ValidationErrorItem[], detail?: string, type: string = ProblemType.ValidationError) {
    return new ProblemException({
      type,
      detail: detail ?? describeErrors(errors),
      extensions: { errors },
    });
  }
}

/**
 * 503 `service-unavailable` for a dependency that should come back (Temporal, a worker), with the seconds a client
 * should wait before repeating the request; the controller sends them as `Retry-After` (RFC 9110 §10.2.3).
 */
export class ServiceUnavailableProblem extends ProblemException {
  constructor(
    detail: string,
    readonly retryAfterSeconds: number,
    options?: { cause?: unknown },
  ) {
    super({ type: ProblemType.ServiceUnavailable, detail }, options);
  }
}

/** `lines.0.quantity: Too small` style one-line summary of validation failures. */
export function describeErrors(errors: readonly ValidationErrorItem[]): string {
  const first = errors
    .slice(0, 3)
    .map((e) => (e.path ? `${e.path}: ${e.message}` : e.message))
    .join('; ');
  return errors.length > 3 ? `${first}; and ${errors.length - 3} more` : first;
}

/** Reason phrase of an HTTP status (RFC 9110 §15), e.g. 404 → `Not Found`. */
export function defaultTitle(status: number): string {
  return REASON_PHRASES[status] ?? (status >= 500 ? 'Internal Server Error' : 'Bad Request');
}

const REASON_PHRASES: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'Length Required',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  422: 'Unprocessable Content',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};
