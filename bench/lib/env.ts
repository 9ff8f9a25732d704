/**
 * The benchmark's environments, one per arm and each from nothing: a fresh Temporal dev server (its own SQLite
 * file, free ports), a fresh PostgreSQL (embedded, the way `npm start` runs it, in its own data folder; or a fresh
 * database on an external server with --pg-url), and then either
 * - the floor: one bare worker process (bench/floor/worker.ts) with default options, or
 * - the service: the processes `npm start` runs, from the same stack definition (scripts/lib/stack-definition.ts:
 *   STACK_PROCESSES from `dist/`, their environment from serviceEnvironment / simulatorEnvironment and the providers'
 *   development keys): migrations and seed, the simulator process (every provider under `/<name>`), the worker and
 *   the API, each on a free port with its output in a log file, started and waited for through
 *   scripts/lib/stack-processes.ts and stopped in reverse order by scripts/lib/supervisor.ts.
 * Every process is a child of the bench, so its CPU time can be read from /proc.
 */
import { appendFileSync, chmodSync, existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { execa } from 'execa';
import getPort from 'get-port';
import pg from 'pg';
import { PreconditionError, startEmbeddedPostgres as startPostgresServer } from '../../scripts/lib/embedded-pg.js';
import { repoRoot } from '../../scripts/lib/env.js';
import { Child, type ExitInfo } from '../../scripts/lib/processes.js';
import {
  devProviderApiKeys,
  localUrl,
  serviceEnvironment,
  simulatorEnvironment,
  STACK_PROCESSES,
  withoutProviderVariables,
} from '../../scripts/lib/stack-definition.js';
import {
  assertBuilt,
  spawnStackProcess,
  waitForWorkerPollers,
  waitUntilReady,
} from '../../scripts/lib/stack-processes.js';
import { Supervisor } from '../../scripts/lib/supervisor.js';
import { ensureTemporalCli, startDevServer, type DevServer } from '../../scripts/lib/temporal-cli.js';
import { PROVIDER_LIST } from '../../providers/index.js';
import { ORDER_TASK_QUEUE } from '../../workflows/order-fulfilment.contract.js';
import { pidsCpuMs, selfMeter, treeMeter, type CpuMeter } from './proc.js';

export const ROOT = repoRoot();
export const FLOOR_TASK_QUEUE = 'bench-floor';
const NAMESPACE = 'default';

export type Log = (line: string) => void;

/** How long a process of an arm may take to stop before SIGKILL, ms (a draining worker takes up to 20 s). */
const STOP_TIMEOUT_MS = 25_000;

/** A child process of an arm, its stdout and stderr straight in a log file (the bench never reads them). */
export class Proc {
  readonly spawnedAt = Date.now();
  readonly exited: Promise<ExitInfo>;

  constructor(private readonly process: Child) {
    this.exited = process.exited;
  }

  get name(): string {
    return this.process.name;
  }

  /** The subprocess (a ChildProcess: IPC `send` and `on('message')`). */
  get child(): Child['subprocess'] {
    return this.process.subprocess;
  }

  get pid(): number | undefined {
    return this.process.pid;
  }

  /** What readiness waits watch (they fail as soon as it exits). */
  get watched(): Child {
    return this.process;
  }

  async stop(): Promise<void> {
    const exit = await this.process.stop();
    if (exit.forced) throw new Error(`${this.name} did not stop within ${STOP_TIMEOUT_MS / 1000} s and was killed`);
  }
}

/** Runs a one-shot command with its output in `logFile`. */
async function run(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  logFile: string,
  cwd = ROOT,
): Promise<void> {
  await execa(command, args, {
    env,
    cwd,
    stdin: 'ignore',
    stdout: { file: logFile, append: true },
    stderr: { file: logFile, append: true },
  }).catch((error: { shortMessage?: string }) => {
    throw new Error(`${error.shortMessage ?? String(error)}; see ${logFile}`);
  });
}

// ---------------------------------------------------------------------------------------------------------
// PostgreSQL

export interface Postgres {
  url: string;
  meter: CpuMeter;
  stop(): Promise<void>;
}

/**
 * An embedded PostgreSQL in `dir` (initialised there), started exactly as `npm start` starts it
 * (scripts/lib/embedded-pg.ts); database `order_fulfilment` created. CPU: the postmaster's whole tree.
 */
async function startEmbeddedPostgres(dir: string, logDir: string): Promise<Postgres> {
  const logFile = path.join(logDir, 'postgres.log');
  // A free port can be taken between get-port's check and the server's bind (another stack on the machine): the
  // start then finds another PostgreSQL on it (PreconditionError), and we try another port.
  let port = 0;
  let server: Awaited<ReturnType<typeof startPostgresServer>> | undefined;
  for (let attempt = 1; !server; attempt++) {
    port = await getPort();
    try {
      server = await startPostgresServer({
        dataDir: dir,
        checkout: dir,
        port,
        user: 'postgres',
        password: 'postgres',
        log: (line) => appendFileSync(logFile, `${line}\n`),
        output: { logFile },
        readyTimeoutMs: 60_000,
        // Every arm gets an empty cluster, also when an earlier run at the same path left one under /var/tmp.
        fresh: true,
      });
    } catch (error) {
      if (!(error instanceof PreconditionError) || attempt >= 3) throw error;
    }
  }
  const base = `postgresql://postgres:postgres@127.0.0.1:${port}`;
  const admin = new pg.Client({ connectionString: `${base}/postgres` });
  await admin.connect();
  await admin.query('CREATE DATABASE order_fulfilment');
  await admin.end();
  // postgres and its backends are the postmaster's children.
  return {
    url: `${base}/order_fulfilment`,
    meter: treeMeter('postgres', () => server.pid),
    stop: async () => void (await server.stop()),
  };
}

/**
 * A fresh database on an external server (`adminUrl` names a maintenance database there). CPU: the backends
 * connected to that database (pg_stat_activity), read at each sample; pooled connections live across a phase.
 */
async function startExternalDatabase(adminUrl: string, name: string): Promise<Postgres> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(name)} WITH (FORCE)`);
  await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(name)}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  // Backends that have exited take their CPU with them: keep a running total per pid.
  const seen = new Map<number, number>();
  const meter: CpuMeter = {
    name: 'postgres',
    read: async () => {
      const res = await admin.query<{ pid: number }>(
        'SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [name],
      );
      for (const { pid } of res.rows) seen.set(pid, pidsCpuMs([pid]) || (seen.get(pid) ?? 0));
      return [...seen.values()].reduce((a, b) => a + b, 0);
    },
  };
  return {
    url: url.toString(),
    meter,
    stop: async () => {
      await admin.query(`DROP DATABASE IF EXISTS ${admin.escapeIdentifier(name)} WITH (FORCE)`).catch(() => undefined);
      await admin.end();
    },
  };
}

// ---------------------------------------------------------------------------------------------------------
// Arms

export type ArmKind = 'floor' | 'service';

export interface EnvOptions {
  kind: ArmKind;
  /** Folder of this arm: dev-server database, PostgreSQL data, logs. */
  dir: string;
  /** External PostgreSQL maintenance URL; else embedded. */
  pgUrl?: string;
  /** Extra WorkerOptions (JSON) for this arm's worker, through bench/variants/worker-options.mjs. */
  workerOptions?: string;
  /**
   * The checkout whose build (`dist/`), migrations and seed the service runs from (default: this one). A lever
   * experiment points it at a worktree of a throwaway branch (with `node_modules` linked to this one's).
   */
  serviceRoot?: string;
  /** The service worker's entry (default dist/src/worker.js). */
  serviceWorkerEntry?: string;
  /** Folder for CPU profiles of the worker and the API (bench/variants/profile-on-signal.mjs); none without. */
  profileDir?: string;
  log: Log;
}

export interface ArmEnv {
  kind: ArmKind;
  dir: string;
  address: string;
  connection: Connection;
  client: Client;
  taskQueue: string;
  postgres: Postgres;
  apiUrl?: string;
  apiKey?: string;
  /** The simulator process's base URL (service arms): each provider's ledger at `<simulatorUrl>/<name>/_sim/ledger`. */
  simulatorUrl?: string;
  /** CPU meters: server, worker, api, postgres, client (the bench process), sims. */
  meters: CpuMeter[];
  worker(): Proc | undefined;
  /** Starts the worker; resolves once it is spawned (not yet polling) with its Proc. */
  startWorker(): Proc;
  /** Starts or stops (and writes) the CPU profiles of the worker and the API (SIGWINCH), when profiling. */
  toggleProfiles(): void;
  /** Resolves when the worker polls both its workflow and activity task queue. */
  waitForWorkerPolling(proc: Proc): Promise<void>;
  stopWorker(): Promise<void>;
  stop(): Promise<void>;
}

/** Raises every product's stock by `units` (with an adjustment movement, as the ledger requires). */
export async function raiseStock(databaseUrl: string, units: number): Promise<string[]> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    await db.query('BEGIN');
    const { rows } = await db.query<{ sku: string; on_hand: number }>(
      'UPDATE products SET on_hand = on_hand + $1, updated_at = now() RETURNING sku, on_hand',
      [units],
    );
    for (const r of rows) {
      await db.query(
        `INSERT INTO inventory_movements (id, sku, reason, on_hand_delta, reserved_delta, on_hand_after)
         VALUES ($1, $2, 'adjust', $3, 0, $4)`,
        [`adjust:${r.sku}:bench-${Date.now()}`, r.sku, units, r.on_hand],
      );
    }
    await db.query('COMMIT');
    return rows.map((r) => r.sku).sort();
  } finally {
    await db.end();
  }
}

/**
 * The API key the bench sends, if any: BENCH_API_KEY; else, where the project has development keys
 * (scripts/lib/dev-api-keys.ts, the `auth` work), keys registered in this arm's fresh database and written to
 * the arm's own keys file (the `.data/api-keys.json` format); else `.data/api-keys.json` if it exists; else none.
 */
async function apiKeyFor(databaseUrl: string, dir: string, log: Log, root: string): Promise<string | undefined> {
  const fromEnv = process.env.BENCH_API_KEY?.trim();
  if (fromEnv) return fromEnv;
  type Key = { client: string; key: string; scopes: string[] };
  const pick = (keys: Key[]): string | undefined =>
    keys.find((k) => k.scopes.includes('orders:write'))?.key ?? keys.find((k) => k.scopes.includes('operator'))?.key;
  const module = path.join(root, 'scripts', 'lib', 'dev-api-keys.ts');
  if (existsSync(module)) {
    const { ensureDevApiKeys } = (await import(module)) as {
      ensureDevApiKeys(o: { databaseUrl: string; file?: string }): Promise<Key[]>;
    };
    const key = pick(await ensureDevApiKeys({ databaseUrl, file: path.join(dir, 'api-keys.json') }));
    log(`API key: a development key registered in the arm's database (${key ? 'found' : 'none with orders:write'})`);
    return key;
  }
  const file = path.join(ROOT, '.data', 'api-keys.json');
  if (existsSync(file)) {
    const { readFile } = await import('node:fs/promises');
    try {
      return pick(JSON.parse(await readFile(file, 'utf8')) as Key[]);
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/** Starts one arm's environment. Everything started is stopped again by `stop()` (also when starting fails). */
export async function startEnv(opts: EnvOptions): Promise<ArmEnv> {
  const { dir, log } = opts;
  const root = opts.serviceRoot ?? ROOT;
  const profiler = path.join(ROOT, 'bench', 'variants', 'profile-on-signal.mjs');
  const nodeArgs = (): string[] => (opts.profileDir ? ['--import', profiler] : []);
  const profileEnv = (role: string): NodeJS.ProcessEnv =>
    opts.profileDir ? { BENCH_PROFILE_DIR: opts.profileDir, BENCH_PROFILE_ROLE: role } : {};
  const logDir = path.join(dir, 'logs');
  await mkdir(logDir, { recursive: true });
  // Run as root, the embedded PostgreSQL runs as user `postgres`, which must reach its data folder.
  for (let d = dir; d.startsWith(ROOT) && d !== ROOT; d = path.dirname(d)) chmodSync(d, 0o755);
  // Everything started is stopped again in reverse order, also when starting fails.
  const supervisor = new Supervisor({ onStopError: (name, e) => log(`stop ${name}: ${String(e)}`) });
  const stopAll = (): Promise<void> => supervisor.stopAll();
  try {
    // Temporal dev server and PostgreSQL, in parallel.
    const cliPath = await ensureTemporalCli({ log });
    const temporalStarting = (async (): Promise<DevServer> =>
      startDevServer({
        cliPath,
        dbFilename: path.join(dir, 'temporal', 'dev.db'),
        port: await getPort(),
        uiPort: await getPort(),
        namespace: NAMESPACE,
        log: (line) => appendFileSync(path.join(logDir, 'temporal.log'), `${line}\n`),
      }))();
    const pgStarting = opts.pgUrl
      ? startExternalDatabase(opts.pgUrl, `bench_${path.basename(dir).replace(/\W/g, '_')}_${process.pid}`)
      : startEmbeddedPostgres(path.join(dir, 'postgres'), logDir);
    const [temporal, postgres] = await Promise.allSettled([temporalStarting, pgStarting]);
    if (temporal.status === 'fulfilled') supervisor.add({ name: 'temporal', stop: () => temporal.value.stop() });
    if (postgres.status === 'fulfilled') supervisor.add({ name: 'postgres', stop: () => postgres.value.stop() });
    if (temporal.status === 'rejected') throw temporal.reason;
    if (postgres.status === 'rejected') throw postgres.reason;
    const server = temporal.value;
    const database = postgres.value;
    const connection = await Connection.connect({ address: server.address });
    supervisor.add({ name: 'connection', stop: () => connection.close() });
    const client = new Client({ connection, namespace: NAMESPACE });

    const meters: CpuMeter[] = [
      treeMeter('server', () => server.child?.pid),
      treeMeter('worker', () => currentWorker?.pid),
    ];
    let currentWorker: Proc | undefined;
    const preload = path.join(ROOT, 'bench', 'variants', 'worker-options.mjs');
    let simulatorUrl: string | undefined;
    let simulatorProc: Proc | undefined;
    let apiUrl: string | undefined;
    let apiKey: string | undefined;
    let startWorker: () => Proc;
    let apiReady: Promise<void> | undefined;
    let apiProc: Proc | undefined;
    const taskQueue = opts.kind === 'floor' ? FLOOR_TASK_QUEUE : ORDER_TASK_QUEUE;

    if (opts.kind === 'floor') {
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_NAMESPACE: NAMESPACE,
        BENCH_TASK_QUEUE: taskQueue,
        ...(opts.workerOptions ? { BENCH_WORKER_OPTIONS: opts.workerOptions } : {}),
        ...profileEnv('worker'),
      };
      startWorker = () =>
        new Proc(
          new Child(
            'floor-worker',
            process.execPath,
            [...nodeArgs(), '--import', 'tsx', path.join(ROOT, 'bench', 'floor', 'worker.ts')],
            { env, cwd: ROOT, logFile: path.join(logDir, 'worker.log'), ipc: true, stopTimeoutMs: STOP_TIMEOUT_MS },
          ),
        );
      // PostgreSQL for the raw probe (one INSERT + one start): one table.
      const db = new pg.Client({ connectionString: database.url });
      await db.connect();
      await db.query('CREATE TABLE bench_probe (id uuid PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now())');
      await db.end();
    } else {
      assertBuilt(Object.values(STACK_PROCESSES), root);
      const dbEnv = { ...process.env, DATABASE_URL: database.url };
      await run(
        path.join(root, 'node_modules', '.bin', 'prisma'),
        ['migrate', 'deploy'],
        dbEnv,
        `${logDir}/migrate.log`,
        root,
      );
      if (existsSync(path.join(root, 'prisma', 'seed.ts'))) {
        await run(
          path.join(root, 'node_modules', '.bin', 'tsx'),
          ['prisma/seed.ts'],
          dbEnv,
          `${logDir}/seed.log`,
          root,
        );
      }
      apiKey = await apiKeyFor(database.url, dir, log, root);

      // The processes of the stack definition, as `npm start` runs them, on free ports. The caller's own provider
      // variables are dropped: the services reach this arm's simulators.
      const inherited = withoutProviderVariables(process.env);
      const providerApiKeys = devProviderApiKeys(PROVIDER_LIST);
      const spawn = (
        proc: (typeof STACK_PROCESSES)[keyof typeof STACK_PROCESSES],
        env: NodeJS.ProcessEnv,
        extra: { entry?: string; nodeArgs?: string[] } = {},
      ): Proc =>
        new Proc(
          spawnStackProcess(proc, {
            ...extra,
            root,
            env,
            logFile: path.join(logDir, `${proc.name}.log`),
            stopTimeoutMs: STOP_TIMEOUT_MS,
          }),
        );

      const simulatorPort = await getPort();
      simulatorUrl = localUrl(simulatorPort);
      const sims = spawn(STACK_PROCESSES.simulators, {
        ...inherited,
        ...simulatorEnvironment({ port: simulatorPort, providerApiKeys }),
      });
      supervisor.add({ name: sims.name, stop: () => sims.stop() });
      simulatorProc = sims;
      await waitUntilReady(STACK_PROCESSES.simulators, sims.watched, { baseUrl: simulatorUrl });

      const serviceEnv: NodeJS.ProcessEnv = {
        ...inherited,
        ...serviceEnvironment({
          databaseUrl: database.url,
          temporalAddress: server.address,
          taskQueue,
          simulatorUrl,
          providerApiKeys,
        }),
        TEMPORAL_NAMESPACE: NAMESPACE,
        NO_COLOR: '1',
        // The bench is one client sending thousands of orders: no per-client rate limit (the `auth` work's).
        RATE_LIMIT_MAX: '0',
      };
      // The worker's Prometheus endpoint stays on (as in `npm start`), on a port of its own.
      const workerMetricsPort = await getPort();
      startWorker = () =>
        spawn(
          STACK_PROCESSES.worker,
          {
            ...serviceEnv,
            WORKER_METRICS_PORT: String(workerMetricsPort),
            ...(opts.workerOptions ? { BENCH_WORKER_OPTIONS: opts.workerOptions } : {}),
            ...profileEnv('worker'),
          },
          {
            entry: opts.serviceWorkerEntry,
            nodeArgs: [...nodeArgs(), ...(opts.workerOptions ? ['--import', preload] : [])],
          },
        );

      const apiPort = await getPort();
      apiUrl = localUrl(apiPort);
      const api = spawn(
        STACK_PROCESSES.api,
        { ...serviceEnv, PORT: String(apiPort), ...profileEnv('api') },
        { nodeArgs: nodeArgs() },
      );
      supervisor.add({ name: api.name, stop: () => api.stop() });
      meters.push(treeMeter('api', () => api.pid));
      apiProc = api;
      // The API waits for nothing from the worker; start it now, wait for it after the worker.
      apiReady = waitUntilReady(STACK_PROCESSES.api, api.watched, { baseUrl: apiUrl });
      apiReady.catch(() => undefined);
    }
    meters.push(database.meter, selfMeter('client'));
    if (simulatorProc) meters.push(treeMeter('sims', () => simulatorProc.pid));

    // The service's worker polls the order task queue and each provider's; the floor's only its own.
    const waitForWorkerPolling = (proc: Proc): Promise<void> =>
      waitForWorkerPollers({
        connection,
        namespace: NAMESPACE,
        taskQueue,
        worker: proc.watched,
        queues: opts.kind === 'floor' ? [{ name: taskQueue, workflows: true }] : undefined,
      });
    const stopWorker = async (): Promise<void> => {
      const w = currentWorker;
      currentWorker = undefined;
      if (w) await w.stop();
    };
    supervisor.add({ name: 'worker', stop: stopWorker }); // stopped first
    const start = (): Proc => {
      if (currentWorker?.pid !== undefined) throw new Error('the worker is already running');
      currentWorker = startWorker();
      return currentWorker;
    };
    await waitForWorkerPolling(start());
    if (apiReady !== undefined) await apiReady;

    return {
      kind: opts.kind,
      dir,
      address: server.address,
      connection,
      client,
      taskQueue,
      postgres: database,
      apiUrl,
      apiKey,
      simulatorUrl,
      meters,
      worker: () => currentWorker,
      toggleProfiles: () => {
        if (!opts.profileDir) return;
        for (const p of [currentWorker, apiProc]) if (p?.pid !== undefined) process.kill(p.pid, 'SIGWINCH');
      },
      startWorker: start,
      waitForWorkerPolling,
      stopWorker,
      stop: stopAll,
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
