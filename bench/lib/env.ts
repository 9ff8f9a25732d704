/**
 * One arm's environment from nothing: a Temporal dev server and an embedded PostgreSQL on free ports, then the floor's
 * worker or the stack definition's processes from `dist/`, all children of the bench (pidusage reads their CPU).
 */
import { chmod, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { execa } from 'execa';
import getPort from 'get-port';
import pg from 'pg';
import pidusage from 'pidusage';
import { ensureDevApiKeys } from '../../scripts/lib/dev-api-keys.js';
import { ensureDatabase, startEmbeddedPostgres } from '../../scripts/lib/embedded-pg.js';
import { repoRoot } from '../../scripts/lib/env.js';
import { spawnStackProcess, stop, waitForHttp, waitForWorkerPollers, type Proc } from '../../scripts/lib/processes.js';
import * as def from '../../scripts/lib/stack-definition.js';
import { ensureTemporalCli, startDevServer } from '../../scripts/lib/temporal-cli.js';
import { PROVIDER_LIST } from '../../providers/index.js';
import { Scope } from '../../src/auth/scopes.js';
import { ORDER_TASK_QUEUE } from '../../workflows/order-fulfilment.contract.js';

export const ROOT = repoRoot();
const NAMESPACE = 'default';
export type ArmKind = 'floor' | 'service';

type CpuMeter = { name: string; read(): Promise<number> };

/** CPU ms of a process and its children (PostgreSQL's backends); an exited one's last value kept. */
function treeMeter(name: string, pid: () => number | undefined): CpuMeter {
  const seen = new Map<number, number>();
  const read = async (): Promise<number> => {
    const root = pid();
    if (root !== undefined) {
      // Gone, or no /proc: the process alone.
      const list = await readFile(`/proc/${root}/task/${root}/children`, 'utf8').catch(() => '');
      const children = list.split(/\s+/).filter(Boolean).map(Number);
      const stats = await pidusage([root, ...children]).catch(() => ({}) as Record<string, { ctime: number }>);
      for (const [p, s] of Object.entries(stats)) if (s) seen.set(Number(p), s.ctime);
    }
    return [...seen.values()].reduce((a, b) => a + b, 0);
  };
  return { name, read };
}

/** One arm's environment (API, simulators and key in service arms only). */
export interface ArmEnv {
  connection: Connection;
  client: Client;
  taskQueue: string;
  databaseUrl: string;
  apiUrl?: string;
  apiKey?: string;
  simulatorUrl?: string;
  meters: CpuMeter[];
  startWorker(): { spawnedAt: number };
  stopWorker(): Promise<void>;
  stop(): Promise<void>;
}

/** Raises every product's stock by `units` (with its adjustment movement). @returns the SKUs. */
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
 * Starts one arm's environment in `dir` (dev-server database, PostgreSQL data, logs), `--cpu-prof` for the worker and
 * the API into `profileDir`. Everything started is stopped again by `stop()`, also when starting fails.
 */
export async function startEnv(opts: {
  kind: ArmKind;
  dir: string;
  profileDir?: string;
  log: (line: string) => void;
}): Promise<ArmEnv> {
  const { dir, log } = opts;
  const logDir = path.join(dir, 'logs');
  await mkdir(logDir, { recursive: true });
  // Run as root, the embedded PostgreSQL runs as user `postgres`, which must reach its data folder.
  for (let d = dir; d.startsWith(ROOT) && d !== ROOT; d = path.dirname(d)) await chmod(d, 0o755);
  const stops: Array<() => Promise<void>> = [];
  const stopAll = async (): Promise<void> => {
    for (const s of stops.splice(0).reverse()) await s().catch((e: unknown) => log(`stop: ${String(e)}`));
  };
  try {
    const cliPath = await ensureTemporalCli({ log });
    const dbFilename = path.join(dir, 'temporal', 'dev.db');
    const startServer = async () => {
      const s = await startDevServer({ cliPath, dbFilename, port: await getPort(), uiPort: await getPort(), log() {} });
      stops.push(s.stop);
      return s;
    };
    const [server, database] = await Promise.all([startServer(), embeddedDatabase(dir, logDir, stops)]);
    const connection = await Connection.connect({ address: server.address });
    stops.push(() => connection.close());
    const client = new Client({ connection, namespace: NAMESPACE });
    const taskQueue = opts.kind === 'floor' ? 'bench-floor' : ORDER_TASK_QUEUE;
    const nodeArgs = opts.profileDir ? ['--cpu-prof', `--cpu-prof-dir=${opts.profileDir}`] : [];
    let workerEnv: NodeJS.ProcessEnv = {
      ...process.env,
      TEMPORAL_ADDRESS: server.address,
      BENCH_TASK_QUEUE: taskQueue,
    };
    let workerProcess: def.StackProcess = { name: 'worker', entry: path.join(ROOT, 'bench', 'floor', 'worker.ts') };
    let worker: Proc | undefined;
    const meters = [
      treeMeter('server', () => server.child.pid),
      treeMeter('worker', () => worker?.pid),
      database.meter,
    ];
    const workerLog = path.join(logDir, 'worker.log');
    const env: ArmEnv = {
      ...{ connection, client, taskQueue, databaseUrl: database.url, meters, stop: stopAll },
      startWorker: () => {
        worker = spawnStackProcess(workerProcess, { root: ROOT, env: workerEnv, logFile: workerLog, nodeArgs });
        return { spawnedAt: Date.now() };
      },
      stopWorker: async () => {
        await stop(worker);
        worker = undefined;
      },
    };
    if (opts.kind === 'floor') {
      // For the raw probe of the open loop: one INSERT + one workflow start.
      const db = new pg.Client({ connectionString: database.url });
      await db.connect();
      await db.query('CREATE TABLE bench_probe (id uuid PRIMARY KEY)');
      await db.end();
    } else {
      const dbEnv = { ...process.env, DATABASE_URL: database.url };
      const bin = (name: string): string => path.join(ROOT, 'node_modules', '.bin', name);
      const out = { file: path.join(logDir, 'migrate-seed.log'), append: true } as const;
      await execa(bin('prisma'), ['migrate', 'deploy'], { cwd: ROOT, env: dbEnv, stdout: out, stderr: out });
      await execa(bin('tsx'), ['prisma/seed.ts'], { cwd: ROOT, env: dbEnv, stdout: out, stderr: out });
      const ownKey = process.env.BENCH_API_KEY?.trim();
      const keys = ownKey
        ? []
        : await ensureDevApiKeys({ databaseUrl: database.url, file: path.join(dir, 'api-keys.json') });
      env.apiKey = ownKey || keys.find((k) => k.scopes.includes('orders:write'))?.key;
      // The processes of the stack definition on free ports; the caller's provider variables dropped.
      const inherited = def.withoutProviderVariables(process.env);
      const providerApiKeys = def.devProviderApiKeys(PROVIDER_LIST);
      const [simPort, apiPort, metricsPort] = [await getPort(), await getPort(), await getPort()];
      const [simulatorUrl, apiUrl] = [def.localUrl(simPort), def.localUrl(apiPort)];
      Object.assign(env, { simulatorUrl, apiUrl });
      const spawn = (proc: def.StackProcess, extra: NodeJS.ProcessEnv, args: string[] = []): Proc => {
        const logFile = path.join(logDir, `${proc.name}.log`);
        const child = spawnStackProcess(proc, { root: ROOT, env: { ...inherited, ...extra }, logFile, nodeArgs: args });
        stops.push(() => stop(child));
        return child;
      };
      // The simulated warehouse reports every order packed to this API after 100 ms (npm start: 3 s), with the
      // warehouse's development key (or BENCH_API_KEY, which then needs scope warehouse or operator).
      const callbackKey = keys.find((k) => k.scopes.includes(Scope.Warehouse))?.key ?? env.apiKey;
      const callback = callbackKey ? { callback: { url: apiUrl, apiKey: callbackKey } } : {};
      const simEnv = def.simulatorEnvironment({ port: simPort, providerApiKeys, ...callback });
      const sims = spawn(def.STACK_PROCESSES.simulators, { ...simEnv, WAREHOUSE_PACK_DELAY_MS: '100' });
      meters.push(treeMeter('sims', () => sims.pid));
      await waitForHttp(`${simulatorUrl}/_sim/health`, { child: sims });
      const serviceEnv = {
        ...def.serviceEnvironment({
          databaseUrl: database.url,
          temporalAddress: server.address,
          taskQueue,
          simulatorUrl,
          providerApiKeys,
        }),
        ...{ TEMPORAL_NAMESPACE: NAMESPACE, NO_COLOR: '1' },
        RATE_LIMIT_MAX: '0', // one client sending thousands of orders: no per-client rate limit
      };
      workerEnv = { ...inherited, ...serviceEnv, WORKER_METRICS_PORT: String(metricsPort) };
      workerProcess = def.STACK_PROCESSES.worker;
      const api = spawn(def.STACK_PROCESSES.api, { ...serviceEnv, PORT: String(apiPort) }, nodeArgs);
      meters.push(treeMeter('api', () => api.pid));
      await waitForHttp(`${apiUrl}/health`, { child: api });
    }
    meters.push({ name: 'client', read: async () => (process.cpuUsage().user + process.cpuUsage().system) / 1000 });
    stops.push(env.stopWorker); // stopped first
    env.startWorker();
    const queues = opts.kind === 'floor' ? [{ name: taskQueue, workflows: true }] : undefined;
    await waitForWorkerPollers({
      connection,
      namespace: NAMESPACE,
      taskQueue,
      pid: worker!.pid,
      queues,
      child: worker,
    });
    return env;
  } catch (error) {
    await stopAll();
    throw error;
  }
}

async function embeddedDatabase(dir: string, logDir: string, stops: Array<() => Promise<void>>) {
  const server = await startEmbeddedPostgres({
    ...{ dataDir: path.join(dir, 'postgres'), checkout: dir, port: await getPort(), user: 'postgres' },
    ...{ password: 'postgres', log: () => undefined, logFile: path.join(logDir, 'postgres.log'), fresh: true },
  });
  stops.push(server.stop);
  const url = server.adminUrl.replace(/\/postgres$/, '/order_fulfilment');
  await ensureDatabase(url);
  return { url, meter: treeMeter('postgres', () => server.child.pid) };
}
