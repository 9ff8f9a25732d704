/**
 * Requests that carry a body must send it as JSON: `Content-Type: application/json` (a `charset` parameter may say
 * `utf-8`; src/common/json-body.ts refuses any other). Anything else is answered 415 Unsupported Media Type
 * (RFC 9110 §15.5.16) as problem+json, before validation could misreport a form or text body as a missing object.
 * That includes the JSON variants with their own semantics (`application/merge-patch+json`, RFC 7396;
 * `application/json-patch+json`, RFC 6902; any other `+json` type): the API does not apply patches, and reading one as
 * a plain body would misreport it (a merge patch that leaves members out is not an order with members missing).
 */
import { type CanActivate, type ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { ProblemException, ProblemType } from './problem-details.js';

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH']);

/** True when the request announces a body (RFC 9112 §6.3: Content-Length > 0 or Transfer-Encoding). */
function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return req.headers['transfer-encoding'] !== undefined || (length !== undefined && Number(length) > 0);
}

@Injectable()
export class JsonContentTypeGuard implements CanActivate {
  /** @throws ProblemException 415 `unsupported-media-type` for a non-JSON body. */
  canActivate(context: ExecutionContext): boolean {
    const req = context.switchToHttp().getRequest<Request>();
    if (!METHODS_WITH_BODY.has(req.method) || !hasBody(req)) return true;
    if (req.is('application/json')) return true;
    throw new ProblemException({
      status: 415,
      type: ProblemType.UnsupportedMediaType,
      title: 'Unsupported media type',
      detail: `Send the body as application/json (got ${req.headers['content-type'] ?? 'no Content-Type'})`,
    });
  }
}
