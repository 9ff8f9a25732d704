/**
 * The `Idempotency-Key` protocol of the API in one place (draft-ietf-httpapi-idempotency-key-header), so the
 * controllers stay thin. Put {@link Idempotent} on a route:
 * - the header is read with the shared parser (RFC 8941; exactly one line; 400 `validation-error` otherwise);
 * - the key is scoped to the authenticated client and exposed to the handler as {@link IdempotencyContext}
 *   (`req.idempotency`);
 * - with `records` (POST /orders, PUT /inventory/:sku): the request runs through {@link IdempotencyService}. Its
 *   fingerprint covers method, target and the RFC 8785 canonical JSON body as sent (before validation); the handler
 *   calls `req.idempotency.claim` inside its transaction; its status, `Location` and body are stored. A retry gets
 *   the stored response with `Idempotent-Replayed: true`, 409 (+ `Retry-After`) while the first is in flight, 422
 *   for another request under the same key. Without the header the handler runs unprotected.
 * - without `records` (the order actions): the handler names its effect by the key itself (the Temporal Update id
 *   `cancel:<client>:<key>`), which de-duplicates.
 */
import { ProblemException } from '../common/problem-details.js';
import {
  applyDecorators,
  type CallHandler,
  createParamDecorator,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
  SetMetadata,
  type Type,
  UseInterceptors,
} from '@nestjs/common';
import { ModuleRef, Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import type { IncomingMessage } from 'node:http';
import { lastValueFrom, type Observable, of } from 'rxjs';
import { IDEMPOTENT_REPLAYED_HEADER, idempotencyKeyOf } from './idempotency-key.js';
import { requestFingerprint } from './idempotency-protocol.js';
import {
  type IdempotencyClaim,
  IdempotencyKeyInUseException,
  IdempotencyService,
  type StoredResponse,
} from './idempotency.service.js';

/** What a handler learns about the request's `Idempotency-Key` (`req.idempotency`). */
export interface IdempotencyContext {
  /** The key as sent (unquoted). */
  key: string;
  /** The client the key belongs to. */
  clientId: string;
  /** `${clientId}:${key}`: a name for the request's effect that no other client can reach. */
  scopedKey: string;
  /**
   * On routes with `records`: insert the record inside the transaction that creates the resource, before its own
   * writes (see {@link IdempotencyClaim}). Undefined elsewhere.
   */
  claim?: IdempotencyClaim;
}

declare module 'node:http' {
  interface IncomingMessage {
    /** Set by {@link IdempotencyInterceptor} when the request has an `Idempotency-Key`. */
    idempotency?: IdempotencyContext;
  }
}

/** Rebuilds a route's response from the resource a stale `processing` record points at. */
export interface IdempotentResource {
  /**
   * @param resourceId the id the handler passed to its claim.
   * @returns the response the route would have answered, or null when the resource no longer exists.
   */
  recover(resourceId: string): Promise<StoredResponse | null>;
}

/** Options of {@link Idempotent}. */
export interface IdempotentOptions {
  /** Store and replay responses through {@link IdempotencyService}; the provider recovers stale records. */
  records?: Type<IdempotentResource>;
}

const IDEMPOTENT_ROUTE = 'idempotency:route';

/** Applies the `Idempotency-Key` protocol to a route (see the file comment). */
export const Idempotent = (options: IdempotentOptions = {}): MethodDecorator =>
  applyDecorators(SetMetadata(IDEMPOTENT_ROUTE, options), UseInterceptors(IdempotencyInterceptor));

/** Parameter decorator: the request's {@link IdempotencyContext}, or undefined without an `Idempotency-Key`. */
export const IdempotencyKey = createParamDecorator(
  (_data: unknown, ctx: ExecutionContext): IdempotencyContext | undefined =>
    ctx.switchToHttp().getRequest<IncomingMessage>().idempotency,
);

@Injectable()
export class IdempotencyInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly idempotency: IdempotencyService,
    private readonly moduleRef: ModuleRef,
  ) {}

  /**
   * @throws ProblemException 400 for a malformed header; IdempotencyKeyInUseException 409 (with `Retry-After`);
   *   IdempotencyKeyReusedException 422; whatever the handler throws.
   */
  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const options = this.reflector.get<IdempotentOptions | undefined>(IDEMPOTENT_ROUTE, context.getHandler()) ?? {};
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();

    const key = idempotencyKeyOf(req);
    const clientId = req.apiClient?.id;
    if (key === undefined || clientId === undefined) return next.handle();
    const base = { key, clientId, scopedKey: `${clientId}:${key}` };
    req.idempotency = base;
    if (!options.records) return next.handle();

    const resource = this.moduleRef.get(options.records, { strict: false });
    let fingerprint: string;
    try {
      fingerprint = requestFingerprint({ method: req.method, target: req.originalUrl, body: req.body });
    } catch (err) {
      // RFC 8785 has no canonical form for some values JSON.parse can produce: a string with a lone surrogate
      // (`"\ud800"`), a number beyond double range (`1e400` parses as Infinity). No order could carry either, so the
      // request is refused with the canonicaliser's own reason. (A body nested deeper than the canonicaliser's
      // recursion could go never gets here: src/common/json-body.ts refuses it before it is parsed.)
      const reason = err instanceof Error ? err.message : String(err);
      throw ProblemException.validation(
        [{ path: '', message: reason }],
        `The body has no canonical JSON form (RFC 8785) to compare under its Idempotency-Key: ${reason}`,
      );
    }
    try {
      const { response, replayed } = await this.idempotency.execute(
        { clientId, key, fingerprint },
        {
          perform: async (claim) => {
            req.idempotency = { ...base, claim };
            const body = await lastValueFrom(next.handle(), { defaultValue: undefined });
            const location = res.getHeader('Location');
            const headers: Record<string, string> = location === undefined ? {} : { Location: String(location) };
            return { status: res.statusCode, headers, body };
          },
          recover: (resourceId) => resource.recover(resourceId),
        },
      );
      if (replayed) {
        res.status(response.status);
        for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
        res.setHeader(IDEMPOTENT_REPLAYED_HEADER, 'true');
      }
      return of(response.body);
    } catch (err) {
      if (err instanceof IdempotencyKeyInUseException) res.setHeader('Retry-After', String(err.retryAfterSeconds));
      throw err;
    }
  }
}
