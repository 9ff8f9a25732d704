/**
 * Builds and configures the Nest HTTP application, shared by `main.ts` and the e2e tests:
 * - the nestjs-pino logger (level `LOG_LEVEL`),
 * - security headers on every response (src/common/security-headers.ts: CSP, frame-ancestors 'none',
 *   X-Frame-Options DENY, nosniff, Referrer-Policy no-referrer),
 * - the JSON body parser with its size limit ({@link JSON_BODY_LIMIT_BYTES}; 413 above it), in non-strict mode:
 *   any JSON value is parsed, and the schema says what is wrong with a body that is valid JSON but not an object
 *   (`null`, `42`), instead of the parser calling it invalid JSON,
 * - problem+json below the framework: Node's parser errors ({@link installClientErrorHandler}), 405 with `Allow`
 *   for a known path with another method (in the {@link ProblemDetailsFilter}),
 * - the global StandardSchemaValidationPipe (zod schemas on `@Body/@Query/@Param({ schema })`),
 * - the global {@link ProblemDetailsFilter} (every error as RFC 9457 `application/problem+json`),
 * - the OpenAPI document: Swagger UI at `/docs`, JSON at `/docs-json`, unless `API_DOCS` is false (the default
 *   with `NODE_ENV=production`),
 * - shutdown hooks (SIGTERM/SIGINT close the app: reconciler, Temporal connection, Prisma pool).
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { HttpAdapterHost, NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { SwaggerModule } from '@nestjs/swagger';
import { Logger } from 'nestjs-pino';
import { AppModule } from './app.module.js';
import { JSON_BODY_LIMIT_BYTES } from './common/api-limits.js';
import { installClientErrorHandler } from './common/client-error.js';
import { securityHeaders } from './common/security-headers.js';
import { JsonContentTypeGuard } from './common/json-content-type.guard.js';
import { createOpenApiDocument } from './common/openapi-document.js';
import { ProblemDetailsFilter } from './common/problem-details.filter.js';
import { createValidationPipe } from './common/validation.js';
import { type AppConfig, loadConfig } from './config/config.js';

/** Options of {@link createApiApp}. */
export interface CreateApiAppOptions {
  /** Configuration; default `loadConfig(process.env)`. */
  config?: AppConfig;
  /** Register SIGTERM/SIGINT handlers that close the app (default true; tests with several apps may turn it off). */
  shutdownHooks?: boolean;
}

/**
 * Creates the configured, not yet listening, API application. Call `app.listen(port)` (or `app.init()`
 * for supertest against `app.getHttpServer()`), and `app.close()` to stop it.
 * @throws Error when the configuration is invalid or a module fails to initialise.
 */
export async function createApiApp(options: CreateApiAppOptions = {}): Promise<NestExpressApplication> {
  const config = options.config ?? loadConfig();
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config), {
    bufferLogs: true,
    abortOnError: false,
    bodyParser: false,
  });
  app.useLogger(app.get(Logger));
  app.disable('x-powered-by');
  // First, so every response carries them: pages, API answers, errors, the OpenAPI UI.
  app.use(securityHeaders('/docs'));
  installClientErrorHandler(app.getHttpServer());
  // Non-strict: `null` or `42` is parsed (it is valid JSON) and refused by validation as "expected object".
  // No urlencoded parser: the JsonContentTypeGuard answers other media types 415 anyway.
  app.useBodyParser('json', { strict: false, limit: JSON_BODY_LIMIT_BYTES });
  app.useGlobalGuards(new JsonContentTypeGuard());
  app.useGlobalPipes(createValidationPipe());
  app.useGlobalFilters(new ProblemDetailsFilter(app.get(HttpAdapterHost)));
  if (options.shutdownHooks ?? true) app.enableShutdownHooks();

  if (!config.API_DOCS) return app;
  const pkg = servicePackage();
  SwaggerModule.setup('docs', app, () => createOpenApiDocument(app, config, pkg), { jsonDocumentUrl: 'docs-json' });
  return app;
}

/**
 * The service's version: `version` of the nearest package.json above this module (src/ when run from source,
 * dist/src/ when built; the image keeps package.json beside dist/).
 * @throws Error when no package.json with a version is found.
 */
export function serviceVersion(): string {
  return servicePackage().version;
}

/**
 * `version` and `license` (an SPDX id) of the nearest package.json above this module that has a version.
 * @throws Error when no package.json with a version is found.
 */
export function servicePackage(): { version: string; license: string } {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const file = path.join(dir, 'package.json');
    if (existsSync(file)) {
      const { version, license } = JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown; license?: unknown };
      if (typeof version === 'string')
        return { version, license: typeof license === 'string' ? license : 'UNLICENSED' };
    }
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error('no package.json with a version above src/bootstrap');
    dir = parent;
  }
}
