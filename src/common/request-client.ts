/**
 * Who sent a request, for logs and metrics (`client` field and label): the authenticated API client's id
 * (`req.apiClient`, set by the authentication guard, src/auth/auth.guard.ts), or {@link ANONYMOUS_CLIENT}
 * (`anonymous`) for requests without a valid key (public routes, 401s). This is the one place that maps a request
 * to its client: logs (src/logging, app.module.ts) and metrics (src/metrics) pick it up from here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ANONYMOUS_CLIENT } from '../metrics/metric-definitions.js';

export { ANONYMOUS_CLIENT };

/**
 * The client a request belongs to: a short, bounded identifier safe for a log field and a metric label (the
 * client id matches `^[a-z0-9][a-z0-9._-]{0,62}$`; never a credential or personal data).
 * @returns the authenticated client's id, or `anonymous`.
 */
export function requestClient(req: IncomingMessage): string {
  return req.apiClient?.id ?? ANONYMOUS_CLIENT;
}

/**
 * pino-http `customProps`: `{ client }` once it is known. pino-http calls it when the request arrives (before
 * authentication: nothing, the guard adds `client` to the lines logged while handling the request) and again for
 * the closing line (the client, or `anonymous`). So every line carries `client` exactly once.
 */
export function requestClientLogProps(req: IncomingMessage, res: ServerResponse): { client?: string } {
  return req.apiClient !== undefined || res.headersSent ? { client: requestClient(req) } : {};
}
