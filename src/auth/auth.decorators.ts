/**
 * Route metadata of authentication and the request's caller:
 * - every route needs a valid API key unless marked {@link Public};
 * - {@link RequireScope} names the scope a route needs (without it, any valid key will do);
 * - {@link CurrentClient} injects the caller ({@link AuthenticatedClient}, also on `req.apiClient`).
 */
import { applyDecorators, createParamDecorator, type ExecutionContext, SetMetadata } from '@nestjs/common';
import { markOperations, OPERATION_MARKS } from '../common/api-problem-responses.decorator.js';
import type { IncomingMessage } from 'node:http';
import type { AuthenticatedClient } from './api-key.store.js';
import type { Scope } from './scopes.js';

declare module 'node:http' {
  interface IncomingMessage {
    /**
     * The caller, set by the authentication guard once the API key is verified; absent on public routes called
     * without a key. Logs and metrics read `req.apiClient?.id` as their `client` (`anonymous` when absent).
     * (Not `req.client`: Node already uses that name for the socket.)
     */
    apiClient?: AuthenticatedClient;
  }
}

/** Metadata key of {@link Public}. */
export const PUBLIC_ROUTE = 'auth:public';
/** Metadata key of {@link RequireScope}. */
export const REQUIRED_SCOPE = 'auth:scope';

/**
 * The route answers without an API key (e.g. `GET /health`). A key that is sent is still verified: an invalid one
 * gets 401, a valid one sets `req.apiClient`. The OpenAPI document says `security: []` for it.
 */
export const Public = (): MethodDecorator & ClassDecorator =>
  applyDecorators(
    SetMetadata(PUBLIC_ROUTE, true),
    markOperations((extensions) => ({ ...extensions, [OPERATION_MARKS.public]: true })),
  );

/**
 * The route needs a key with `scope` (or `operator`); otherwise 403. The OpenAPI document names the scope in the
 * operation's security requirement (and documents the 403).
 */
export const RequireScope = (scope: Scope): MethodDecorator & ClassDecorator =>
  applyDecorators(
    SetMetadata(REQUIRED_SCOPE, scope),
    markOperations((extensions) => ({ ...extensions, [OPERATION_MARKS.requiredScope]: scope })),
  );

/** The caller of a request, or undefined on a public route called without a key. */
export function requestApiClient(req: IncomingMessage): AuthenticatedClient | undefined {
  return req.apiClient;
}

/**
 * Parameter decorator: the authenticated caller.
 * @throws Error on a route that lets requests through without a key (a programming error: use requestApiClient).
 */
export const CurrentClient = createParamDecorator((_data: unknown, ctx: ExecutionContext): AuthenticatedClient => {
  const client = ctx.switchToHttp().getRequest<IncomingMessage>().apiClient;
  if (!client) throw new Error('CurrentClient used on a route without an authenticated client');
  return client;
});
