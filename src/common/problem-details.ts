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
 * The problem types this API emits. Each is a stable URI clients may switch on (RFC 9457 §3.1.1);
 * `about:blank` means "no more semantics than the HTTP status" (RFC 9457 §4.2.1).
 */
export const ProblemType = {
  AboutBlank: 'about:blank',
  /** The request body, query or path failed validation; see the `errors` extension. */
  ValidationError: `${PROBLEM_TYPE_BASE}validation-error`,
  /** The request has a body that is not JSON (wrong or missing Content-Type). */
  UnsupportedMediaType: `${PROBLEM_TYPE_BASE}unsupported-media-type`,
  /** The request body is not valid JSON. */
  MalformedJson: `${PROBLEM_TYPE_BASE}malformed-json`,
  /**
   * The request is not valid HTTP/1.1 (Node's parser refused it: a control character in a header, a bad request
   * line, headers too large); extension `parserError` (the parser's code, e.g. `HPE_INVALID_HEADER_TOKEN`). The
   * connection is closed.
   */
  MalformedRequest: `${PROBLEM_TYPE_BASE}malformed-request`,
  /** 405: the resource exists but not with this method; the `Allow` header lists the methods it supports. */
  MethodNotAllowed: `${PROBLEM_TYPE_BASE}method-not-allowed`,
  /** An order names SKUs that are not in the catalogue; see the `skus` extension. */
  UnknownSku: `${PROBLEM_TYPE_BASE}unknown-sku`,
  /** The products of one order are priced in different currencies. */
  CurrencyMismatch: `${PROBLEM_TYPE_BASE}currency-mismatch`,
  /** The order total does not fit the stored integer range. */
  TotalTooLarge: `${PROBLEM_TYPE_BASE}total-too-large`,
  /** The addressed resource does not exist. */
  NotFound: `${PROBLEM_TYPE_BASE}not-found`,
  /** A stock change would leave less on hand than is reserved for accepted orders. */
  StockBelowReserved: `${PROBLEM_TYPE_BASE}stock-below-reserved`,
  /**
   * 409: an operator retry was asked for an order whose workflow does not wait for one (or waits on another step
   * than the one named); extensions `orderStatus` and `waitingFor` (the step that waits, or null).
   */
  OrderNotAwaitingRetry: `${PROBLEM_TYPE_BASE}order-not-awaiting-retry`,
  /**
   * 409: an operator's resolve or close the order cannot take: it waits for no operator, waits on another step, or
   * its wait does not offer that resolution or a close; extensions `orderStatus`, `waitingFor` (the step or
   * compensation that waits, or null), `resolutions` (what a resolve may say there) and `closable`.
   */
  OrderNotAwaitingResolution: `${PROBLEM_TYPE_BASE}order-not-awaiting-resolution`,
  /**
   * 409: a cancel the order cannot honour: its confirmation already went out (the point of no return), it is
   * final (completed or failed), it waits for an operator, or its workflow has closed; extension `orderStatus`.
   */
  OrderNotCancellable: `${PROBLEM_TYPE_BASE}order-not-cancellable`,
  /**
   * 503: a dependency (database, Temporal, or a worker to run the workflow) is unavailable; `/health` adds the
   * `checks` extension, order actions a `Retry-After` header.
   */
  ServiceUnavailable: `${PROBLEM_TYPE_BASE}service-unavailable`,
  /** An unexpected server error; details are in the server log, never in the response. */
  InternalError: `${PROBLEM_TYPE_BASE}internal-error`,
} as const;
export type ProblemType = (typeof ProblemType)[keyof typeof ProblemType];

/** One failed constraint of a validation problem: `path` is dotted (`lines.0.quantity`, `''` for the root). */
export interface ValidationErrorItem {
  path: string;
  message: string;
}

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

/** Zod schema of a problem document, used to document error responses in OpenAPI. */
export const problemDetailsSchema = z
  .object({
    type: z.string().meta({ example: ProblemType.ValidationError }),
    title: z.string().meta({ example: 'Your request is not valid' }),
    status: z.int().meta({ example: 400 }),
    detail: z.string().optional(),
    instance: z.string().optional().meta({ example: '/orders' }),
    errors: z
      .array(z.object({ path: z.string(), message: z.string() }))
      .optional()
      .meta({ description: 'Validation failures, one per violated constraint' }),
  })
  .loose()
  .meta({ id: 'ProblemDetails', description: 'RFC 9457 problem details (application/problem+json)' });

/** What a {@link ProblemException} is built from; `status` is required, the rest has defaults. */
export interface ProblemInit {
  status: number;
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

  constructor(init: ProblemInit, options?: { cause?: unknown }) {
    const title = init.title ?? defaultTitle(init.status);
    super(init.detail ?? title, init.status, options);
    this.problem = {
      ...init.extensions,
      type: init.type ?? ProblemType.AboutBlank,
      title,
      status: init.status,
      ...(init.detail !== undefined ? { detail: init.detail } : {}),
    };
  }

  /** 404 for the resource `what` (e.g. `Order 3f…`). */
  static notFound(what: string): ProblemException {
    return new ProblemException({
      status: 404,
      type: ProblemType.NotFound,
      title: 'Resource not found',
      detail: `${what} does not exist`,
    });
  }

  /** 400 validation problem with the given failures. */
  static validation(errors: ValidationErrorItem[], detail?: string, type: string = ProblemType.ValidationError) {
    return new ProblemException({
      status: 400,
      type,
      title: 'Your request is not valid',
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
    super({ status: 503, type: ProblemType.ServiceUnavailable, title: 'Service unavailable', detail }, options);
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
