/**
 * `npm run temporal`: the Temporal dev server (frontend + Web UI) in the foreground, for running the API and
 * the worker by hand. Workflows persist in `.data/temporal/dev.db` across restarts; the search attributes
 * OrderId and OrderStatus are registered. Ctrl-C stops it cleanly.
 *
 *   npm run temporal                 # gRPC 127.0.0.1:7233, UI http://127.0.0.1:8233
 *   TEMPORAL_PORT=7300 TEMPORAL_UI_PORT=8300 npm run temporal
 *   npm run temporal -- --ensure     # only find or build the CLI; prints its path on stdout (CI)
 *
 * Exit codes: 0 after Ctrl-C/SIGTERM or a successful --ensure; 1 on errors, when the server dies, or when
 * --ensure finds no CLI and no Go toolchain to build one.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureTemporalCli, startDevServer } from './lib/temporal-cli.js';
import { portFromEnv, repoRoot } from './lib/env.js';
import { describeExit } from './lib/processes.js';

const USAGE = `Usage: tsx scripts/temporal.ts [--ensure]

Runs the Temporal dev server (persistent .data/temporal/dev.db) until Ctrl-C.
  --ensure    find or build the Temporal CLI, print its path on stdout, exit
  -h, --help  this text
Environment: TEMPORAL_PORT (default 7233), TEMPORAL_UI_PORT (default 8233), TEMPORAL_CLI_PATH.`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { ensure: { type: 'boolean', default: false }, help: { type: 'boolean', short: 'h', default: false } },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const log = (line: string): void => {
    process.stderr.write(`${line}\n`);
  };

  if (values.ensure) {
    const cli = await ensureTemporalCli({ log });
    if (cli === undefined) {
      log('No Temporal CLI available: install one, set TEMPORAL_CLI_PATH, or install Go to build it.');
      return 1;
    }
    process.stdout.write(`${cli}\n`);
    return 0;
  }

  const port = portFromEnv('TEMPORAL_PORT', 7233);
  const uiPort = portFromEnv('TEMPORAL_UI_PORT', 8233);
  const dbFilename = path.join(repoRoot(), '.data', 'temporal', 'dev.db');
  const cliPath = await ensureTemporalCli({ log });

  const server = await startDevServer({
    cliPath,
    dbFilename,
    port,
    uiPort,
    log: (line) => log(`[temporal] ${line}`),
  });

  console.log(
    [
      '',
      `Temporal dev server ready${cliPath ? ` (${cliPath})` : ''}`,
      `  gRPC frontend: ${server.address}    (TEMPORAL_ADDRESS)`,
      `  Web UI:        ${server.uiUrl}    (TEMPORAL_UI_URL)`,
      `  Namespace:     default; search attributes OrderId, OrderStatus (Keyword)`,
      `  Database:      ${path.relative(process.cwd(), dbFilename)}`,
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );

  return new Promise<number>((resolve) => {
    let stopping = false;
    const shutdown = (signal: NodeJS.Signals): void => {
      if (stopping) return;
      stopping = true;
      log(`${signal}: stopping the Temporal dev server…`);
      void server.stop().then(() => resolve(0));
    };
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
    process.on('SIGHUP', shutdown);
    if (server.child !== undefined) {
      void server.child.exited.then((exit) => {
        if (stopping) return;
        stopping = true;
        log(`The Temporal dev server exited unexpectedly (${describeExit(exit)}).`);
        resolve(1);
      });
    }
  });
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
