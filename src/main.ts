/**
 * Entry point of the HTTP API process: listens on `PORT` (host `HOST`, default 0.0.0.0) and logs its URL.
 * Exits with status 1 when the configuration is invalid (with NODE_ENV=production also when DATABASE_URL,
 * TEMPORAL_ADDRESS or TEMPORAL_UI_URL is missing; the message names each variable) or the app fails to start.
 */
import 'reflect-metadata';
import { Logger } from 'nestjs-pino';
import { createApiApp } from './bootstrap.js';
import { ConfigError, loadConfig } from './config/config.js';

async function main(): Promise<void> {
  const config = loadConfig(process.env, 'api');
  const app = await createApiApp({ config });
  const host = process.env.HOST || '0.0.0.0';
  await app.listen(config.PORT, host);
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${config.PORT}`;
  const docs = config.API_DOCS ? ` (OpenAPI docs at ${url}/docs)` : ' (OpenAPI docs off: API_DOCS=false)';
  app.get(Logger).log(`API listening on ${url}${docs}`, 'Main');
}

main().catch((err: unknown) => {
  // A configuration error is the operator's to fix: its message names every variable; no stack trace.
  if (err instanceof ConfigError) console.error(err.message);
  else console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
