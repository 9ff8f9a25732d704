/**
 * `npm run temporal:cluster`: a real Temporal cluster (Temporal Server 1.29.1 on PostgreSQL, SQL visibility, the
 * Web UI) in the foreground, without the rest of the stack; see scripts/lib/temporal-cluster.ts. For the whole
 * stack on it, use `npm run start:cluster`.
 *
 *   npm run temporal:cluster                  # gRPC 127.0.0.1:7233, UI http://127.0.0.1:8233
 *   npm run temporal:cluster -- --ensure      # only find or build the binaries; prints their paths (CI)
 *   npm run temporal:cluster -- --fresh       # drop the cluster's databases first (start from empty)
 *
 * Environment: TEMPORAL_PERSISTENCE_URL (default postgresql://postgres@127.0.0.1:5432/temporal),
 * TEMPORAL_VISIBILITY_URL (default: `<persistence database>_visibility` on the same server), TEMPORAL_PORT,
 * TEMPORAL_UI_PORT, TEMPORAL_NAMESPACE, and the binary paths TEMPORAL_SERVER_PATH, TEMPORAL_SQL_TOOL_PATH,
 * TEMPORAL_UI_SERVER_PATH. Exit codes: 0 after Ctrl-C/SIGTERM or a successful --ensure; 1 on errors or when
 * the server dies.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { portFromEnv, repoRoot } from './lib/env.js';
import { describeExit } from './lib/processes.js';
import {
  clusterDatabasesFromEnv,
  describeDatabase,
  dropDatabases,
  ensureClusterBinaries,
  startTemporalCluster,
} from './lib/temporal-cluster.js';

const USAGE = `Usage: tsx scripts/temporal-cluster.ts [--ensure] [--fresh]

Runs Temporal Server 1.29.1 on PostgreSQL with its Web UI until Ctrl-C.
  --ensure    find or build the server, its sql tool and the UI server; print their paths on stdout; exit
  --fresh     drop the persistence and visibility databases first
  -h, --help  this text`;

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      ensure: { type: 'boolean', default: false },
      fresh: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const log = (line: string): void => {
    process.stderr.write(`${line}\n`);
  };
  const started = Date.now();
  const binaries = await ensureClusterBinaries(log);
  if (values.ensure) {
    process.stdout.write(`${binaries.server}\n${binaries.sqlTool}\n${binaries.uiServer}\n`);
    return 0;
  }

  const { persistence, visibility } = clusterDatabasesFromEnv('postgresql://postgres@127.0.0.1:5432/temporal');
  if (values.fresh) {
    log(`dropping ${describeDatabase(persistence)} and ${describeDatabase(visibility)}`);
    await dropDatabases([persistence, visibility]);
  }
  const cluster = await startTemporalCluster({
    binaries,
    persistence,
    visibility,
    dataDir: path.join(repoRoot(), '.data', 'temporal-cluster'),
    port: portFromEnv('TEMPORAL_PORT', 7233),
    uiPort: portFromEnv('TEMPORAL_UI_PORT', 8233),
    namespace: process.env.TEMPORAL_NAMESPACE?.trim() || 'default',
    log: (line) => log(`[temporal] ${line}`),
  });
  console.log(
    [
      '',
      `Temporal cluster ready in ${((Date.now() - started) / 1000).toFixed(1)} s: Temporal Server ${cluster.serverVersion}, ` +
        `${cluster.persistenceStore} persistence, ${cluster.visibilityStore} visibility`,
      `  gRPC frontend: ${cluster.address}    (TEMPORAL_ADDRESS)`,
      `  Web UI:        ${cluster.uiUrl}    (TEMPORAL_UI_URL)`,
      `  Databases:     ${describeDatabase(persistence)}, ${describeDatabase(visibility)}`,
      'Press Ctrl-C to stop.',
      '',
    ].join('\n'),
  );

  return new Promise<number>((resolve) => {
    let stopping = false;
    const shutdown = (signal: NodeJS.Signals): void => {
      if (stopping) return;
      stopping = true;
      log(`${signal}: stopping the Temporal cluster…`);
      void cluster.stop().then(() => resolve(0));
    };
    process.on('SIGINT', shutdown);
    process.on('SIGTERM', shutdown);
    process.on('SIGHUP', shutdown);
    void cluster.exited.then(({ which, exit }) => {
      if (stopping) return;
      stopping = true;
      log(`The Temporal ${which} exited unexpectedly (${describeExit(exit)}); stopping.`);
      void cluster.stop().then(() => resolve(1));
    });
  });
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
