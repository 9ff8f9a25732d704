/**
 * One arm's environment from nothing: `npm start`'s own stack (scripts/stack.ts) on free ports with its data in the
 * arm's folder (`STACK_DATA_DIR`): the whole service, or `--only temporal` and the floor's worker. Every process's CPU
 * is read by pidusage from the stack's pid files.
 */
import { chmod, mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import getPort from 'get-port';
import pidusage from 'pidusage';
import type { DevApiKey } from '../../scripts/lib/dev-api-keys.js';
import { repoRoot } from '../../scripts/lib/env.js';
import { spawnChild, stop, waitForHttp, waitForTemporal, waitForWorkerPollers } from '../../scripts/lib/processes.js';
import {
  embeddedDatabaseUrl,
  localUrl,
  PORT_VARIABLES,
  withoutProviderVariables,
  type StackPort,
} from '../../scripts/lib/stack-definition.js';
import type { ProductView } from '../../src/inventory/inventory.dto.js';
import { ORDER_TASK_QUEUE } from '../../workflows/order-fulfilment.contract.js';

export const ROOT = repoRoot();
const NAMESPACE = 'default';
export type ArmKind = 'floor' | 'service';

type CpuMeter = { name: string; read(): Promise<number> };

/** CPU ms of a process and its children (PostgreSQL's backends); an exited one's last value kept. */
function treeMeter(name: string, pid: number): CpuMeter {
  const seen = new Map<number, number>();
  const read = async (): Promise<number> => {
    // Gone, or no /proc: the process alone.
    const list = await readFile(`/proc/${pid}/task/${pid}/children`, 'utf8').catch(() => '');
    const children = list.split(/\s+/).filter(Boolean).map(Number);
    const stats = await pidusage([pid, ...children]).catch(() => ({}) as Record<string, { ctime: number }>);
    for (const [p, s] of Object.entries(stats)) if (s) seen.set(Number(p), s.ctime);
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
  operatorKey?: string;
  simulatorUrl?: string;
  meters: CpuMeter[];
  stop(): Promise<void>;
}

/** Raises every product's on-hand stock by `units` as an operator does (`PUT /inventory/:sku`). @returns the SKUs. */
export async function raiseStock(env: ArmEnv, units: number): Promise<string[]> {
  const headers = { authorization: `Bearer ${env.operatorKey}`, 'content-type': 'application/json' };
  const products = (await (await fetch(`${env.apiUrl}/inventory`, { headers })).json()) as ProductView[];
  for (const p of products) {
    const body = JSON.stringify({ onHand: p.onHand + units });
    const res = await fetch(`${env.apiUrl}/inventory/${p.sku}`, { method: 'PUT', headers, body });
    if (!res.ok) throw new Error(`PUT /inventory/${p.sku} answered ${res.status}: ${await res.text()}`);
  }
  return products.map((p) => p.sku).sort();
}

/**
 * Starts one arm's environment in `dir` (data, pid files, keys, logs), `--cpu-prof` for the worker and the API into
 * `profileDir`. Everything started is stopped again by `stop()`, also when starting fails.
 */
export async function startEnv(opts: { kind: ArmKind; dir: string; profileDir?: string }): Promise<ArmEnv> {
  const { dir, kind } = opts;
  await mkdir(path.join(dir, 'logs'), { recursive: true });
  // Run as root, the embedded PostgreSQL runs as user `postgres`, which must reach its data folder.
  for (let d = dir; d.startsWith(ROOT) && d !== ROOT; d = path.dirname(d)) await chmod(d, 0o755);
  const ports = {} as Record<StackPort, number>;
  for (const role of Object.keys(PORT_VARIABLES) as StackPort[]) ports[role] = await getPort();
  const { DATABASE_URL: _db, TEMPORAL_ADDRESS: _t, ...inherited } = withoutProviderVariables(process.env);
  const env = {
    ...inherited,
    ...Object.fromEntries(Object.entries(PORT_VARIABLES).map(([role, v]) => [v, String(ports[role as StackPort])])),
    ...{ STACK_DATA_DIR: dir, NO_COLOR: '1', LOG_FORMAT: 'json', STACK_PROFILE_DIR: opts.profileDir ?? '' },
    WAREHOUSE_PACK_DELAY_MS: '100', // the simulated warehouse reports an order packed after 100 ms (npm start: 3 s)
    RATE_LIMIT_MAX: '0', // one client sending thousands of orders: no per-client rate limit
  };
  const argv = [
    ...process.execArgv,
    path.join(ROOT, 'scripts', 'stack.ts'),
    ...(kind === 'floor' ? ['--only', 'temporal'] : []),
  ];
  const logFile = (name: string): string => path.join(dir, 'logs', `${name}.log`);
  const options = { cwd: ROOT, env, extendEnv: false, forceKillAfterDelay: 120_000 };
  const stack = spawnChild(process.execPath, argv, options, logFile('stack'));
  const children = [stack];
  const stopAll = async (): Promise<void> => {
    for (const child of children.reverse()) await stop(child);
  };
  try {
    const address = `127.0.0.1:${ports.temporal}`;
    const [apiUrl, simulatorUrl] = [localUrl(ports.api), localUrl(ports.simulators)];
    if (kind === 'service') await waitForHttp(`${apiUrl}/health`, { timeoutMs: 10 * 60_000, child: stack });
    else await waitForTemporal({ address, namespace: NAMESPACE, timeoutMs: 10 * 60_000, child: stack });
    const pid = async (name: string): Promise<number> =>
      Number(await readFile(path.join(dir, 'run', `${name}.pid`), 'utf8'));
    const meters = [treeMeter('server', await pid('temporal'))];
    const connection = await Connection.connect({ address });
    const client = new Client({ connection, namespace: NAMESPACE });
    const arm: ArmEnv = {
      ...{ connection, client, meters, taskQueue: ORDER_TASK_QUEUE, databaseUrl: '' },
      stop: () => connection.close().then(stopAll),
    };
    if (kind === 'floor') {
      arm.taskQueue = 'bench-floor';
      const entry = ['--import', 'tsx', path.join(ROOT, 'bench', 'floor', 'worker.ts')];
      const workerEnv = { ...env, TEMPORAL_ADDRESS: address, BENCH_TASK_QUEUE: arm.taskQueue };
      const worker = spawnChild(process.execPath, entry, { cwd: ROOT, env: workerEnv }, logFile('worker'));
      children.push(worker);
      const queues = [{ name: arm.taskQueue, workflows: true }];
      const wait = { connection, namespace: NAMESPACE, taskQueue: arm.taskQueue, pid: worker.pid, queues };
      await waitForWorkerPollers({ ...wait, child: worker });
      meters.push(treeMeter('worker', worker.pid!));
    } else {
      for (const name of ['worker', 'api', 'postgres', 'simulators'])
        meters.push(treeMeter(name === 'simulators' ? 'sims' : name, await pid(name)));
      const keys = JSON.parse(await readFile(path.join(dir, 'api-keys.json'), 'utf8')) as DevApiKey[];
      const apiKey = keys.find((k) => k.scopes.includes('orders:write'))?.key;
      const operatorKey = keys.find((k) => k.scopes.includes('operator'))?.key;
      const databaseUrl = embeddedDatabaseUrl(ports.embeddedPostgres);
      Object.assign(arm, { apiUrl, simulatorUrl, apiKey, operatorKey, databaseUrl });
    }
    meters.push({ name: 'client', read: async () => (process.cpuUsage().user + process.cpuUsage().system) / 1000 });
    return arm;
  } catch (error) {
    await stopAll();
    throw error;
  }
}
