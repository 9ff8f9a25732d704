/**
 * `npm run bench`: the service against the Temporal floor, side by side (issue 9).
 *
 * Arms, interleaved ABBA per cycle (floor, service, service, floor; with two floors: F0 F5 S S F5 F0), each in
 * a fresh environment (bench/lib/env.ts: new dev-server SQLite file, new PostgreSQL, new processes):
 * - F0 / F5: bare workflows of 4 / 5 sequential no-op activities, default worker options, started with a raw
 *   client from this process. F0 is the issue's floor; F5 has the order workflow's shape (5 activities).
 * - S: the service as `npm start` runs it (from dist/): orders over HTTP, POST /orders.
 * Phases of every arm:
 * 1. warm-up: --warmup units at once, discarded;
 * 2. burst: --burst units at once; completions/s = units / (last close − first send), CPU per unit per process
 *    from /proc (dev server, worker, API, PostgreSQL; the bench's own CPU as `client`, simulators as `sims`),
 *    latency of each start (floor) or POST (service), history events per unit (visibility's historyLength);
 *    the service's orders spread over every SKU, one line each, round-robin;
 * 2b. flash sale: --flash units at once (default: as many as the burst), the service's orders all for ONE SKU, so
 *    every reservation meets the same product row; the floor has no rows, its flash burst is a second burst, the
 *    reference of the S/F ratios. Same figures as the burst, printed beside it (spread vs flash); --open-seconds at R units/s, R = half the service's burst rate (--open-rate to fix it); latency
 *    from each request's intended send time. The floor arms send the raw probe here: one INSERT (pg) + one
 *    workflow start from a bare client. Until a service arm has run, R is unknown and a floor arm skips this;
 * 4. backlog: the worker stopped, --backlog units sent, the worker started: drain time = last close − worker
 *    spawn;
 * 5. checks: every unit completed once (Temporal: one run per unit, all Completed); service: every order row
 *    `completed`, one order per POST, every provider's ledger (the simulator process, PROVIDER_LIST) exactly 1 effect
 *    per key and a key for every order, and every product's on-hand and reserved stock equal to the sums of its
 *    movements (the flash SKU's above all).
 * Prints one table (per arm, and the mean per kind with the ratios S/F0 and S/F5), writes results.csv,
 * units.csv and plot.svg into the run folder (.data/bench/<time>/ unless --out).
 *
 * Usage: npm run bench -- [--help] [--quick] [--cycles 1] [--floors F0,F5] [--warmup 20] [--burst 200] [--flash <burst>]
 *   [--open-seconds 30] [--open-rate auto|<n>] [--backlog 5000] [--backlog-concurrency 16] [--backlog-arms F0,S]
 *   [--worker-options '<json>'] [--floor-worker-options '<json>'] [--service-worker-entry <file>]
 *   [--arms F5,S,S,F5] [--only <arm>] [--pg-url <maintenance url>] [--wait-quiet] [--no-build] [--keep]
 *   [--variant-root <checkout>] [--variant-worker-options '<json>'] [--variant-label <text>]
 * Arms: F0, F5 (floors), FE (F5 started eagerly: the starter in the worker's process, requestEagerStart), S (the
 * service from this checkout), V (a variant of the service for lever experiments: another checkout's build with
 * --variant-root, and/or other worker options with --variant-worker-options). --arms sets the order (e.g.
 * S,V,V,S); by default the ABBA cycle of --floors and S.
 *   [--profile] (V8 CPU profiles of the worker's and the API's main thread over the burst into <arm>/profiles;
 *   bench/profile-summary.ts summarises them)
 * Env: TEMPORAL_CLI_PATH (the dev server's CLI), BENCH_API_KEY (else development keys where the project has
 * them, else none).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { PROVIDER_LIST } from '../providers/index.js';
import { checkLedger, describeLedgerCheck, readLedgers } from '../scripts/lib/ledgers.js';
import { ORDER_WORKFLOW_TYPE } from '../workflows/order-fulfilment.contract.js';
import { raiseStock, ROOT, startEnv, type ArmEnv, type ArmKind } from './lib/env.js';
import { cpuDelta, loadAverage, sampleCpu } from './lib/proc.js';
import { fmt, mean, meanFinite, modeAndRange, percentile, pool } from './lib/stats.js';
import { renderPlot } from './lib/svg.js';

// ---------------------------------------------------------------------------------------------------------
// Options

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    cycles: { type: 'string' },
    floors: { type: 'string' },
    warmup: { type: 'string' },
    burst: { type: 'string' },
    flash: { type: 'string' },
    'open-seconds': { type: 'string' },
    'open-rate': { type: 'string', default: 'auto' },
    backlog: { type: 'string' },
    'backlog-arms': { type: 'string' },
    'backlog-concurrency': { type: 'string', default: '16' },
    'worker-options': { type: 'string' },
    'floor-worker-options': { type: 'string' },
    'service-worker-entry': { type: 'string' },
    arms: { type: 'string' },
    'variant-root': { type: 'string' },
    'variant-worker-options': { type: 'string' },
    'variant-label': { type: 'string' },
    only: { type: 'string' },
    'pg-url': { type: 'string' },
    'wait-quiet': { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    profile: { type: 'boolean', default: false },
    out: { type: 'string' },
    label: { type: 'string' },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});
if (args.help) {
  // The usage is this file's leading comment, printed as written (one text, so it cannot drift from the doc).
  const source = readFileSync(new URL(import.meta.url), 'utf8');
  const doc = /^\/\*\*\n([\s\S]*?)\n \*\//.exec(source)?.[1] ?? '';
  process.stdout.write(`${doc.replace(/^ \* ?/gm, '')}\n`);
  process.exit(0);
}
const quick = args.quick;
const num = (v: string | undefined, full: number, q: number): number => Number(v ?? (quick ? q : full));
const CYCLES = num(args.cycles, 1, 1);
const FLOORS = (args.floors ?? (quick ? 'F5' : 'F0,F5')).split(',').map((f) => f.trim()) as FloorName[];
const WARMUP = num(args.warmup, 20, 5);
const BURST = num(args.burst, 200, 20);
/** Units of the flash-sale burst (every order for one SKU); 0 skips it. Default: as many as the burst. */
const FLASH = args.flash !== undefined ? Number(args.flash) : BURST;
const OPEN_SECONDS = num(args['open-seconds'], 30, 4);
const BACKLOG = num(args.backlog, 5000, 30);
const BACKLOG_CONCURRENCY = Number(args['backlog-concurrency']);
/** The arms that run the backlog phase (default all). */
const BACKLOG_ARMS = args['backlog-arms']?.split(',').map((a) => a.trim());
const OPEN_RATE = args['open-rate'] === 'auto' ? undefined : Number(args['open-rate']);

type FloorName = 'F0' | 'F5' | 'FE';
type ArmName = FloorName | 'S' | 'V';
const ARM_NAMES: readonly ArmName[] = ['F0', 'F5', 'FE', 'S', 'V'];
const FLOOR_TYPES: Record<FloorName, string> = { F0: 'floor4', F5: 'floor5', FE: 'floor5' };
const kindOf = (arm: ArmName): ArmKind => (arm === 'S' || arm === 'V' ? 'service' : 'floor');
for (const f of FLOORS) if (!(f in FLOOR_TYPES)) throw new Error(`--floors: unknown floor ${f} (F0, F5 or FE)`);

const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const OUT = path.resolve(args.out ?? path.join(ROOT, '.data', 'bench', stamp));
const benchStarted = Date.now();
const say = (line: string): void => {
  console.log(`[${((Date.now() - benchStarted) / 1000).toFixed(1).padStart(7)} s] ${line}`);
};

// ---------------------------------------------------------------------------------------------------------
// Results

interface Phase {
  units: number;
  /** Epoch ms of the first send. */
  firstSend: number;
  /** Epoch ms of the last workflow close. */
  lastClose: number;
  rate: number;
  /** CPU ms per process over the phase's window. */
  cpu: Record<string, number>;
  /** Cores busy over the window: all the processes' CPU (the bench and simulators included) ÷ its length. */
  cores: number;
  /** Start / POST latencies, ms (open loop: from the intended send time). */
  latencies: number[];
  /** Close time of each unit, seconds since firstSend. */
  closeOffsets: number[];
  /** History events of each unit. */
  events: number[];
  /** Workflow task schedule-to-start of a sample of units, ms: the first task of each, and the later ones. */
  wftWait?: { first: number[]; later: number[] };
}

interface ArmResult {
  arm: ArmName;
  cycle: number;
  position: number;
  burst: Phase;
  /** The flash-sale burst (service: every order for {@link ArmResult.flashSku}; floor: a second burst). */
  flash?: Phase;
  flashSku?: string;
  open?: Phase & { rate: number; targetRate: number };
  backlog?: Phase & { sendSeconds: number; drainSeconds: number };
  checks: string[];
  checksOk: boolean;
  load: { before: number; after: number };
}

/**
 * CPU the arm's work costs: the service = dev server + worker + API + PostgreSQL; the floor = dev server + worker
 * + its starter (the bench process, `client`), and in the open loop, where the raw probe INSERTs, + PostgreSQL.
 * The service arm's load generator (`client`) and the provider simulators (`sims`) are printed, not counted.
 */
function costParts(kind: ArmKind, phase: PhaseName): string[] {
  if (kind === 'service') return ['server', 'worker', 'api', 'postgres'];
  return phase === 'open' ? ['server', 'worker', 'client', 'postgres'] : ['server', 'worker', 'client'];
}

type PhaseName = 'burst' | 'flash' | 'open' | 'backlog';

function unitCost(kind: ArmKind, cpu: Record<string, number>, phase: PhaseName = 'burst'): number {
  return costParts(kind, phase).reduce((sum, p) => sum + (cpu[p] ?? 0), 0);
}

// ---------------------------------------------------------------------------------------------------------
// Units: what one arm sends

interface Sender {
  kind: ArmKind;
  workflowType: string;
  /** Sends one unit; resolves with its workflow id. */
  send(): Promise<string>;
  /**
   * Sends the units of a burst at once; resolves with ids and latencies. `sku`: every order for that SKU (the
   * flash sale; the floor has none and ignores it).
   */
  burst(n: number, sku?: string): Promise<{ ids: string[]; latencies: number[] }>;
  /** The open loop's request: floor = raw probe (INSERT + start), service = POST /orders. */
  probe(): Promise<string>;
  /** HTTP status -> answers that made the client repeat a POST (same Idempotency-Key), so far. */
  answersRepeated(): Record<number, number>;
  close(): Promise<void>;
}

function floorSender(env: ArmEnv, floor: FloorName, eager: boolean): Sender {
  const workflowType = FLOOR_TYPES[floor];
  let seq = 0;
  const nextId = (): string => `${floor}-${seq++}-${randomUUID().slice(0, 8)}`;
  const start = async (id: string): Promise<string> => {
    await env.client.workflow.start(workflowType, { taskQueue: env.taskQueue, workflowId: id });
    return id;
  };
  const probeDb = new pg.Pool({ connectionString: env.postgres.url, max: 10 });
  return {
    kind: 'floor',
    workflowType,
    send: () => start(nextId()),
    async burst(n) {
      const ids = Array.from({ length: n }, nextId);
      if (eager) {
        // The starter in the worker's process, on its NativeConnection, with requestEagerStart.
        const worker = env.worker()!.child;
        const reply = new Promise<{ latencies: number[]; eagerly: number }>((resolve, reject) => {
          const onMessage = (m: { type: string; latencies: number[]; eagerly: number; message?: string }): void => {
            if (m.type === 'started') resolve(m);
            else if (m.type === 'error') reject(new Error(m.message));
            else return;
            worker.off('message', onMessage);
          };
          worker.on('message', onMessage);
        });
        worker.send({ type: 'start', workflowType, ids, eager: true, concurrency: n });
        const { latencies, eagerly } = await reply;
        say(`  eager start: ${eagerly} of ${n} started eagerly`);
        return { ids, latencies };
      }
      const latencies: number[] = [];
      await Promise.all(
        ids.map(async (id) => {
          const t = performance.now();
          await start(id);
          latencies.push(performance.now() - t);
        }),
      );
      return { ids, latencies };
    },
    async probe() {
      const id = nextId();
      await probeDb.query('INSERT INTO bench_probe (id) VALUES ($1)', [randomUUID()]);
      return start(id);
    },
    answersRepeated: () => ({}),
    close: () => probeDb.end(),
  };
}

function serviceSender(env: ArmEnv, skus: string[]): Sender {
  let seq = 0;
  const retried = new Map<number, number>();
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (env.apiKey) headers.authorization = `Bearer ${env.apiKey}`;
  // A client that gets a 5xx (or 409: its own first attempt still in flight) repeats the request with the same
  // Idempotency-Key, up to 5 attempts; the latency counts from the first. Every such answer is counted.
  const post = async (only?: string): Promise<string> => {
    const sku = only ?? skus[seq++ % skus.length]!;
    const key = randomUUID();
    const body = JSON.stringify({
      customer: { email: 'bench@example.com', name: 'Bench' },
      lines: [{ sku, quantity: 1 }],
    });
    for (let attempt = 1; ; attempt++) {
      const res = await fetch(`${env.apiUrl}/orders`, {
        method: 'POST',
        headers: { ...headers, 'idempotency-key': key },
        body,
      });
      const json = (await res.json().catch(() => ({}))) as { id?: string };
      if (res.ok && json.id) return `order-${json.id}`;
      const repeatable = res.status >= 500 || res.status === 409 || res.status === 429;
      retried.set(res.status, (retried.get(res.status) ?? 0) + 1);
      if (!repeatable || attempt >= 5) {
        throw new Error(`POST /orders answered ${res.status} (attempt ${attempt}): ${JSON.stringify(json)}`);
      }
      await sleep(250 * attempt);
    }
  };
  return {
    kind: 'service',
    workflowType: ORDER_WORKFLOW_TYPE,
    send: () => post(),
    async burst(n, sku) {
      const latencies: number[] = [];
      const ids = await Promise.all(
        Array.from({ length: n }, async () => {
          const t = performance.now();
          const id = await post(sku);
          latencies.push(performance.now() - t);
          return id;
        }),
      );
      return { ids, latencies };
    },
    probe: () => post(),
    answersRepeated: () => Object.fromEntries(retried),
    close: async () => undefined,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Waiting for completions, reading close times

async function countClosed(env: ArmEnv, workflowType: string): Promise<number> {
  const res = await env.connection.workflowService.countWorkflowExecutions({
    namespace: 'default',
    query: `WorkflowType = "${workflowType}" AND ExecutionStatus != "Running"`,
  });
  return Number(res.count ?? 0);
}

/** Polls visibility every 250 ms until `expected` units of the type are closed. */
async function waitClosed(env: ArmEnv, workflowType: string, expected: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let lastChange = Date.now();
  for (;;) {
    const n = await countClosed(env, workflowType);
    if (n >= expected) return;
    if (n !== last) [last, lastChange] = [n, Date.now()];
    if (Date.now() > deadline) throw new Error(`${n} of ${expected} ${workflowType} closed after ${timeoutMs} ms`);
    if (Date.now() - lastChange > 120_000) throw new Error(`stuck at ${n} of ${expected} closed for 120 s`);
    await sleep(250);
  }
}

interface Closed {
  closeTime: number;
  status: string;
  historyLength: number;
}

/** Close time, status and history length of the type's executions closed since `since` (epoch ms). */
async function listClosed(env: ArmEnv, workflowType: string, since: number): Promise<Map<string, Closed>> {
  const out = new Map<string, Closed>();
  const query = `WorkflowType = "${workflowType}" AND CloseTime >= "${new Date(since - 1000).toISOString()}"`;
  for await (const wf of env.client.workflow.list({ query, pageSize: 1000 })) {
    out.set(wf.workflowId, {
      closeTime: wf.closeTime?.getTime() ?? NaN,
      status: wf.status.name,
      historyLength: wf.historyLength,
    });
  }
  return out;
}

async function finishPhase(
  env: ArmEnv,
  sender: Sender,
  ids: string[],
  firstSend: number,
  cpuBefore: Record<string, number>,
  expectedClosed: number,
  latencies: number[],
): Promise<Phase> {
  await waitClosed(env, sender.workflowType, expectedClosed, Math.max(300_000, ids.length * 2_000));
  const cpu = cpuDelta(cpuBefore, await sampleCpu(env.meters));
  const cores = Object.values(cpu).reduce((a, b) => a + b, 0) / (Date.now() - firstSend);
  // Visibility lags the close a little: read until every unit of the phase is listed.
  let closed = new Map<string, Closed>();
  for (let i = 0; i < 40; i++) {
    closed = await listClosed(env, sender.workflowType, firstSend);
    if (ids.every((id) => closed.has(id))) break;
    await sleep(250);
  }
  const mine = ids.map((id) => closed.get(id));
  const missing = mine.filter((c) => c === undefined).length;
  if (missing) throw new Error(`${missing} of ${ids.length} units not listed as closed`);
  const notCompleted = mine.filter((c) => c!.status !== 'COMPLETED').length;
  if (notCompleted) throw new Error(`${notCompleted} of ${ids.length} units closed other than COMPLETED`);
  const lastClose = Math.max(...mine.map((c) => c!.closeTime));
  return {
    units: ids.length,
    firstSend,
    lastClose,
    rate: ids.length / ((lastClose - firstSend) / 1000),
    cpu,
    cores,
    latencies,
    closeOffsets: mine.map((c) => (c!.closeTime - firstSend) / 1000),
    events: mine.map((c) => c!.historyLength),
  };
}

/**
 * Schedule-to-start of the workflow tasks of up to `sample` units (their histories, read after the CPU window):
 * how long a new workflow's first task waits for a worker, against the later tasks of running workflows.
 */
async function workflowTaskWaits(
  env: ArmEnv,
  ids: string[],
  sample = 40,
): Promise<{ first: number[]; later: number[] }> {
  const WFT_SCHEDULED = 5;
  const WFT_STARTED = 6;
  const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined): number =>
    t ? Number(String(t.seconds ?? 0)) * 1000 + (t.nanos ?? 0) / 1e6 : NaN;
  const first: number[] = [];
  const later: number[] = [];
  const step = Math.max(1, Math.floor(ids.length / sample));
  const picked = ids.filter((_, i) => i % step === 0).slice(0, sample);
  await pool(
    picked.map((id) => async () => {
      const history = await env.client.workflow.getHandle(id).fetchHistory();
      let scheduled = NaN;
      let n = 0;
      for (const e of history.events ?? []) {
        if (e.eventType === WFT_SCHEDULED) scheduled = ms(e.eventTime);
        else if (e.eventType === WFT_STARTED) (n++ === 0 ? first : later).push(ms(e.eventTime) - scheduled);
      }
    }),
    8,
  );
  return { first, later };
}

// ---------------------------------------------------------------------------------------------------------
// One arm

let serviceRate: number | undefined;

async function runArm(arm: ArmName, cycle: number, position: number): Promise<ArmResult> {
  const kind = kindOf(arm);
  const dir = path.join(OUT, `${position}-${arm}`);
  const loadBefore = loadAverage()[0];
  say(`arm ${position} ${arm} (cycle ${cycle}): starting a fresh environment (load ${loadBefore.toFixed(2)})`);
  const env = await startEnv({
    kind,
    dir,
    pgUrl: args['pg-url'],
    workerOptions:
      arm === 'V'
        ? (args['variant-worker-options'] ?? args['worker-options'])
        : kind === 'service'
          ? args['worker-options']
          : args['floor-worker-options'],
    serviceRoot: arm === 'V' ? args['variant-root'] : undefined,
    serviceWorkerEntry: args['service-worker-entry'],
    profileDir: args.profile ? path.join(dir, 'profiles') : undefined,
    log: (line) => say(`  ${line}`),
  });
  let sender: Sender | undefined;
  let total = 0;
  try {
    let skus: string[] = [];
    // Enough stock on every SKU for every phase, and on the flash SKU for the whole flash sale on top.
    if (kind === 'service') skus = await raiseStock(env.postgres.url, WARMUP + BURST + FLASH + 1000 + BACKLOG);
    const flashSku = kind === 'service' ? skus[0] : undefined;
    sender = kind === 'service' ? serviceSender(env, skus) : floorSender(env, arm as FloorName, arm === 'FE');
    const s = sender;

    // 1. warm-up
    const warm = await s.burst(WARMUP);
    total += warm.ids.length;
    await waitClosed(env, s.workflowType, total, 300_000);
    say(`  warm-up: ${WARMUP} units done`);

    // 2. burst
    await sleep(1000);
    let before = await sampleCpu(env.meters);
    env.toggleProfiles();
    let firstSend = Date.now();
    const b = await s.burst(BURST);
    total += b.ids.length;
    const burst = await finishPhase(env, s, b.ids, firstSend, before, total, b.latencies);
    env.toggleProfiles();
    burst.wftWait = await workflowTaskWaits(env, b.ids);
    if (arm === 'S') serviceRate = burst.rate;
    say(
      `  burst: ${BURST} units, ${fmt(burst.rate, 2)}/s, CPU ${fmt(unitCost(kind, burst.cpu) / BURST, 0)} ms/unit, ` +
        `send p50 ${fmt(percentile(b.latencies, 50), 0)} ms, workflow task wait: first ` +
        `${fmt(mean(burst.wftWait.first), 0)} ms, later ${fmt(mean(burst.wftWait.later), 0)} ms (mean)`,
    );

    // 2b. flash sale: the same burst with every order for one SKU (every reservation meets the same product row);
    // the floor has no rows, its flash burst is a second burst (the reference of the S/F ratios).
    let flash: Phase | undefined;
    if (FLASH > 0) {
      await sleep(1000);
      before = await sampleCpu(env.meters);
      firstSend = Date.now();
      const f = await s.burst(FLASH, flashSku);
      total += f.ids.length;
      flash = await finishPhase(env, s, f.ids, firstSend, before, total, f.latencies);
      say(
        `  flash sale: ${FLASH} units${flashSku ? `, every order for ${flashSku}` : ' (floor: a second burst)'}, ` +
          `${fmt(flash.rate, 2)}/s (spread ${fmt(burst.rate, 2)}/s), CPU ${fmt(unitCost(kind, flash.cpu, 'flash') / FLASH, 0)} ` +
          `ms/unit (spread ${fmt(unitCost(kind, burst.cpu) / BURST, 0)}), send p50 ${fmt(percentile(f.latencies, 50), 0)} ms`,
      );
    }

    // 3. open loop at half the service's max rate
    let open: ArmResult['open'];
    const targetRate = OPEN_RATE ?? (serviceRate !== undefined ? serviceRate / 2 : undefined);
    if (OPEN_SECONDS > 0 && targetRate !== undefined && targetRate > 0) {
      await sleep(1000);
      const n = Math.max(1, Math.round(targetRate * OPEN_SECONDS));
      const interval = 1000 / targetRate;
      before = await sampleCpu(env.meters);
      firstSend = Date.now();
      const t0 = performance.now();
      const sends: Array<Promise<{ id: string; latency: number }>> = [];
      for (let i = 0; i < n; i++) {
        const intended = t0 + i * interval;
        const wait = intended - performance.now();
        if (wait > 0) await sleep(wait);
        sends.push(s.probe().then((id) => ({ id, latency: performance.now() - intended })));
      }
      const sent = await Promise.all(sends);
      total += sent.length;
      const phase = await finishPhase(
        env,
        s,
        sent.map((x) => x.id),
        firstSend,
        before,
        total,
        sent.map((x) => x.latency),
      );
      open = { ...phase, targetRate };
      say(
        `  open loop: ${n} at ${fmt(targetRate, 2)}/s, ${kind === 'floor' ? 'raw probe' : 'POST'} ` +
          `p50 ${fmt(percentile(phase.latencies, 50), 1)} ms, p99 ${fmt(percentile(phase.latencies, 99), 1)} ms`,
      );
    } else {
      say('  open loop: skipped (no service rate yet; --open-rate sets one)');
    }

    // 4. backlog: worker stopped while the units are sent, then started
    let backlog: ArmResult['backlog'];
    if (BACKLOG > 0 && (!BACKLOG_ARMS || BACKLOG_ARMS.includes(arm))) {
      await env.stopWorker();
      const sendStart = Date.now();
      const ids = await pool(
        Array.from({ length: BACKLOG }, () => () => s.send()),
        BACKLOG_CONCURRENCY,
      );
      total += ids.length;
      const sendSeconds = (Date.now() - sendStart) / 1000;
      say(`  backlog: ${BACKLOG} units sent in ${fmt(sendSeconds, 1)} s with the worker stopped; starting it`);
      before = await sampleCpu(env.meters);
      const worker = env.startWorker();
      const spawned = worker.spawnedAt;
      const phase = await finishPhase(env, s, ids, spawned, before, total, []);
      backlog = { ...phase, sendSeconds, drainSeconds: (phase.lastClose - spawned) / 1000 };
      say(
        `  backlog: drained in ${fmt(backlog.drainSeconds, 1)} s (${fmt(phase.rate, 2)}/s), ` +
          `CPU ${fmt(unitCost(kind, phase.cpu) / BACKLOG, 0)} ms/unit`,
      );
    }

    // 5. checks
    const checks = await check(env, s, total, flashSku);
    const checksOk = checks.every((c) => !c.startsWith('FAIL'));
    for (const c of checks) say(`  check: ${c}`);
    return {
      arm,
      cycle,
      position,
      burst,
      flash,
      flashSku,
      open,
      backlog,
      checks,
      checksOk,
      load: { before: loadBefore, after: loadAverage()[0] },
    };
  } finally {
    await sender?.close().catch(() => undefined);
    await env.stop();
    if (!args.keep) {
      await rm(path.join(dir, 'postgres'), { recursive: true, force: true });
      await rm(path.join(dir, 'temporal'), { recursive: true, force: true });
    }
  }
}

/**
 * Every product's stock against its movements: on-hand and reserved equal the sums of the product's movements'
 * deltas, nothing is left reserved once every order completed (the flash sale's one row above all).
 */
async function checkStock(env: ArmEnv, flashSku: string | undefined): Promise<string> {
  const db = new pg.Client({ connectionString: env.postgres.url });
  await db.connect();
  try {
    const { rows } = await db.query<{
      sku: string;
      on_hand: number;
      reserved: number;
      moved: string;
      held: string;
      n: string;
    }>(
      `SELECT p.sku, p.on_hand, p.reserved, COALESCE(SUM(m.on_hand_delta), 0) AS moved,
              COALESCE(SUM(m.reserved_delta), 0) AS held, COUNT(m.id) AS n
       FROM products p LEFT JOIN inventory_movements m ON m.sku = p.sku GROUP BY p.sku, p.on_hand, p.reserved`,
    );
    const off = rows.filter((r) => Number(r.moved) !== r.on_hand || Number(r.held) !== r.reserved || r.reserved !== 0);
    const flash = rows.find((r) => r.sku === flashSku);
    return (
      `${off.length === 0 ? 'ok' : 'FAIL'}: stock of ${rows.length} products = the sums of their movements, none left ` +
      `reserved${off.length ? ` (off: ${off.map((r) => `${r.sku} on hand ${r.on_hand}/${r.moved}, reserved ${r.reserved}/${r.held}`).join('; ')})` : ''}` +
      (flash ? `; flash SKU ${flash.sku}: ${flash.n} movements, on hand ${flash.on_hand}` : '')
    );
  } finally {
    await db.end();
  }
}

/** Every unit completed once; for the service, the orders, every provider's ledger and the stock too. */
async function check(env: ArmEnv, s: Sender, total: number, flashSku?: string): Promise<string[]> {
  const out: string[] = [];
  const count = async (query: string): Promise<number> =>
    Number((await env.connection.workflowService.countWorkflowExecutions({ namespace: 'default', query })).count ?? 0);
  const repeated = s.answersRepeated();
  if (Object.keys(repeated).length) {
    out.push(`WARN: POSTs repeated after an error answer (status: count) ${JSON.stringify(repeated)}`);
  }
  const runs = await count(`WorkflowType = "${s.workflowType}"`);
  const done = await count(`WorkflowType = "${s.workflowType}" AND ExecutionStatus = "Completed"`);
  out.push(
    `${runs === total && done === total ? 'ok' : 'FAIL'}: workflow runs ${runs}, completed ${done}, sent ${total}`,
  );
  if (s.kind !== 'service') return out;

  const db = new pg.Client({ connectionString: env.postgres.url });
  await db.connect();
  const orderIds = new Set<string>();
  try {
    const { rows } = await db.query<{ id: string; status: string }>('SELECT id, status FROM orders');
    for (const r of rows) orderIds.add(r.id);
    const byStatus: Record<string, number> = {};
    for (const r of rows) byStatus[r.status] = (byStatus[r.status] ?? 0) + 1;
    const ok = rows.length === total && byStatus.completed === total;
    out.push(
      `${ok ? 'ok' : 'FAIL'}: orders ${rows.length} (one per POST: ${total}), by status ${JSON.stringify(byStatus)}`,
    );
  } finally {
    await db.end();
  }
  // Every provider's ledger on the simulator process: exactly one effect per key, a key for every order.
  for (const ledger of await readLedgers(env.simulatorUrl!, PROVIDER_LIST)) {
    const c = checkLedger(ledger, orderIds);
    out.push(`${c.ok ? 'ok' : 'FAIL'}: ${describeLedgerCheck(c, orderIds.size)}`);
  }
  out.push(await checkStock(env, flashSku));
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// Report

const PROCS = ['server', 'worker', 'api', 'postgres', 'client', 'sims'] as const;

function perUnit(p: Phase | undefined, kind: ArmKind, phase: PhaseName = 'burst'): Record<string, number> {
  const o: Record<string, number> = {};
  if (!p) return o;
  for (const k of PROCS) o[k] = (p.cpu[k] ?? NaN) / p.units;
  o.total = unitCost(kind, p.cpu, phase) / p.units;
  return o;
}

function table(headers: string[], rows: string[][]): string {
  const w = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(w[i]!)).join(' | ')} |`;
  return [line(headers), `| ${w.map((n) => '-'.repeat(n)).join(' | ')} |`, ...rows.map(line)].join('\n');
}

/**
 * The recorded history of a completed order, of the newest version folder (test/replay/histories/v<version>/): its
 * event count is the design's.
 */
const DESIGN_HISTORY = 'order-fulfilment-completed.json';

function cpuCell(pu: Record<string, number>, kind: ArmKind): string {
  const parts = kind === 'floor' ? ['server', 'worker', 'client'] : ['server', 'worker', 'api', 'postgres'];
  return `${fmt(pu.total, 0)} (${parts.map((p) => fmt(pu[p], 0)).join(' / ')})`;
}

function report(results: ArmResult[], meta: Record<string, string>): string {
  const lines: string[] = [];
  const designEvents = (() => {
    try {
      const dir = path.join(ROOT, 'test', 'replay', 'histories');
      const newest = readdirSync(dir, { recursive: true })
        .map(String)
        .filter((f) => path.basename(f) === DESIGN_HISTORY)
        .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }))
        .at(-1);
      if (!newest) return NaN;
      const h = JSON.parse(readFileSync(path.join(dir, newest), 'utf8')) as { events: unknown[] };
      return h.events.length;
    } catch {
      return NaN;
    }
  })();
  const expectedEvents: Record<ArmName, number> = { F0: 29, F5: 35, FE: 35, S: designEvents, V: NaN };

  lines.push(
    Object.entries(meta)
      .map(([k, v]) => `${k}: ${v}`)
      .join('\n'),
    '',
  );
  lines.push(
    'Per arm (burst phase unless named). CPU ms per unit: floor total (dev server / worker / starter), service total',
    '(dev server / worker / api / postgres); pg, client (the bench process) and sims (provider simulators) apart.',
    '',
  );
  lines.push(
    table(
      [
        '#',
        'arm',
        'completions/s',
        'CPU ms/unit',
        'flash /s, CPU ms/unit',
        'pg',
        'client',
        'sims',
        'events',
        'cores busy',
        'send p50/p99 ms',
        'open loop R/s: p50/p99 ms',
        'backlog drain s (/s)',
        'checks',
        'load',
      ],
      results.map((r) => {
        const kind = kindOf(r.arm);
        const pu = perUnit(r.burst, kind);
        const ev = modeAndRange(r.burst.events);
        return [
          String(r.position),
          r.arm,
          fmt(r.burst.rate, 2),
          cpuCell(pu, kind),
          r.flash ? `${fmt(r.flash.rate, 2)}, ${fmt(perUnit(r.flash, kind, 'flash').total!, 0)}` : '–',
          fmt(pu.postgres, 1),
          fmt(pu.client, 1),
          fmt(pu.sims, 1),
          ev.min === ev.max ? String(ev.mode) : `${ev.mode} (${ev.min}-${ev.max})`,
          fmt(r.burst.cores, 2),
          `${fmt(percentile(r.burst.latencies, 50), 0)}/${fmt(percentile(r.burst.latencies, 99), 0)}`,
          r.open
            ? `${fmt(r.open.targetRate, 2)}: ${fmt(percentile(r.open.latencies, 50), 1)}/${fmt(percentile(r.open.latencies, 99), 1)}`
            : '–',
          r.backlog ? `${fmt(r.backlog.drainSeconds, 1)} (${fmt(r.backlog.rate, 2)})` : '–',
          r.checksOk ? (r.checks.some((c) => c.startsWith('WARN')) ? 'ok*' : 'ok') : 'FAIL',
          `${fmt(r.load.before, 2)}→${fmt(r.load.after, 2)}`,
        ];
      }),
    ),
  );

  // Means per arm kind
  const kinds = ARM_NAMES.filter((a) => results.some((r) => r.arm === a));
  const agg = (a: ArmName) => {
    const rs = results.filter((r) => r.arm === a);
    const kind = kindOf(a);
    const pus = rs.map((r) => perUnit(r.burst, kind));
    const m = (k: string): number => meanFinite(pus.map((p) => p[k]!));
    const opens = rs.flatMap((r) => (r.open ? [r.open] : []));
    const flashes = rs.flatMap((r) => (r.flash ? [r.flash] : []));
    const backlogs = rs.flatMap((r) => (r.backlog ? [r.backlog] : []));
    return {
      rate: meanFinite(rs.map((r) => r.burst.rate)),
      cpu: m('total'),
      flashRate: meanFinite(flashes.map((f) => f.rate)),
      flashCpu: meanFinite(flashes.map((f) => unitCost(kind, f.cpu, 'flash') / f.units)),
      server: m('server'),
      worker: m('worker'),
      api: m('api'),
      postgres: m('postgres'),
      client: m('client'),
      events: modeAndRange(rs.flatMap((r) => r.burst.events)),
      cores: meanFinite(rs.map((r) => r.burst.cores)),
      wftFirst: meanFinite(rs.map((r) => mean(r.burst.wftWait?.first ?? []))),
      wftLater: meanFinite(rs.map((r) => mean(r.burst.wftWait?.later ?? []))),
      burstP50: meanFinite(rs.map((r) => percentile(r.burst.latencies, 50))),
      burstP99: meanFinite(rs.map((r) => percentile(r.burst.latencies, 99))),
      openRate: meanFinite(opens.map((o) => o.targetRate)),
      openP50: meanFinite(opens.map((o) => percentile(o.latencies, 50))),
      openP99: meanFinite(opens.map((o) => percentile(o.latencies, 99))),
      openCpu: meanFinite(opens.map((o) => unitCost(kind, o.cpu, 'open') / o.units)),
      drain: meanFinite(backlogs.map((b) => b.drainSeconds)),
      drainCpu: meanFinite(backlogs.map((b) => unitCost(kind, b.cpu, 'backlog') / b.units)),
      n: rs.length,
    };
  };
  const A = Object.fromEntries(kinds.map((k) => [k, agg(k)])) as Record<ArmName, ReturnType<typeof agg>>;
  // Ratio columns: each service arm over each floor arm, and the variant over the service.
  const pairs: Array<[ArmName, ArmName]> = [];
  for (const x of kinds.filter((k) => kindOf(k) === 'service')) {
    for (const f of kinds.filter((k) => kindOf(k) === 'floor')) pairs.push([x, f]);
  }
  if (A.V && A.S) pairs.push(['V', 'S']);
  const rows: string[][] = [];
  const add = (
    label: string,
    get: (x: ReturnType<typeof agg>) => number,
    digits: number,
    target = '',
    noRatio = false,
  ) => {
    rows.push([
      label,
      ...kinds.map((k) => fmt(get(A[k]), digits)),
      ...pairs.map(([a, b]) => (noRatio ? '' : fmt(get(A[a]) / get(A[b]), 2))),
      target,
    ]);
  };
  add('completions/s (burst)', (x) => x.rate, 2, 'S/F0 ≥ 0.8');
  add('CPU ms per unit (burst)', (x) => x.cpu, 0, 'S/F0 ≤ 1.5');
  if (FLASH > 0) {
    add('completions/s (flash sale: one SKU)', (x) => x.flashRate, 2);
    add('CPU ms per unit (flash sale)', (x) => x.flashCpu, 0);
  }
  add('  dev server', (x) => x.server, 0);
  add('  worker', (x) => x.worker, 0);
  add('  api (floor: its starter, the client)', (x) => (Number.isFinite(x.api) ? x.api : x.client), 0);
  add('  postgres', (x) => x.postgres, 1, '', true);
  rows.push([
    'history events per unit (design)',
    ...kinds.map(
      (k) =>
        `${A[k].events.mode} (${expectedEvents[k]})${A[k].events.min !== A[k].events.max ? ` ${A[k].events.min}-${A[k].events.max}` : ''}`,
    ),
    ...pairs.map(() => ''),
    'S = design',
  ]);
  add(`burst: cores busy (all processes, of ${os.cpus().length})`, (x) => x.cores, 2, '', true);
  add('burst: first workflow task wait ms (mean)', (x) => x.wftFirst, 0, '', true);
  add('burst: later workflow task wait ms (mean)', (x) => x.wftLater, 0, '', true);
  add('burst POST/start p50 ms', (x) => x.burstP50, 0, '', true);
  add('burst POST/start p99 ms', (x) => x.burstP99, 0, '', true);
  add('open loop rate /s', (x) => x.openRate, 2, '½ S max', true);
  add('open loop POST / raw probe p50 ms', (x) => x.openP50, 1, 'S/F0 ≤ 1.5');
  add('open loop POST / raw probe p99 ms', (x) => x.openP99, 1, 'S ≤ 25 ms');
  add('open loop CPU ms per unit', (x) => x.openCpu, 0);
  add(`backlog drain s (${BACKLOG} units)`, (x) => x.drain, 1, 'S/F0 ≤ 1.25');
  add('backlog CPU ms per unit', (x) => x.drainCpu, 0);
  lines.push('', `Mean per kind (${kinds.map((k) => `${k}: ${A[k].n} arm(s)`).join(', ')})`, '');
  lines.push(table(['figure', ...kinds, ...pairs.map(([a, b]) => `${a}/${b}`), 'target'], rows));

  // The flash sale beside the spread burst: each kind's two bursts, the service's flash/spread, and the S/F ratios of
  // each (the floor's flash burst is its second burst: it has no product rows).
  if (FLASH > 0) {
    const flashSkus = [...new Set(results.flatMap((r) => (r.flashSku ? [r.flashSku] : [])))];
    const services = kinds.filter((k) => kindOf(k) === 'service');
    const floorPairs = pairs.filter(([, b]) => kindOf(b) === 'floor');
    const row = (
      label: string,
      spread: (x: ReturnType<typeof agg>) => number,
      flash: typeof spread,
      digits: number,
    ) => [
      label,
      ...kinds.flatMap((k) => [fmt(spread(A[k]), digits), fmt(flash(A[k]), digits)]),
      ...services.map((k) => fmt(flash(A[k]) / spread(A[k]), 2)),
      ...floorPairs.flatMap(([a, b]) => [fmt(spread(A[a]) / spread(A[b]), 2), fmt(flash(A[a]) / flash(A[b]), 2)]),
    ];
    lines.push(
      '',
      `Flash sale beside the spread burst: ${FLASH} units at once, every order for one SKU` +
        `${flashSkus.length ? ` (${flashSkus.join(', ')})` : ''} so every reservation meets the same product row, against ` +
        `${BURST} spread over every SKU. A floor has no rows: its flash burst is a second burst.`,
      '',
      table(
        [
          'figure',
          ...kinds.flatMap((k) => [`${k} spread`, `${k} flash`]),
          ...services.map((k) => `${k} flash/spread`),
          ...floorPairs.flatMap(([a, b]) => [`${a}/${b} spread`, `${a}/${b} flash`]),
        ],
        [
          row(
            'completions/s',
            (x) => x.rate,
            (x) => x.flashRate,
            2,
          ),
          row(
            'CPU ms per unit',
            (x) => x.cpu,
            (x) => x.flashCpu,
            0,
          ),
        ],
      ),
    );
  }
  const failed = results.filter((r) => !r.checksOk);
  for (const r of results) {
    for (const c of r.checks.filter((x) => x.startsWith('WARN'))) lines.push(`arm ${r.position} ${r.arm}: ${c}`);
  }
  lines.push(
    '',
    failed.length
      ? `CHECKS FAILED in arm(s) ${failed.map((r) => `${r.position}-${r.arm}`).join(', ')}: ${failed.flatMap((r) => r.checks.filter((c) => c.startsWith('FAIL'))).join('; ')}`
      : `checks: every unit completed once in every arm${results.some((r) => r.arm === 'S') ? '; every order completed, one order per POST, exactly 1 effect per key in every provider ledger and a key for every order, stock = the sums of its movements' : ''}`,
  );
  return lines.join('\n');
}

function csv(results: ArmResult[]): string {
  const head = [
    'position',
    'cycle',
    'arm',
    'phase',
    'units',
    'seconds',
    'rate_per_s',
    ...PROCS.map((p) => `cpu_${p}_ms_per_unit`),
    'cpu_total_ms_per_unit',
    'events_mode',
    'latency_p50_ms',
    'latency_p90_ms',
    'latency_p99_ms',
    'latency_max_ms',
    'target_rate_per_s',
    'cores_busy',
    'wft_wait_first_ms',
    'wft_wait_later_ms',
    'load_before',
    'load_after',
    'checks_ok',
  ];
  const rows = [head.join(',')];
  for (const r of results) {
    const kind = kindOf(r.arm);
    for (const [phase, p] of [
      ['burst', r.burst],
      ['flash', r.flash],
      ['open', r.open],
      ['backlog', r.backlog],
    ] as const) {
      if (!p) continue;
      const pu = perUnit(p, kind, phase);
      const lat = p.latencies;
      const c = (v: number): string => (Number.isFinite(v) ? v.toFixed(2) : '');
      rows.push(
        [
          r.position,
          r.cycle,
          r.arm,
          phase,
          p.units,
          phase === 'backlog' ? r.backlog!.drainSeconds.toFixed(3) : ((p.lastClose - p.firstSend) / 1000).toFixed(3),
          p.rate.toFixed(3),
          ...PROCS.map((k) => c(pu[k]!)),
          c(pu.total!),
          modeAndRange(p.events).mode,
          c(percentile(lat, 50)),
          c(percentile(lat, 90)),
          c(percentile(lat, 99)),
          c(percentile(lat, 100)),
          phase === 'open' ? r.open!.targetRate.toFixed(3) : '',
          c(p.cores),
          c(mean(p.wftWait?.first ?? [])),
          c(mean(p.wftWait?.later ?? [])),
          r.load.before.toFixed(2),
          r.load.after.toFixed(2),
          r.checksOk,
        ].join(','),
      );
    }
  }
  return `${rows.join('\n')}\n`;
}

// ---------------------------------------------------------------------------------------------------------
// Main

async function waitQuiet(): Promise<void> {
  say('waiting for a quiet machine: 1-minute load average < 1.0 for 60 s');
  let quietSince: number | undefined;
  for (;;) {
    const l = loadAverage()[0];
    if (l < 1.0) {
      quietSince ??= Date.now();
      if (Date.now() - quietSince >= 60_000) return;
    } else {
      quietSince = undefined;
    }
    await sleep(5_000);
  }
}

function git(...a: string[]): string {
  try {
    return execFileSync('git', a, { cwd: ROOT, encoding: 'utf8' }).trim();
  } catch {
    return '?';
  }
}

async function main(): Promise<void> {
  await mkdir(OUT, { recursive: true });
  if (!args['no-build']) {
    say('npm run build');
    const b = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    if (b.status !== 0) throw new Error('npm run build failed');
  }
  if (args['wait-quiet']) await waitQuiet();

  const order: Array<{ arm: ArmName; cycle: number }> = [];
  for (let c = 1; c <= CYCLES; c++) {
    const cycle = args.arms
      ? (args.arms.split(',').map((a) => a.trim()) as ArmName[])
      : ([...FLOORS, 'S', 'S', ...[...FLOORS].reverse()] as ArmName[]);
    for (const arm of cycle) {
      if (!ARM_NAMES.includes(arm)) throw new Error(`unknown arm ${arm} (${ARM_NAMES.join(', ')})`);
      order.push({ arm, cycle: c });
    }
  }
  const planned = args.only ? order.filter((a) => a.arm === args.only) : order;
  const arms = planned.map((a) => a.arm);
  const cpus = os.cpus();
  const meta: Record<string, string> = {
    run: `${stamp}${args.label ? ` (${args.label})` : ''}${quick ? ' --quick' : ''}`,
    machine: `${cpus.length} × ${cpus[0]?.model ?? '?'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GB, ${os.type()} ${os.release()}, Node ${process.version}`,
    commit: `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? ' (with local changes)' : ''} on ${git('rev-parse', '--abbrev-ref', 'HEAD')}`,
    'load average at start': loadAverage()
      .map((l) => l.toFixed(2))
      .join(' '),
    arms: `${arms.join(' ')} (${CYCLES} cycle(s), each arm a fresh dev server + PostgreSQL)`,
    phases: `warm-up ${WARMUP} (discarded), burst ${BURST}, flash sale ${FLASH || 'skipped'}, open loop ${OPEN_SECONDS} s at ${OPEN_RATE ?? '½ the service burst rate'}, backlog ${BACKLOG} (sent with ${BACKLOG_CONCURRENCY} in flight${BACKLOG_ARMS ? `; arms ${BACKLOG_ARMS.join(', ')} only` : ''})`,
    ...(args['worker-options'] ? { 'service worker options': args['worker-options'] } : {}),
    ...(args['floor-worker-options'] ? { 'floor worker options': args['floor-worker-options'] } : {}),
    ...(args['service-worker-entry'] ? { 'service worker entry': args['service-worker-entry'] } : {}),
    ...(planned.some((a) => a.arm === 'V')
      ? {
          'variant V': [
            args['variant-label'],
            args['variant-root'] &&
              `service from ${args['variant-root']} (${git('-C', args['variant-root'], 'log', '-1', '--format=%h %s')})`,
            args['variant-worker-options'] && `worker options ${args['variant-worker-options']}`,
          ]
            .filter(Boolean)
            .join('; '),
        }
      : {}),
  };
  say(`bench → ${path.relative(process.cwd(), OUT) || OUT}; arms ${arms.join(' ')}`);

  const results: ArmResult[] = [];
  for (const [i, { arm, cycle }] of planned.entries()) results.push(await runArm(arm, cycle, i + 1));
  meta['load average at end'] = loadAverage()
    .map((l) => l.toFixed(2))
    .join(' ');
  meta.duration = `${((Date.now() - benchStarted) / 60_000).toFixed(1)} min`;

  const text = report(results, meta);
  console.log(`\n${text}\n`);
  const colours: Record<ArmName, string[]> = {
    F0: ['#1f77b4', '#6baed6'],
    F5: ['#2ca02c', '#74c476'],
    FE: ['#17becf', '#9edae5'],
    S: ['#d62728', '#fc9272'],
    V: ['#9467bd', '#c5b0d5'],
  };
  const seen: Record<string, number> = {};
  const svg = renderPlot({
    title: `Burst of ${BURST}: service vs floor (${meta.run}, ${git('rev-parse', '--short', 'HEAD')})`,
    series: results.map((r) => ({
      label: `${r.position} ${r.arm}: ${fmt(r.burst.rate, 2)}/s`,
      colour: colours[r.arm][(seen[r.arm] = (seen[r.arm] ?? -1) + 1) % 2]!,
      closeOffsets: r.burst.closeOffsets,
    })),
    bars: ARM_NAMES.filter((a) => results.some((r) => r.arm === a)).map((a) => {
      const rs = results.filter((r) => r.arm === a);
      const kind = kindOf(a);
      const parts = (kind === 'floor' ? ['server', 'worker', 'client'] : ['server', 'worker', 'api', 'postgres']).map(
        (p) => [p, meanFinite(rs.map((r) => perUnit(r.burst, kind)[p]!))] as [string, number],
      );
      return { label: a, parts };
    }),
  });
  await writeFile(path.join(OUT, 'report.txt'), `${text}\n`);
  await writeFile(path.join(OUT, 'results.csv'), csv(results));
  await writeFile(
    path.join(OUT, 'units.csv'),
    `position,arm,phase,close_offset_s,events\n${results
      .flatMap((r) =>
        (
          [
            ['burst', r.burst],
            ['flash', r.flash],
            ['open', r.open],
            ['backlog', r.backlog],
          ] as const
        ).flatMap(([ph, p]) =>
          p ? p.closeOffsets.map((t, k) => `${r.position},${r.arm},${ph},${t.toFixed(3)},${p.events[k]}`) : [],
        ),
      )
      .join('\n')}\n`,
  );
  await writeFile(path.join(OUT, 'plot.svg'), svg);
  say(
    `wrote ${['report.txt', 'results.csv', 'units.csv', 'plot.svg'].map((f) => path.join(path.relative(process.cwd(), OUT), f)).join(', ')}`,
  );
  if (results.some((r) => !r.checksOk)) process.exit(1);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
