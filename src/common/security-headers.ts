/**
 * Security headers of every response (helmet, https://helmetjs.github.io/), including error responses and the raw
 * answers to requests Node's parser refuses:
 * - `Content-Security-Policy`: only the origin's own scripts, styles, images and fetches; no plugins, no `<base>`,
 *   forms only to the origin; `frame-ancestors 'none'` (no site may frame the page: it holds an operator key and
 *   shows Retry and Cancel buttons, so framing would allow clickjacking). The OpenAPI UI at `/docs` (Swagger UI) also
 *   needs its inline `<style>` blocks and `data:` images: it gets `style-src 'self' 'unsafe-inline'`; its scripts are
 *   files of the origin like the page's. See https://www.w3.org/TR/CSP3/
 * - `X-Frame-Options: DENY` for browsers without `frame-ancestors` (RFC 7034);
 * - `X-Content-Type-Options: nosniff`; `Referrer-Policy: no-referrer`;
 * - helmet's other defaults (HSTS, `Cross-Origin-Opener-Policy`, `Cross-Origin-Resource-Policy`, ...).
 */
import type { NextFunction, Request, Response } from 'express';
import helmet, { type HelmetOptions } from 'helmet';

/** The CSP directives of the page and the API. */
export const CONTENT_SECURITY_POLICY = {
  'default-src': ["'self'"],
  'script-src': ["'self'"],
  'style-src': ["'self'"],
  'img-src': ["'self'", 'data:'],
  'connect-src': ["'self'"],
  'font-src': ["'self'"],
  'object-src': ["'none'"],
  'base-uri': ["'none'"],
  'form-action': ["'self'"],
  'frame-ancestors': ["'none'"],
} as const;

/** The OpenAPI UI's CSP: the page's, with the inline styles Swagger UI's HTML carries. */
export const DOCS_CONTENT_SECURITY_POLICY = {
  ...CONTENT_SECURITY_POLICY,
  'style-src': ["'self'", "'unsafe-inline'"],
} as const;

function options(directives: Record<string, readonly string[]>): HelmetOptions {
  return {
    contentSecurityPolicy: { useDefaults: false, directives: directives as Record<string, string[]> },
    frameguard: { action: 'deny' },
    referrerPolicy: { policy: 'no-referrer' },
  };
}

/** The headers as one string each, for responses written below Express (src/common/client-error.ts). */
export const RAW_SECURITY_HEADERS: ReadonlyArray<[string, string]> = [
  [
    'Content-Security-Policy',
    Object.entries(CONTENT_SECURITY_POLICY)
      .map(([name, values]) => `${name} ${values.join(' ')}`)
      .join('; '),
  ],
  ['X-Frame-Options', 'DENY'],
  ['X-Content-Type-Options', 'nosniff'],
  ['Referrer-Policy', 'no-referrer'],
];

/**
 * The Express middleware: helmet with {@link CONTENT_SECURITY_POLICY}, or {@link DOCS_CONTENT_SECURITY_POLICY}
 * under `docsPath` (default `/docs`, the Swagger UI; its JSON at `/docs-json` gets the strict one).
 */
export function securityHeaders(docsPath = '/docs'): (req: Request, res: Response, next: NextFunction) => void {
  const strict = helmet(options(CONTENT_SECURITY_POLICY));
  const docs = helmet(options(DOCS_CONTENT_SECURITY_POLICY));
  return (req, res, next) => {
    const underDocs = req.path === docsPath || req.path.startsWith(`${docsPath}/`);
    (underDocs ? docs : strict)(req, res, next);
  };
}
