/**
 * Horizontal scale on a running Temporal cluster (`npm run start:cluster`; CI's cluster steps run it with
 * `VITEST_CLUSTER=1 npx vitest run test/cluster`, which `npm test` leaves out). It starts, from `dist/`, on free
 * ports: the simulator process, two workers and two APIs with their reconcilers on (RECONCILE_INTERVAL_MS=1000), on
 * one task queue of a fresh namespace (the two workers register its search attributes at once), in a database of its
 * own; then:
 * 1. orphans: a third API whose Temporal address is dead takes SCALE_OUT_ORPHANS orders (202, no workflow), as a
 *    Temporal outage at POST time leaves them; the other APIs must start them;
 * 2. burst: SCALE_OUT_ORDERS orders at once over both APIs, plus SCALE_OUT_DUPLICATES repeats of earlier
 *    Idempotency-Keys sent to the other API; worker 1 is SIGKILLed after a third of the burst, started again after
 *    two thirds;
 * 3. drain: SCALE_OUT_DRAIN orders more while the first provider every order calls answers in 3 s, then SIGTERM to worker
 *    2 while its activities wait on it: it must finish them and exit 0 within its shutdownGraceTime (20 s) + 5 s.
 * Then every order must be `completed`, one per Idempotency-Key; in Temporal one run per order, all Completed; in
 * every provider's ledger exactly one effect per key and a key for every order (scripts/lib/ledgers.ts). Env:
 * TEMPORAL_ADDRESS; SCALE_OUT_PG_URL, else TEST_DATABASE_URL: the PostgreSQL server where the run's own database
 * `scale_out_<time>` is created and dropped. Logs in `.data/logs/scale-out/`.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { expect, it } from 'vitest';
import { execa } from 'execa';
import getPort from 'get-port';
import pg from 'pg';
import { ORDER_TASK_QUEUE, ORDER_WORKFLOW_TYPE } from '../../workflows/order-fulfilment.contract.js';
import { ApiKeyStore } from '../../src/auth/api-key.store.js';
import { Scope } from '../../src/auth/scopes.js';
import { createPrismaClient } from '../../src/prisma/prisma.js';
import { PROVIDER_LIST } from '../../providers/index.js';
import { repoRoot } from '../../scripts/lib/env.js';
import { checkLedger, readLedgers } from '../../scripts/lib/ledgers.js';
import {
  pollUntil,
  spawnChild,
  stop,
  waitForHttp,
  waitForWorkerPollers,
  type Proc,
} from '../../scripts/lib/processes.js';
import * as def from '../../scripts/lib/stack-definition.js';
import { ensureNamespace } from '../../scripts/lib/temporal-cluster.js';

const ROOT = repoRoot();
const int = (name: string, fallback: number): number => Number(process.env[name] ?? fallback);
const ORDERS = int('SCALE_OUT_ORDERS', 100);
const DUPLICATES = Math.min(int('SCALE_OUT_DUPLICATES', 20), ORDERS);
const ORPHANS = int('SCALE_OUT_ORPHANS', 10);
const DRAIN_ORDERS = int('SCALE_OUT_DRAIN', 20);
const CONCURRENCY = 20;
const ADDRESS = process.env.TEMPORAL_ADDRESS?.trim() || '127.0.0.1:7233';
const ADMIN_URL =
  process.env.SCALE_OUT_PG_URL?.trim() ||
  process.env.TEST_DATABASE_URL?.trim() ||
  'postgresql://postgres@127.0.0.1:5432/postgres';
/** The worker's shutdownGraceTime (src/worker/order-worker.ts), ms, and the margin allowed on top. */
const SHUTDOWN_GRACE_MS = 20_000;
const DRAIN_MARGIN_MS = 5_000;
const LOG_DIR = path.join(ROOT, '.data', 'logs', 'scale-out');

const startedAt = Date.now();
const say = (line: string): void =>
  console.log(`[${((Date.now() - startedAt) / 1000).toFixed(1).padStart(6)} s] ${line}`);

/** A process of the stack definition, its output in `.data/logs/scale-out/<name>.log`. */
interface Named {
  name: string;
  child: Proc;
}
const all: Named[] = [];

function start(name: string, proc: def.StackProcess, env: NodeJS.ProcessEnv): Named {
  const started = {
    name,
    // The built entry as npm start runs it: `node --enable-source-maps <entry>`, with only `env`.
    child: spawnChild(
      process.execPath,
      ['--enable-source-maps', proc.entry],
      { cwd: ROOT, env, extendEnv: false },
      path.join(LOG_DIR, `${name}.log`),
    ),
  };
  all.push(started);
  return started;
}

/** Stops every process, the latest first. */
async function stopAll(): Promise<void> {
  for (const p of [...all].reverse()) await stop(p.child);
}

/** The JSON log lines (pino) of a process whose `msg` matches. */
function logged(p: Named, msg: RegExp): Array<Record<string, unknown>> {
  const file = path.join(LOG_DIR, `${p.name}.log`);
  return (existsSync(file) ? readFileSync(file, 'utf8').split('\n') : []).flatMap((line) => {
    try {
      const entry = JSON.parse(line) as Record<string, unknown>;
      return typeof entry.msg === 'string' && msg.test(entry.msg) ? [entry] : [];
    } catch {
      return [];
    }
  });
}

/** Runs a one-shot command; its output is in the error when it fails. */
async function runToCompletion(command: string, argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  await execa(command, argv, { cwd: ROOT, env, stdin: 'ignore', all: true });
}

// ---------------------------------------------------------------------------------------------------------
// HTTP

/** `Authorization` of every API call: an operator key made in the run's database (see {@link createRunKey}). */
let auth: Record<string, string> = {};

/** Makes the run's API key (client `scale-out`, scope operator) in the database at `databaseUrl`. */
async function createRunKey(databaseUrl: string): Promise<string> {
  const prisma = createPrismaClient(databaseUrl, 1);
  try {
    const created = await new ApiKeyStore(prisma).createKey({
      clientId: 'scale-out',
      scopes: [Scope.Operator],
      label: 'npm run scale-out',
    });
    return created.key;
  } finally {
    await prisma.$disconnect();
  }
}

interface PostResult {
  key: string;
  api: string;
  status: number;
  id?: string;
  replayed: boolean;
}

async function postOrder(api: string, key: string, sku: string): Promise<PostResult> {
  const res = await fetch(`${api}/orders`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': key },
    body: JSON.stringify({
      customer: { email: `scale+${key.slice(0, 8)}@example.com`, name: 'Scale' },
      lines: [{ sku, quantity: 1 }],
    }),
  });
  const body = (await res.json().catch(() => ({}))) as { id?: string };
  return { key, api, status: res.status, id: body.id, replayed: res.headers.get('idempotent-replayed') === 'true' };
}

/** Runs `tasks` with at most `limit` in flight; `onDone(n)` after each completes. */
async function pool<T>(
  tasks: Array<() => Promise<T>>,
  limit: number,
  onDone?: (done: number) => void | Promise<void>,
): Promise<T[]> {
  const results: T[] = new Array(tasks.length);
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async () => {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await tasks[i]!();
        done++;
        await onDone?.(done);
      }
    }),
  );
  return results;
}

async function orderStatus(api: string, id: string): Promise<string> {
  const res = await fetch(`${api}/orders/${id}`, { headers: auth });
  if (!res.ok) throw new Error(`GET /orders/${id} answered ${res.status}`);
  return ((await res.json()) as { status: string }).status;
}

// ---------------------------------------------------------------------------------------------------------
// The run

interface Row {
  check: string;
  value: string;
  ok: boolean;
}

async function main(): Promise<Row[]> {
  await rm(LOG_DIR, { recursive: true, force: true });
  await mkdir(LOG_DIR, { recursive: true });
  const rows: Row[] = [];
  const row = (check: string, value: string | number, ok = true): void => {
    rows.push({ check, value: String(value), ok });
  };

  const connection = await Connection.connect({ address: ADDRESS });
  const info = await connection.workflowService.getClusterInfo({});
  say(
    `Temporal at ${ADDRESS}: server ${info.serverVersion}, persistence ${info.persistenceStore}, visibility ${info.visibilityStore}`,
  );
  if (info.persistenceStore === 'sqlite') {
    throw new Error(`${ADDRESS} is the dev server (sqlite); start a cluster (npm run start:cluster)`);
  }
  row('Temporal', `${info.serverVersion} on ${info.persistenceStore}`);

  const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
  const namespace = `scale-out-${stamp}`;
  await ensureNamespace(connection, namespace, 1, 60_000, say);
  const taskQueue = ORDER_TASK_QUEUE;
  const waitForPoller = (w: Named): Promise<void> =>
    waitForWorkerPollers({ connection, namespace, taskQueue, pid: w.child.pid, child: w.child });

  // Database
  const database = `scale_out_${stamp}_${process.pid}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${admin.escapeIdentifier(database)}`);
  await admin.end();
  const dbUrl = new URL(ADMIN_URL);
  dbUrl.pathname = `/${database}`;
  const databaseUrl = dbUrl.toString();
  say(`database ${database}: migrating and seeding`);
  await runToCompletion('npx', ['prisma', 'migrate', 'deploy'], { DATABASE_URL: databaseUrl });
  if (existsSync(path.join(ROOT, 'prisma', 'seed.ts'))) {
    await runToCompletion('npx', ['tsx', 'prisma/seed.ts'], { DATABASE_URL: databaseUrl });
  }
  const runKey = await createRunKey(databaseUrl);
  auth = { authorization: `Bearer ${runKey}` };

  try {
    // The simulator process (every provider under /<name>), and the services' environment from the stack
    // definition (the caller's own provider variables dropped: the services reach these simulators).
    const inherited = def.withoutProviderVariables(process.env);
    const providerApiKeys = def.devProviderApiKeys(PROVIDER_LIST);
    const simulatorPort = await getPort();
    const simulatorUrl = def.localUrl(simulatorPort);
    const apiPorts = [await getPort(), await getPort()];
    // The simulated warehouse reports every order packed to the first API, with the run's operator key.
    const callback = { url: def.localUrl(apiPorts[0]!), apiKey: runKey };
    const sims = start(def.STACK_PROCESSES.simulators.name, def.STACK_PROCESSES.simulators, {
      ...inherited,
      ...def.simulatorEnvironment({ port: simulatorPort, providerApiKeys, callback }),
    });
    await waitForHttp(`${simulatorUrl}/_sim/health`, { child: sims.child });
    say(`simulators: ${simulatorUrl} (${PROVIDER_LIST.map((p) => `/${p.name}`).join(', ')})`);

    const serviceEnv: NodeJS.ProcessEnv = {
      ...inherited,
      ...def.serviceEnvironment({ databaseUrl, temporalAddress: ADDRESS, taskQueue, simulatorUrl, providerApiKeys }),
      TEMPORAL_NAMESPACE: namespace,
      LOG_LEVEL: 'info',
      NO_COLOR: '1',
      RATE_LIMIT_MAX: '0',
    };
    // Each worker serves its own Prometheus endpoint: on one host they need distinct ports.
    const startWorker = async (name: string) =>
      start(name, def.STACK_PROCESSES.worker, { ...serviceEnv, WORKER_METRICS_PORT: String(await getPort()) });
    const workers = [await startWorker('worker-1'), await startWorker('worker-2')];
    await Promise.all(workers.map((w) => waitForPoller(w)));
    const registeredBy = workers.filter((w) => logged(w, /registered search attributes/).length > 0).map((w) => w.name);
    say(
      `2 workers polling ${namespace}/${taskQueue}; search attributes registered by ${registeredBy.join(', ') || 'nobody (already there)'}`,
    );
    row('workers polling one task queue', 2);
    row('search attributes registered by', registeredBy.join(', ') || '(already registered)');

    const apis = apiPorts.map((port, i) =>
      start(`api-${i + 1}`, def.STACK_PROCESSES.api, {
        ...serviceEnv,
        PORT: String(port),
        RECONCILE_INTERVAL_MS: '1000',
      }),
    );
    const apiUrls = apiPorts.map((port) => def.localUrl(port));
    await Promise.all(apis.map((api, i) => waitForHttp(`${apiUrls[i]}/health`, { child: api.child })));
    say(`2 APIs with reconcilers: ${apiUrls.join(', ')}`);
    row('API processes (reconciler every 1 s)', 2);

    // Stock for every order: raise each product's on-hand stock.
    const products = (await (await fetch(`${apiUrls[0]}/inventory`, { headers: auth })).json()) as Array<{
      sku: string;
      onHand: number;
    }>;
    if (products.length === 0) throw new Error('no products: the seed did not run');
    for (const p of products) {
      const res = await fetch(`${apiUrls[0]}/inventory/${encodeURIComponent(p.sku)}`, {
        method: 'PUT',
        headers: { ...auth, 'content-type': 'application/json' },
        body: JSON.stringify({ onHand: p.onHand + 10 * (ORDERS + ORPHANS + DRAIN_ORDERS) }),
      });
      if (!res.ok) throw new Error(`PUT /inventory/${p.sku} answered ${res.status}: ${await res.text()}`);
    }
    const skuFor = (i: number): string => products[i % products.length]!.sku;
    const keySku = new Map<string, string>();
    const orderIds = new Set<string>();
    const keyToIds = new Map<string, Set<string>>();
    const record = (r: PostResult): void => {
      if (r.id && (r.status === 202 || r.status === 200)) {
        orderIds.add(r.id);
        const ids = keyToIds.get(r.key) ?? new Set<string>();
        ids.add(r.id);
        keyToIds.set(r.key, ids);
      }
    };

    // 1. Orphans: accepted while Temporal is unreachable for that API; the other APIs start them (their start
    // dispatchers claim the shared start intents; the reconcilers are the safety net).
    const orphanIds: string[] = [];
    if (ORPHANS > 0) {
      const downPort = await getPort();
      const deadTemporal = `127.0.0.1:${await getPort()}`;
      const down = start('api-temporal-down', def.STACK_PROCESSES.api, {
        ...serviceEnv,
        PORT: String(downPort),
        TEMPORAL_ADDRESS: deadTemporal,
        RECONCILE_INTERVAL_MS: '0',
      });
      await pollUntil(
        'the Temporal-down API to listen',
        async () => {
          const res = await fetch(`http://127.0.0.1:${downPort}/orders`, { headers: auth }).catch(() => undefined);
          await res?.body?.cancel();
          return res?.ok;
        },
        { timeoutMs: 60_000, child: down.child },
      );
      // One POST every 500 ms, each waiting out the API's 5 s start timeout in parallel: their createdAt spread
      // over several reconciler passes of both APIs.
      const orphanPosts: Array<Promise<PostResult>> = [];
      for (let i = 0; i < ORPHANS; i++) {
        const key = randomUUID();
        keySku.set(key, skuFor(i));
        orphanPosts.push(postOrder(`http://127.0.0.1:${downPort}`, key, skuFor(i)));
        await sleep(500);
      }
      for (const r of await Promise.all(orphanPosts)) {
        if (r.status !== 202) throw new Error(`orphan POST answered ${r.status}`);
        record(r);
        if (r.id) orphanIds.push(r.id);
      }
      await stop(down.child);
      say(`${ORPHANS} orders accepted with Temporal unreachable (no workflow yet)`);
    }

    // 2. Burst over both APIs, with repeats of earlier keys sent to the other API; worker 1 killed mid-burst.
    const burstKeys = Array.from({ length: ORDERS }, () => randomUUID());
    burstKeys.forEach((key, i) => keySku.set(key, skuFor(i)));
    const tasks: Array<() => Promise<PostResult>> = burstKeys.map(
      (key, i) => () => postOrder(apiUrls[i % 2]!, key, keySku.get(key)!),
    );
    // Repeats of earlier keys, sent to the other API: the even ones right behind the first request (in flight:
    // 409, or a replay if it already finished), the odd ones at the end of the burst (replayed: same order).
    const dupEvery = DUPLICATES > 0 ? Math.floor(ORDERS / DUPLICATES) : 0;
    const late: Array<() => Promise<PostResult>> = [];
    for (let d = DUPLICATES - 1; d >= 0; d--) {
      const i = d * dupEvery;
      const key = burstKeys[i]!;
      const repeat = () => postOrder(apiUrls[(i + 1) % 2]!, key, keySku.get(key)!);
      if (d % 2 === 0) tasks.splice(i + 1, 0, repeat);
      else late.push(repeat);
    }
    tasks.push(...late);
    let killedAt = 0;
    let restarted = false;
    const burstStart = Date.now();
    const results = await pool(tasks, CONCURRENCY, async (done) => {
      if (!killedAt && done >= tasks.length / 3) {
        killedAt = Date.now();
        workers[0]!.child.kill('SIGKILL');
        say(`SIGKILL worker-1 (pid ${workers[0]!.child.pid}) after ${done}/${tasks.length} POSTs`);
      }
      if (killedAt && !restarted && done >= (2 * tasks.length) / 3) {
        restarted = true;
        workers[0] = await startWorker('worker-1b');
        say(`started worker-1b after ${done}/${tasks.length} POSTs`);
      }
    });
    const burstPostSecs = (Date.now() - burstStart) / 1000;
    for (const r of results) record(r);
    const accepted = results.filter((r) => r.status === 202);
    const conflicts = results.filter((r) => r.status === 409);
    const other = results.filter((r) => r.status !== 202 && r.status !== 409);
    say(
      `burst: ${results.length} POSTs in ${burstPostSecs.toFixed(1)} s: ${accepted.length} × 202 (${accepted.filter((r) => r.replayed).length} replayed), ${conflicts.length} × 409, ${other.length} other`,
    );
    row('burst POSTs (orders + repeated keys)', `${results.length} (${ORDERS} + ${DUPLICATES})`);
    row(
      '  answered 202 / replayed / 409 / other',
      `${accepted.length} / ${accepted.filter((r) => r.replayed).length} / ${conflicts.length} / ${other.length}`,
      other.length === 0,
    );
    row(
      'worker SIGKILLed mid-burst, restarted',
      `worker-1 at ${((killedAt - burstStart) / 1000).toFixed(1)} s, worker-1b ${restarted ? 'yes' : 'no'}`,
      killedAt > 0,
    );
    await waitForPoller(workers[0]!);

    // 3. Drain: SIGTERM worker 2 while its activities wait on a slow provider (every call of the first provider a
    // step calls answers after 3 s); it must finish them and exit 0 within its grace time.
    const slow = def.providersEveryOrderCalls()[0]!;
    const faults = `${def.simulatedProviderUrl(simulatorUrl, slow.name)}/_sim/faults`;
    const fault = await fetch(faults, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ mode: 'slow', delayMs: 3000, times: DRAIN_ORDERS }),
    });
    if (!fault.ok) throw new Error(`POST ${faults} answered ${fault.status}`);
    const drainKeys = Array.from({ length: DRAIN_ORDERS }, () => randomUUID());
    drainKeys.forEach((key, i) => keySku.set(key, skuFor(i)));
    const drainResults = await pool(
      drainKeys.map((key, i) => () => postOrder(apiUrls[i % 2]!, key, keySku.get(key)!)),
      CONCURRENCY,
    );
    for (const r of drainResults) record(r);
    await sleep(1500);
    const sigtermAt = Date.now();
    workers[1]!.child.kill('SIGTERM');
    const drainExit = await Promise.race([workers[1]!.child, sleep(SHUTDOWN_GRACE_MS + 30_000).then(() => undefined)]);
    const drainMs = Date.now() - sigtermAt;
    const drainOk =
      drainExit !== undefined && drainExit.exitCode === 0 && drainMs <= SHUTDOWN_GRACE_MS + DRAIN_MARGIN_MS;
    say(
      `SIGTERM worker-2 with ${DRAIN_ORDERS} more orders in progress (${slow.name} answering in 3 s): ` +
        `${drainExit ? `exit ${drainExit.exitCode ?? drainExit.signal}` : 'still running'} after ${drainMs} ms`,
    );
    row(
      `worker SIGTERM drain (grace ${SHUTDOWN_GRACE_MS / 1000} s)`,
      `${drainExit ? `exit ${drainExit.exitCode ?? drainExit.signal}` : 'no exit'} in ${(drainMs / 1000).toFixed(1)} s`,
      drainOk,
    );
    if (drainExit === undefined) workers[1]!.child.kill('SIGKILL');

    // Every order terminal
    const ids = [...orderIds];
    const statuses = new Map<string, string>();
    await pollUntil(
      `all ${ids.length} orders to finish`,
      async () => {
        const pending = ids.filter((id) => !['completed', 'failed'].includes(statuses.get(id) ?? ''));
        await pool(
          pending.map((id, i) => async () => statuses.set(id, await orderStatus(apiUrls[i % 2]!, id))),
          10,
        );
        return ids.every((id) => ['completed', 'failed'].includes(statuses.get(id) ?? ''));
      },
      { timeoutMs: 300_000, intervalMs: 1000 },
    );
    const completedAll = (Date.now() - burstStart) / 1000;
    const completed = ids.filter((id) => statuses.get(id) === 'completed').length;
    const keysTotal = ORPHANS + ORDERS + DRAIN_ORDERS;
    say(`all ${ids.length} orders finished; ${completed} completed`);
    row('unique orders (one per Idempotency-Key)', `${ids.length} of ${keysTotal} keys`, ids.length === keysTotal);
    row(
      'keys answered with more than one order',
      [...keyToIds.values()].filter((s) => s.size > 1).length,
      [...keyToIds.values()].every((s) => s.size === 1),
    );
    row('orders completed', `${completed} of ${ids.length}`, completed === ids.length);
    row('burst + drain orders completed within', `${completedAll.toFixed(1)} s`);

    // Temporal: one run per order, all Completed (visibility is eventually consistent: wait for it).
    const count = async (query: string): Promise<number> =>
      Number((await connection.workflowService.countWorkflowExecutions({ namespace, query })).count ?? 0);
    const typeQuery = `WorkflowType = "${ORDER_WORKFLOW_TYPE}"`;
    const [runs, completedRuns] = await pollUntil(
      'visibility to list every run as Completed',
      async () => {
        const all = await count(typeQuery);
        const done = await count(`${typeQuery} AND ExecutionStatus = "Completed"`);
        return done === ids.length && all === ids.length ? [all, done] : undefined;
      },
      { timeoutMs: 60_000 },
    ).catch(async () => [await count(typeQuery), await count(`${typeQuery} AND ExecutionStatus = "Completed"`)]);
    row('workflow runs / Completed', `${runs} / ${completedRuns}`, runs === ids.length && completedRuns === ids.length);

    // Orphans: every one was started by the other APIs (dispatcher or reconciler: the attribution is informational,
    // since whichever API claims a start intent first starts it), each exactly once (the run count above).
    const reconciled = apis.map((api) =>
      logged(api, /Reconciled orders without a workflow/).reduce((n: number, e) => n + Number(e.started ?? 0), 0),
    );
    const db = createPrismaClient(databaseUrl, 1);
    const orphansStarted = await db.order
      .count({ where: { id: { in: orphanIds }, workflowStartedAt: { not: null } } })
      .finally(() => db.$disconnect());
    row(
      'orphans started (by reconciler api-1 / api-2)',
      `${orphansStarted} of ${ORPHANS} (${reconciled[0]} / ${reconciled[1]})`,
      orphanIds.length === ORPHANS && orphansStarted === ORPHANS,
    );

    // Ledgers: exactly one effect per key at every provider, and every order has at least one key at each provider
    // a step calls.
    for (const ledger of await readLedgers(simulatorUrl, PROVIDER_LIST)) {
      const c = checkLedger(ledger, orderIds);
      row(
        `${c.provider} ledger: keys / effects / keys ≠ 1 effect`,
        `${c.keys} / ${c.effects} / ${c.notOnce}`,
        c.notOnce === 0,
      );
      row(
        `${c.provider} ledger: orders with an effect`,
        `${c.ordersCovered} of ${ids.length}${c.coverageRequired ? '' : ' (not every order calls it)'}`,
        !c.coverageRequired || c.ordersCovered === ids.length,
      );
    }
    return rows;
  } finally {
    await stopAll();
    await connection.close();
    {
      const cleanup = new pg.Client({ connectionString: ADMIN_URL });
      await cleanup.connect();
      await cleanup.query(`DROP DATABASE IF EXISTS ${cleanup.escapeIdentifier(database)} WITH (FORCE)`);
      await cleanup.end();
    }
  }
}

it(
  'two APIs and two workers share the work: no order lost or doubled through a kill, a drain and orphans',
  async () => {
    let rows: Row[] = [];
    try {
      rows = await main();
    } finally {
      await stopAll();
    }
    const width = Math.max(...rows.map((r) => r.check.length));
    console.log(
      `Scale-out summary\n${rows.map((r) => `  ${r.ok ? 'ok  ' : 'FAIL'}  ${r.check.padEnd(width)}  ${r.value}`).join('\n')}`,
    );
    expect(rows.filter((r) => !r.ok)).toEqual([]);
  },
  20 * 60_000,
);
