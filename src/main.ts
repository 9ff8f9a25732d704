/**
 * Entry point of the HTTP API process: listens on `PORT` (host `HOST`, default 0.0.0.0) and logs its URL.
 * Exits with status 1 when the configuration is invalid or the app fails to start.
 */
import 'reflect-metadata';
import { Logger } from 'nestjs-pino';
import { createApiApp } from './bootstrap.js';
import { loadConfig } from './config/config.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const app = await createApiApp({ config });
  const host = process.env.HOST || '0.0.0.0';
  await app.listen(config.PORT, host);
  const url = `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${config.PORT}`;
  app.get(Logger).log(`API listening on ${url} (OpenAPI docs at ${url}/docs)`, 'Main');
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : err);
  process.exit(1);
});
