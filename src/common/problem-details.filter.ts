/**
 * The global exception filter: renders EVERY error as `application/problem+json` (RFC 9457).
 *
 * - {@link ProblemException}: its problem document as is.
 * - A malformed JSON body (body-parser's SyntaxError, mapped by Nest to a 400), a body that is not UTF-8 or whose
 *   gzip, deflate or br data is corrupt: `malformed-json`.
 * - body-parser's other refusals, mapped by Nest to an `HttpException` whose cause is body-parser's error: a body over
 *   the size limit → 413 `body-too-large`; a charset or Content-Encoding it cannot decode → 415
 *   `unsupported-media-type`; a refusal of the body's own checks (src/common/json-body.ts: depth, duplicate members,
 *   charset) → that problem as it was thrown.
 * - The router's 404 for a path that exists with other methods: 405 `method-not-allowed` with an `Allow` header
 *   (RFC 9110 §15.5.6), or for `OPTIONS` 204 with `Allow` (RFC 9110 §9.3.7); see {@link allowedMethods}.
 * - Any other Nest `HttpException` (unknown route 404, ...): `about:blank` with the reason phrase
 *   as `title` and the exception message as `detail`.
 * - An error saying PostgreSQL cannot be reached now ({@link isDatabaseUnavailable}: down, restarting, refusing
 *   connections): 503 `service-unavailable` with `Retry-After` ({@link DATABASE_RETRY_AFTER_SECONDS} s), so clients
 *   repeat the request (with the same `Idempotency-Key`) instead of treating it as a bug.
 * - Anything else: 500 `internal-error` with a generic detail; the error itself goes to the log only.
 */
import {
  type ArgumentsHost,
  Catch,
  type ExceptionFilter,
  HttpException,
  Logger,
  NotFoundException,
} from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { allowedMethods } from './allowed-methods.js';
import { malformedJson } from './json-body.js';
import { DATABASE_RETRY_AFTER_SECONDS, isDatabaseUnavailable } from './database-errors.js';
import { defaultTitle, PROBLEM_JSON, type ProblemDetails, ProblemException, ProblemType } from './problem-details.js';

interface RequestLike {
  method?: string;
  originalUrl?: string;
  url?: string;
}

@Catch()
export class ProblemDetailsFilter implements ExceptionFilter {
  private readonly logger = new Logger('ProblemDetails');

  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(thrown: unknown, host: ArgumentsHost): void {
    let exception = thrown;
    const ctx = host.switchToHttp();
    const request = ctx.getRequest<RequestLike>();
    const response = ctx.getResponse<unknown>();
    const { httpAdapter } = this.adapterHost;

    const path = requestPath(request);
    if (isRouteNotFound(exception, request)) {
      const allow = allowedMethods(httpAdapter.getInstance(), path);
      if (allow.length > 0 && !httpAdapter.isHeadersSent(response)) {
        httpAdapter.setHeader(response, 'Allow', allow.join(', '));
        if (request.method === 'OPTIONS') {
          httpAdapter.reply(response, undefined, 204);
          return;
        }
        exception = new ProblemException({
          status: 405,
          type: ProblemType.MethodNotAllowed,
          title: 'Method not allowed',
          detail: `${request.method} is not supported on ${path}; supported: ${allow.join(', ')}`,
          extensions: { allow },
        });
      }
    }
    const problem: ProblemDetails = { ...toProblem(exception), instance: path };
    if (problem.status >= 500) {
      const message = `${request.method ?? ''} ${problem.instance} failed with ${problem.status}: ${
        exception instanceof Error ? exception.message : String(exception)
      }`;
      // A ProblemException is an expected, described failure (e.g. 503 from /health), and so is a database outage;
      // anything else is a bug.
      if (exception instanceof ProblemException) this.logger.warn({ instance: problem.instance }, message);
      else if (isDatabaseUnavailable(exception)) this.logger.warn({ instance: problem.instance }, message);
      else this.logger.error({ err: exception, instance: problem.instance }, message);
    }
    if (httpAdapter.isHeadersSent(response)) return;
    // Every 503 says when to come back (RFC 9110 §10.2.3); a controller may have set its own value already.
    const headerSet = (response as { getHeader?: (name: string) => unknown }).getHeader?.('Retry-After') !== undefined;
    if (problem.status === 503 && !headerSet) {
      httpAdapter.setHeader(response, 'Retry-After', String(DATABASE_RETRY_AFTER_SECONDS));
    }
    httpAdapter.setHeader(response, 'Content-Type', `${PROBLEM_JSON}; charset=utf-8`);
    httpAdapter.reply(response, problem, problem.status);
  }
}

/**
 * True for the router's own 404 (no route for this method and path: Nest's `NotFoundException` "Cannot GET /x"), as
 * opposed to a controller's 404 for a resource (a {@link ProblemException}).
 */
function isRouteNotFound(exception: unknown, request: RequestLike): boolean {
  return (
    exception instanceof NotFoundException &&
    !(exception instanceof ProblemException) &&
    exception.message.startsWith(`Cannot ${request.method ?? ''} `)
  );
}

/** Converts any thrown value into a problem document (without `instance`). Never exposes internals of 5xx. */
export function toProblem(exception: unknown): ProblemDetails {
  if (exception instanceof ProblemException) return { ...exception.problem };
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const fromBodyParser = bodyParserProblem(exception.cause);
    if (fromBodyParser) return fromBodyParser;
    if (status === 400 && exception.cause instanceof SyntaxError) {
      return {
        type: ProblemType.MalformedJson,
        title: 'Malformed JSON body',
        status,
        detail: `The request body is not valid JSON: ${exception.cause.message}`,
        errors: [{ path: '', message: exception.cause.message }],
      };
    }
    if (status >= 500) {
      return { type: ProblemType.AboutBlank, title: defaultTitle(status), status, detail: defaultTitle(status) };
    }
    return {
      type: ProblemType.AboutBlank,
      title: defaultTitle(status),
      status,
      detail: httpExceptionDetail(exception),
    };
  }
  if (isDatabaseUnavailable(exception)) {
    return {
      type: ProblemType.ServiceUnavailable,
      title: 'Service unavailable',
      status: 503,
      detail: `The database is unavailable or busy right now; nothing was changed by this request. Try again in ${DATABASE_RETRY_AFTER_SECONDS} s (with the same Idempotency-Key).`,
    };
  }
  return {
    type: ProblemType.InternalError,
    title: 'Internal Server Error',
    status: 500,
    detail: 'An unexpected error occurred. It has been logged.',
  };
}

/** An error of body-parser (http-errors): its `type` says which refusal it is. */
interface BodyParserError {
  type?: unknown;
  code?: unknown;
  message?: unknown;
  limit?: unknown;
  length?: unknown;
  charset?: unknown;
  encoding?: unknown;
}

/**
 * The problem for a body-parser refusal (the `cause` Nest keeps when it maps one to an HttpException), or undefined
 * when `cause` is not one of those below. Types from body-parser's README, "Errors".
 */
function bodyParserProblem(cause: unknown): ProblemDetails | undefined {
  // The body's own checks throw their problem from body-parser's verify hook (src/common/json-body.ts).
  if (cause instanceof ProblemException) return { ...cause.problem };
  if (typeof cause !== 'object' || cause === null) return undefined;
  const error = cause as BodyParserError;
  if (error.type === 'entity.too.large') {
    const limit = typeof error.limit === 'number' ? error.limit : undefined;
    const length = typeof error.length === 'number' ? `${error.length} bytes` : 'larger than that';
    return {
      type: ProblemType.BodyTooLarge,
      title: 'Request body too large',
      status: 413,
      detail:
        limit === undefined
          ? 'The request body is larger than the API accepts'
          : `The request body is ${length}; at most ${limit} bytes are accepted`,
      ...(limit === undefined ? {} : { limitBytes: limit }),
    };
  }
  if (error.type === 'charset.unsupported') {
    return {
      type: ProblemType.UnsupportedMediaType,
      title: 'Unsupported media type',
      status: 415,
      detail: `Send the body as UTF-8 JSON (RFC 8259 §8.1); got charset ${String(error.charset ?? '').toUpperCase()}`,
    };
  }
  if (typeof error.code === 'string' && /^(Z_|ERR_BROTLI|ERR_ZLIB)/.test(error.code)) {
    // A gzip, deflate or br body whose data is corrupt (zlib's error, which body-parser passes on as a 400).
    return malformedJson(`The request body could not be decompressed: ${String(error.message)}`).problem;
  }
  if (error.type === 'encoding.unsupported') {
    return {
      type: ProblemType.UnsupportedMediaType,
      title: 'Unsupported media type',
      status: 415,
      detail:
        `The body's Content-Encoding ${String(error.encoding ?? '')} is not supported: send it uncompressed, or ` +
        'with gzip, deflate or br',
    };
  }
  return undefined;
}

function httpExceptionDetail(exception: HttpException): string {
  const body = exception.getResponse();
  if (typeof body === 'string') return body;
  const message = (body as { message?: unknown }).message;
  if (Array.isArray(message)) return message.map(String).join('; ');
  if (typeof message === 'string') return message;
  return exception.message;
}

/** The request path without its query string (the `instance` member). */
function requestPath(request: RequestLike): string {
  const url = request.originalUrl ?? request.url ?? '/';
  const q = url.indexOf('?');
  return q === -1 ? url : url.slice(0, q);
}
