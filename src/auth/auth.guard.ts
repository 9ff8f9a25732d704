/**
 * The global authentication guard (registered as APP_GUARD by AuthModule): every route needs
 * `Authorization: Bearer <API key>` (RFC 6750 §2.1) unless it is {@link Public}; a route's {@link RequireScope}
 * is checked against the key's scopes (`operator` has them all).
 *
 * - no key (or another scheme than Bearer) on a non-public route → 401 `unauthorized`,
 *   `WWW-Authenticate: Bearer realm="order-fulfilment"` (RFC 6750 §3.1: no error code);
 * - a malformed bearer header or several Authorization headers → 400 `invalid-authorization`, `error="invalid_request"`;
 * - an unknown, revoked or malformed key → 401 with `error="invalid_token"`, the same answer whatever the reason;
 * - a valid key without the scope → 403 `forbidden`, `error="insufficient_scope"`.
 * On success the caller is `req.apiClient` (see auth.decorators.ts). Either way the lines logged while handling the
 * request get `client` (the client id, or `anonymous`) through nestjs-pino's request-scoped logger.
 */
import { type CanActivate, type ExecutionContext, Inject, Injectable, Optional } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { PinoLogger } from 'nestjs-pino';
import { requestClient } from '../common/request-client.js';
import { parseAuthorization } from './api-key.js';
import { ApiKeyStore } from './api-key.store.js';
import { ForbiddenProblem, InvalidAuthorizationProblem, UnauthorizedProblem } from './auth-problems.js';
import { PUBLIC_ROUTE, REQUIRED_SCOPE } from './auth.decorators.js';
import { hasScope, type Scope } from './scopes.js';

@Injectable()
export class ApiKeyAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    @Inject(ApiKeyStore) private readonly keys: ApiKeyStore,
    @Optional() private readonly logger?: PinoLogger,
  ) {}

  /** @throws UnauthorizedProblem 401, ForbiddenProblem 403 (with `WWW-Authenticate` set on the response). */
  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    const isPublic = this.reflector.getAllAndOverride<boolean | undefined>(PUBLIC_ROUTE, targets) === true;
    const required = this.reflector.getAllAndOverride<Scope | undefined>(REQUIRED_SCOPE, targets);
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();

    try {
      const credentials = parseAuthorization(req.headersDistinct.authorization);
      if (credentials.kind === 'absent') {
        if (isPublic) return true;
        throw new UnauthorizedProblem('This operation needs an API key: send Authorization: Bearer <API key>');
      }
      // A public route (health probes, metrics scrapes, the page) answers as if no key was sent.
      if (credentials.kind === 'other-scheme') {
        if (isPublic) return true;
        throw new UnauthorizedProblem(credentials.reason);
      }
      if (credentials.kind === 'malformed') {
        if (isPublic) return true;
        throw new InvalidAuthorizationProblem(credentials.reason);
      }
      const client = await this.keys.authenticate(credentials.token);
      if (!client && isPublic) return true;
      if (!client)
        throw new UnauthorizedProblem('The API key is not valid (unknown, revoked or malformed)', 'invalid_token');
      req.apiClient = client;
      if (required !== undefined && !hasScope(client.scopes, required)) throw new ForbiddenProblem(required);
      return true;
    } catch (err) {
      if (
        err instanceof UnauthorizedProblem ||
        err instanceof InvalidAuthorizationProblem ||
        err instanceof ForbiddenProblem
      ) {
        res.setHeader('WWW-Authenticate', err.challenge);
      }
      throw err;
    } finally {
      this.tagLogLines(requestClient(req));
    }
  }

  /** Adds `client` to the request's log lines from here on (once per request; see request-client.ts). */
  private tagLogLines(client: string): void {
    try {
      this.logger?.assign({ client });
    } catch {
      // Outside nestjs-pino's request scope (no logging middleware on this route): nothing to tag.
    }
  }
}
