/**
 * Which methods a path supports, read from the Express router the Nest app registered its routes on. Used to
 * answer a known path with an unsupported method 405 Method Not Allowed with an `Allow` header (RFC 9110
 * §15.5.6: "The origin server MUST generate an Allow header field in a 405 response containing a list of the
 * target resource's currently supported methods"), and `OPTIONS` with 204 and `Allow` (RFC 9110 §9.3.7), instead
 * of Express' 404 "Cannot DELETE /orders/…".
 */

import { METHODS } from 'node:http';

/** The parts of a router layer (router 2.x, Express 5) this module reads. */
interface RouteLayer {
  route?: { methods?: Record<string, boolean> };
  match?(path: string): unknown;
}

/**
 * True for a route registered with `all()` (every method: Nest binds middleware such as the request logger that
 * way on `{/*splat}`); it says nothing about what a resource supports.
 */
function isAllMethodsRoute(methods: Record<string, boolean>): boolean {
  return METHODS.every((m) => methods[m.toLowerCase()]);
}

/** The Express application's router stack, or an empty list when it has none yet. */
function routeLayers(expressApp: unknown): RouteLayer[] {
  const router = (expressApp as { router?: { stack?: RouteLayer[] } } | undefined)?.router;
  return router?.stack ?? [];
}

/**
 * The methods `path` (without its query string) supports: every method of every route whose pattern matches it,
 * plus `HEAD` where `GET` is supported (Express answers HEAD with the GET route) and `OPTIONS`; sorted, upper
 * case. Empty when no route matches (the path is unknown: 404).
 */
export function allowedMethods(expressApp: unknown, path: string): string[] {
  const methods = new Set<string>();
  for (const layer of routeLayers(expressApp)) {
    if (!layer.route?.methods || typeof layer.match !== 'function' || isAllMethodsRoute(layer.route.methods)) continue;
    let matched: unknown;
    try {
      matched = layer.match(path);
    } catch {
      continue; // a malformed %-escape in a parameter: not this route's business here
    }
    if (!matched) continue;
    for (const [method, on] of Object.entries(layer.route.methods)) {
      if (on && method !== '_all') methods.add(method.toUpperCase());
    }
  }
  if (methods.size === 0) return [];
  if (methods.has('GET')) methods.add('HEAD');
  methods.add('OPTIONS');
  return [...methods].sort();
}
