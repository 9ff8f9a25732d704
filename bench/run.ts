/**
 * `npm run bench`: the service against the Temporal floor, side by side, in arms interleaved ABBA per cycle
 * (`F0 F5 S S F5 F0`), each in a fresh environment (bench/lib/env.ts). F0 / F5: bare workflows of 4 / 5 no-op
 * activities started by a raw client; S: the service as `npm start` runs it, orders over HTTP; V: a variant of the
 * service (another checkout's build, or other worker options). Phases of each arm: warm-up (discarded); burst (N at
 * once: completions/s, CPU ms per unit per process, send latency, history events); flash sale (the burst with every
 * order for one SKU); open loop at half the service's burst rate (latency from each request's intended send time);
 * backlog (sent with the worker stopped, then drained); checks (every unit completed once; the service's orders,
 * ledgers and stock). Prints the tables (with the S/F0 and S/F5 ratios) and writes report.txt, results.csv and
 * units.csv into the run folder. See bench/README.md.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { execa } from 'execa';
import * as hdr from 'hdr-histogram-js';
import pg from 'pg';
import { PROVIDER_LIST } from '../providers/index.js';
import { checkLedger, describeLedgerCheck, readLedgers } from '../scripts/lib/ledgers.js';
import { ORDER_WORKFLOW_TYPE } from '../workflows/order-fulfilment.contract.js';
import { raiseStock, ROOT, startEnv, type ArmEnv, type ArmKind } from './lib/env.js';

const USAGE = `npm run bench -- [--quick] [--cycles 1] [--floors F0,F5] [--arms F0,S,S,F0] [--only <arm>]
  [--warmup 20] [--burst 200] [--flash <burst>] [--open-seconds 30] [--open-rate auto|<n>] [--backlog 5000]
  [--backlog-concurrency 16] [--backlog-arms F0,S] [--worker-options <json>] [--floor-worker-options <json>]
  [--variant-root <checkout>] [--variant-worker-options <json>] [--variant-label <text>] [--pg-url <url>]
  [--wait-quiet] [--no-build] [--keep] [--profile] [--out <dir>] [--label <text>]`;
const args = parseArgs({
  options: {
    ...Object.fromEntries(
      ['cycles', 'floors', 'warmup', 'burst', 'flash', 'open-seconds', 'backlog', 'backlog-arms', 'worker-options']
        .concat(['floor-worker-options', 'arms', 'variant-root', 'variant-worker-options', 'variant-label', 'only'])
        .concat(['pg-url', 'out', 'label'])
        .map((name) => [name, { type: 'string' as const }]),
    ),
    'open-rate': { type: 'string', default: 'auto' },
    'backlog-concurrency': { type: 'string', default: '16' },
    ...Object.fromEntries(
      ['quick', 'wait-quiet', 'no-build', 'keep', 'profile', 'help'].map((n) => [n, { type: 'boolean' as const }]),
    ),
  },
  strict: true,
}).values as Record<string, string | boolean | undefined>;
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
const opt = (name: string): string | undefined => args[name] as string | undefined;
const quick = args.quick === true;
const num = (name: string, full: number, small: number): number => Number(opt(name) ?? (quick ? small : full));
const CYCLES = num('cycles', 1, 1);
const FLOORS = (opt('floors') ?? (quick ? 'F5' : 'F0,F5')).split(',') as Floor[];
const WARMUP = num('warmup', 20, 5);
const BURST = num('burst', 200, 20);
const FLASH = Number(opt('flash') ?? BURST);
const OPEN_SECONDS = num('open-seconds', 30, 4);
const BACKLOG = num('backlog', 5000, 30);
const BACKLOG_ARMS = opt('backlog-arms')?.split(',');
const OPEN_RATE = args['open-rate'] === 'auto' ? undefined : Number(args['open-rate']);

type Floor = 'F0' | 'F5';
type Arm = Floor | 'S' | 'V';
const ARMS: readonly Arm[] = ['F0', 'F5', 'S', 'V'];
const FLOOR_TYPES: Record<Floor, string> = { F0: 'floor4', F5: 'floor5' };
const kindOf = (arm: Arm): ArmKind => (arm === 'S' || arm === 'V' ? 'service' : 'floor');
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const OUT = path.resolve(opt('out') ?? path.join(ROOT, '.data', 'bench', stamp));
const t0 = Date.now();
const say = (line: string): void => console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(7)} s] ${line}`);
const load = (): number => os.loadavg()[0]!;

// ---- statistics: percentiles from an HDR histogram (µs resolution, 3 significant digits)

function pct(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const h = hdr.build({ numberOfSignificantValueDigits: 3 });
  for (const v of values) h.recordValue(Math.max(0, Math.round(v * 1000)));
  const value = h.getValueAtPercentile(p) / 1000;
  h.destroy();
  return value;
}
const mean = (values: readonly number[]): number => {
  const v = values.filter(Number.isFinite);
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN;
};
const fmt = (v: number | undefined, digits = 1): string =>
  v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(digits);
const mode = (values: readonly number[]): number =>
  [...values.reduce((m, v) => m.set(v, (m.get(v) ?? 0) + 1), new Map<number, number>())].sort(
    (a, b) => b[1] - a[1],
  )[0]?.[0] ?? NaN;
async function pool<T>(tasks: ReadonlyArray<() => Promise<T>>, limit: number): Promise<T[]> {
  const results: T[] = [];
  let next = 0;
  const lane = async (): Promise<void> => {
    for (let i = next++; i < tasks.length; i = next++) results[i] = await tasks[i]!();
  };
  await Promise.all(Array.from({ length: Math.min(limit, tasks.length) }, lane));
  return results;
}

// ---- what one arm sends

type PhaseName = 'burst' | 'flash' | 'open' | 'backlog';
interface Phase {
  units: number;
  firstSend: number;
  lastClose: number;
  rate: number;
  /** CPU ms per process over the phase. */
  cpu: Record<string, number>;
  /** Start / POST latencies, ms (open loop: from the intended send time). */
  latencies: number[];
  /** Close time of each unit, s since firstSend. */
  closeOffsets: number[];
  events: number[];
  targetRate?: number;
  drainSeconds?: number;
}

interface Sender {
  workflowType: string;
  send(sku?: string): Promise<string>;
  probe(): Promise<string>;
  /** HTTP status → answers that made the client repeat a POST with the same Idempotency-Key. */
  repeated: Map<number, number>;
  close(): Promise<void>;
}

function floorSender(env: ArmEnv, floor: Floor): Sender {
  const workflowType = FLOOR_TYPES[floor];
  const probeDb = new pg.Pool({ connectionString: env.databaseUrl, max: 10 });
  const start = async (): Promise<string> => {
    const id = `${floor}-${randomUUID()}`;
    await env.client.workflow.start(workflowType, { taskQueue: env.taskQueue, workflowId: id });
    return id;
  };
  return {
    workflowType,
    send: start,
    probe: async () => {
      await probeDb.query('INSERT INTO bench_probe (id) VALUES ($1)', [randomUUID()]);
      return start();
    },
    repeated: new Map(),
    close: () => probeDb.end(),
  };
}

function serviceSender(env: ArmEnv, skus: string[]): Sender {
  let seq = 0;
  const repeated = new Map<number, number>();
  // A 5xx, 409 (its own first attempt in flight) or 429 is repeated with the same key, up to 5 attempts.
  const send = async (only?: string): Promise<string> => {
    const key = randomUUID();
    const body = JSON.stringify({
      customer: { email: 'bench@example.com', name: 'Bench' },
      lines: [{ sku: only ?? skus[seq++ % skus.length], quantity: 1 }],
    });
    const headers = {
      'content-type': 'application/json',
      'idempotency-key': key,
      ...(env.apiKey ? { authorization: `Bearer ${env.apiKey}` } : {}),
    };
    for (let attempt = 1; ; attempt++) {
      const res = await fetch(`${env.apiUrl}/orders`, { method: 'POST', headers, body });
      const json = (await res.json().catch(() => ({}))) as { id?: string };
      if (res.ok && json.id) return `order-${json.id}`;
      repeated.set(res.status, (repeated.get(res.status) ?? 0) + 1);
      if (!(res.status >= 500 || res.status === 409 || res.status === 429) || attempt >= 5) {
        throw new Error(`POST /orders answered ${res.status} (attempt ${attempt}): ${JSON.stringify(json)}`);
      }
      await sleep(250 * attempt);
    }
  };
  return { workflowType: ORDER_WORKFLOW_TYPE, send, probe: () => send(), repeated, close: async () => undefined };
}

async function burst(s: Sender, n: number, sku?: string): Promise<{ ids: string[]; latencies: number[] }> {
  const latencies: number[] = [];
  const ids = await Promise.all(
    Array.from({ length: n }, async () => {
      const t = performance.now();
      const id = await s.send(sku);
      latencies.push(performance.now() - t);
      return id;
    }),
  );
  return { ids, latencies };
}

// ---- waiting for completions (visibility)

const count = async (env: ArmEnv, query: string): Promise<number> =>
  Number((await env.connection.workflowService.countWorkflowExecutions({ namespace: 'default', query })).count ?? 0);

async function waitClosed(env: ArmEnv, type: string, expected: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let [last, lastChange] = [-1, Date.now()];
  for (;;) {
    const n = await count(env, `WorkflowType = "${type}" AND ExecutionStatus != "Running"`);
    if (n >= expected) return;
    if (n !== last) [last, lastChange] = [n, Date.now()];
    if (Date.now() > deadline || Date.now() - lastChange > 120_000)
      throw new Error(`${n} of ${expected} ${type} closed`);
    await sleep(250);
  }
}

const sampleCpu = async (env: ArmEnv): Promise<Record<string, number>> =>
  Object.fromEntries(await Promise.all(env.meters.map(async (m) => [m.name, await m.read()] as const)));

async function finishPhase(
  env: ArmEnv,
  s: Sender,
  ids: string[],
  firstSend: number,
  before: Record<string, number>,
  total: number,
  latencies: number[],
): Promise<Phase> {
  await waitClosed(env, s.workflowType, total, Math.max(300_000, ids.length * 2000));
  const after = await sampleCpu(env);
  const cpu = Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - (before[k] ?? 0)]));
  const wanted = new Set(ids);
  const closed = new Map<string, { close: number; status: string; events: number }>();
  const query = `WorkflowType = "${s.workflowType}" AND CloseTime >= "${new Date(firstSend - 1000).toISOString()}"`;
  for (let i = 0; i < 40 && closed.size < ids.length; i++) {
    for await (const wf of env.client.workflow.list({ query, pageSize: 1000 })) {
      if (wanted.has(wf.workflowId))
        closed.set(wf.workflowId, {
          close: wf.closeTime?.getTime() ?? NaN,
          status: wf.status.name,
          events: wf.historyLength,
        });
    }
    if (closed.size < ids.length) await sleep(250);
  }
  const mine = [...closed.values()];
  if (mine.length < ids.length)
    throw new Error(`${ids.length - mine.length} of ${ids.length} units not listed as closed`);
  const bad = mine.filter((c) => c.status !== 'COMPLETED').length;
  if (bad) throw new Error(`${bad} of ${ids.length} units closed other than COMPLETED`);
  const lastClose = Math.max(...mine.map((c) => c.close));
  return {
    units: ids.length,
    firstSend,
    lastClose,
    rate: ids.length / ((lastClose - firstSend) / 1000),
    cpu,
    latencies,
    closeOffsets: mine.map((c) => (c.close - firstSend) / 1000),
    events: mine.map((c) => c.events),
  };
}

/** CPU the arm's work costs: service = dev server + worker + API + PostgreSQL; floor = dev server + worker + starter. */
function unitCost(kind: ArmKind, p: Phase, phase: PhaseName): number {
  const parts =
    kind === 'service'
      ? ['server', 'worker', 'api', 'postgres']
      : ['server', 'worker', 'client', ...(phase === 'open' ? ['postgres'] : [])];
  return parts.reduce((sum, k) => sum + (p.cpu[k] ?? 0), 0) / p.units;
}

// ---- one arm

interface ArmResult {
  arm: Arm;
  position: number;
  phases: Partial<Record<PhaseName, Phase>>;
  checks: string[];
  ok: boolean;
  load: [number, number];
}
let serviceRate: number | undefined;

async function runArm(arm: Arm, position: number): Promise<ArmResult> {
  const kind = kindOf(arm);
  const dir = path.join(OUT, `${position}-${arm}`);
  const loadBefore = load();
  say(`arm ${position} ${arm}: starting a fresh environment (load ${loadBefore.toFixed(2)})`);
  const env = await startEnv({
    kind,
    dir,
    pgUrl: opt('pg-url'),
    workerOptions:
      arm === 'V'
        ? (opt('variant-worker-options') ?? opt('worker-options'))
        : kind === 'service'
          ? opt('worker-options')
          : opt('floor-worker-options'),
    serviceRoot: arm === 'V' ? opt('variant-root') : undefined,
    profileDir: args.profile ? path.join(dir, 'profiles') : undefined,
    log: (line) => say(`  ${line}`),
  });
  const phases: ArmResult['phases'] = {};
  let s: Sender | undefined;
  try {
    // Enough stock on every SKU for every phase, the flash SKU's whole sale on top.
    const skus = kind === 'service' ? await raiseStock(env.databaseUrl, WARMUP + BURST + FLASH + 1000 + BACKLOG) : [];
    s = kind === 'service' ? serviceSender(env, skus) : floorSender(env, arm as Floor);
    const sender = s;
    let total = (await burst(sender, WARMUP)).ids.length;
    await waitClosed(env, sender.workflowType, total, 300_000);
    const measure = async (name: PhaseName, n: number, sku?: string): Promise<Phase> => {
      await sleep(1000);
      const before = await sampleCpu(env);
      const firstSend = Date.now();
      const b = await burst(sender, n, sku);
      total += n;
      return (phases[name] = await finishPhase(env, sender, b.ids, firstSend, before, total, b.latencies));
    };
    const b = await measure('burst', BURST);
    if (arm === 'S') serviceRate = b.rate;
    say(
      `  burst: ${BURST} units, ${fmt(b.rate, 2)}/s, CPU ${fmt(unitCost(kind, b, 'burst'), 0)} ms/unit, send p50 ${fmt(pct(b.latencies, 50), 0)} ms`,
    );
    if (FLASH > 0) {
      const f = await measure('flash', FLASH, skus[0]);
      say(
        `  flash sale: ${FLASH} units${skus[0] ? ` for ${skus[0]}` : ' (floor: a second burst)'}, ${fmt(f.rate, 2)}/s, CPU ${fmt(unitCost(kind, f, 'flash'), 0)} ms/unit`,
      );
    }
    const target = OPEN_RATE ?? (serviceRate ? serviceRate / 2 : undefined);
    if (OPEN_SECONDS > 0 && target) {
      await sleep(1000);
      const n = Math.max(1, Math.round(target * OPEN_SECONDS));
      const before = await sampleCpu(env);
      const firstSend = Date.now();
      const start = performance.now();
      const sends: Array<Promise<{ id: string; latency: number }>> = [];
      for (let i = 0; i < n; i++) {
        const intended = start + (i * 1000) / target;
        if (intended > performance.now()) await sleep(intended - performance.now());
        sends.push(sender.probe().then((id) => ({ id, latency: performance.now() - intended })));
      }
      const sent = await Promise.all(sends);
      total += n;
      const p = await finishPhase(
        env,
        sender,
        sent.map((x) => x.id),
        firstSend,
        before,
        total,
        sent.map((x) => x.latency),
      );
      phases.open = { ...p, targetRate: target };
      say(
        `  open loop: ${n} at ${fmt(target, 2)}/s, p50 ${fmt(pct(p.latencies, 50), 1)} ms, p99 ${fmt(pct(p.latencies, 99), 1)} ms`,
      );
    } else say('  open loop: skipped (no service rate yet; --open-rate sets one)');
    if (BACKLOG > 0 && (!BACKLOG_ARMS || BACKLOG_ARMS.includes(arm))) {
      await env.stopWorker();
      const ids = await pool(
        Array.from({ length: BACKLOG }, () => () => sender.send()),
        Number(args['backlog-concurrency']),
      );
      total += ids.length;
      const before = await sampleCpu(env);
      const { spawnedAt } = env.startWorker();
      const p = await finishPhase(env, sender, ids, spawnedAt, before, total, []);
      phases.backlog = { ...p, drainSeconds: (p.lastClose - spawnedAt) / 1000 };
      say(
        `  backlog: ${BACKLOG} drained in ${fmt(phases.backlog.drainSeconds, 1)} s, CPU ${fmt(unitCost(kind, p, 'backlog'), 0)} ms/unit`,
      );
    }
    const checks = await check(env, sender, total, skus[0]);
    for (const c of checks) say(`  check: ${c}`);
    return {
      arm,
      position,
      phases,
      checks,
      ok: checks.every((c) => !c.startsWith('FAIL')),
      load: [loadBefore, load()],
    };
  } finally {
    await s?.close().catch(() => undefined);
    await env.stop();
    if (!args.keep)
      for (const sub of ['postgres', 'temporal']) await rm(path.join(dir, sub), { recursive: true, force: true });
  }
}

/** Every unit completed once; for the service also the orders, every provider's ledger and the stock. */
async function check(env: ArmEnv, s: Sender, total: number, flashSku?: string): Promise<string[]> {
  const out = s.repeated.size
    ? [`WARN: POSTs repeated after an error answer (status: count) ${JSON.stringify(Object.fromEntries(s.repeated))}`]
    : [];
  const runs = await count(env, `WorkflowType = "${s.workflowType}"`);
  const done = await count(env, `WorkflowType = "${s.workflowType}" AND ExecutionStatus = "Completed"`);
  out.push(
    `${runs === total && done === total ? 'ok' : 'FAIL'}: workflow runs ${runs}, completed ${done}, sent ${total}`,
  );
  if (s.workflowType !== ORDER_WORKFLOW_TYPE) return out;
  const db = new pg.Client({ connectionString: env.databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ id: string; status: string }>('SELECT id, status FROM orders');
    const completed = rows.filter((r) => r.status === 'completed').length;
    out.push(
      `${rows.length === total && completed === total ? 'ok' : 'FAIL'}: orders ${rows.length} (one per POST: ${total}), completed ${completed}`,
    );
    const ids = new Set(rows.map((r) => r.id));
    for (const ledger of await readLedgers(env.simulatorUrl!, PROVIDER_LIST)) {
      const c = checkLedger(ledger, ids);
      out.push(`${c.ok ? 'ok' : 'FAIL'}: ${describeLedgerCheck(c, ids.size)}`);
    }
    // Stock: on-hand and reserved equal the sums of the product's movements, nothing left reserved.
    const stock = await db.query<{ sku: string; on_hand: number; reserved: number; moved: string; held: string }>(
      `SELECT p.sku, p.on_hand, p.reserved, COALESCE(SUM(m.on_hand_delta), 0) AS moved, COALESCE(SUM(m.reserved_delta), 0) AS held
       FROM products p LEFT JOIN inventory_movements m ON m.sku = p.sku GROUP BY p.sku, p.on_hand, p.reserved`,
    );
    const off = stock.rows.filter(
      (r) => Number(r.moved) !== r.on_hand || Number(r.held) !== r.reserved || r.reserved !== 0,
    );
    out.push(
      `${off.length ? 'FAIL' : 'ok'}: stock of ${stock.rows.length} products = the sums of their movements, none left reserved` +
        `${off.length ? ` (off: ${off.map((r) => r.sku).join(', ')})` : ''}${flashSku ? `; flash SKU ${flashSku}` : ''}`,
    );
  } finally {
    await db.end();
  }
  return out;
}

// ---- report

function table(headers: string[], rows: string[][]): string {
  const w = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(w[i]!)).join(' | ')} |`;
  return [line(headers), `| ${w.map((n) => '-'.repeat(n)).join(' | ')} |`, ...rows.map(line)].join('\n');
}

/** The event count of the newest recorded history of a completed order (test/replay/histories/): the design's. */
function designEvents(): number {
  const dir = path.join(ROOT, 'test', 'replay', 'histories');
  const files = readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('order-fulfilment-completed.json'));
  const newest = files.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1);
  return newest
    ? (JSON.parse(readFileSync(path.join(dir, newest), 'utf8')) as { events: unknown[] }).events.length
    : NaN;
}

function report(results: ArmResult[], meta: Record<string, string>): string {
  const cpuParts = (kind: ArmKind): string[] =>
    kind === 'floor' ? ['server', 'worker', 'client'] : ['server', 'worker', 'api', 'postgres'];
  const per = (r: ArmResult, k: string): number => (r.phases.burst!.cpu[k] ?? NaN) / r.phases.burst!.units;
  const perArm = table(
    [
      '#',
      'arm',
      'completions/s',
      'CPU ms/unit (parts)',
      'flash /s, CPU',
      'client',
      'sims',
      'events',
      'send p50/p99 ms',
      'open R/s: p50/p99 ms',
      'backlog drain s',
      'checks',
      'load',
    ],
    results.map((r) => {
      const kind = kindOf(r.arm);
      const { burst: b, flash: f, open: o, backlog: g } = r.phases;
      return [
        String(r.position),
        r.arm,
        fmt(b!.rate, 2),
        `${fmt(unitCost(kind, b!, 'burst'), 0)} (${cpuParts(kind)
          .map((k) => fmt(per(r, k), 0))
          .join(' / ')})`,
        f ? `${fmt(f.rate, 2)}, ${fmt(unitCost(kind, f, 'flash'), 0)}` : '–',
        fmt(per(r, 'client'), 1),
        fmt(per(r, 'sims'), 1),
        String(mode(b!.events)),
        `${fmt(pct(b!.latencies, 50), 0)}/${fmt(pct(b!.latencies, 99), 0)}`,
        o ? `${fmt(o.targetRate, 2)}: ${fmt(pct(o.latencies, 50), 1)}/${fmt(pct(o.latencies, 99), 1)}` : '–',
        g ? fmt(g.drainSeconds, 1) : '–',
        r.ok ? (r.checks.some((c) => c.startsWith('WARN')) ? 'ok*' : 'ok') : 'FAIL',
        `${fmt(r.load[0], 2)}→${fmt(r.load[1], 2)}`,
      ];
    }),
  );
  const kinds = ARMS.filter((a) => results.some((r) => r.arm === a));
  const pairs: Array<[Arm, Arm]> = kinds
    .filter((k) => kindOf(k) === 'service')
    .flatMap((x) => kinds.filter((k) => kindOf(k) === 'floor').map((f) => [x, f] as [Arm, Arm]));
  if (kinds.includes('V') && kinds.includes('S')) pairs.push(['V', 'S']);
  const of = (a: Arm, get: (r: ArmResult) => number | undefined): number =>
    mean(results.filter((r) => r.arm === a).map((r) => get(r) ?? NaN));
  const figures: Array<[string, (r: ArmResult) => number | undefined, number, string?]> = [
    ['completions/s (burst)', (r) => r.phases.burst!.rate, 2, 'S/F0 ≥ 0.8'],
    ['CPU ms per unit (burst)', (r) => unitCost(kindOf(r.arm), r.phases.burst!, 'burst'), 0, 'S/F0 ≤ 1.5'],
    ['completions/s (flash sale: one SKU)', (r) => r.phases.flash?.rate, 2],
    ['CPU ms per unit (flash sale)', (r) => r.phases.flash && unitCost(kindOf(r.arm), r.phases.flash, 'flash'), 0],
    ...['server', 'worker', 'api', 'postgres'].map((k): [string, (r: ArmResult) => number, number] => [
      `  ${k} (api: floor's starter)`,
      (r) => per(r, k === 'api' && kindOf(r.arm) === 'floor' ? 'client' : k),
      0,
    ]),
    ['burst POST/start p50 ms', (r) => pct(r.phases.burst!.latencies, 50), 0],
    ['burst POST/start p99 ms', (r) => pct(r.phases.burst!.latencies, 99), 0],
    ['burst unit close p50 s (send→close)', (r) => pct(r.phases.burst!.closeOffsets, 50), 2],
    ['open loop POST / raw probe p50 ms', (r) => r.phases.open && pct(r.phases.open.latencies, 50), 1, 'S/F0 ≤ 1.5'],
    ['open loop POST / raw probe p99 ms', (r) => r.phases.open && pct(r.phases.open.latencies, 99), 1, 'S ≤ 25 ms'],
    [`backlog drain s (${BACKLOG} units)`, (r) => r.phases.backlog?.drainSeconds, 1, 'S/F0 ≤ 1.25'],
  ];
  const expected: Record<Arm, number> = { F0: 29, F5: 35, S: designEvents(), V: NaN };
  const means = table(
    ['figure', ...kinds, ...pairs.map(([a, b]) => `${a}/${b}`), 'target'],
    [
      ...figures.map(([label, get, digits, target]) => [
        label,
        ...kinds.map((k) => fmt(of(k, get), digits)),
        ...pairs.map(([a, b]) => fmt(of(a, get) / of(b, get), 2)),
        target ?? '',
      ]),
      [
        'history events per unit (design)',
        ...kinds.map(
          (k) => `${mode(results.filter((r) => r.arm === k).flatMap((r) => r.phases.burst!.events))} (${expected[k]})`,
        ),
        ...pairs.map(() => ''),
        'S = design',
      ],
    ],
  );
  const failed = results.filter((r) => !r.ok);
  return [
    ...Object.entries(meta).map(([k, v]) => `${k}: ${v}`),
    '',
    'Per arm (burst unless named). CPU ms per unit: floor (dev server / worker / starter), service (dev server / worker / api / postgres).',
    perArm,
    '',
    `Mean per kind (${kinds.map((k) => `${k}: ${results.filter((r) => r.arm === k).length} arm(s)`).join(', ')}); the flash sale: ${FLASH} units at once, every order for one SKU (a floor: a second burst)`,
    means,
    ...results.flatMap((r) =>
      r.checks.filter((c) => c.startsWith('WARN')).map((c) => `arm ${r.position} ${r.arm}: ${c}`),
    ),
    '',
    failed.length
      ? `CHECKS FAILED in arm(s) ${failed.map((r) => `${r.position}-${r.arm}: ${r.checks.filter((c) => c.startsWith('FAIL')).join('; ')}`).join(', ')}`
      : 'checks: every unit completed once in every arm; the service: every order completed, one per POST, 1 effect per key in every ledger, stock = the sums of its movements',
  ].join('\n');
}

function csv(results: ArmResult[]): string {
  const procs = ['server', 'worker', 'api', 'postgres', 'client', 'sims'];
  const head = [
    'position',
    'arm',
    'phase',
    'units',
    'seconds',
    'rate_per_s',
    ...procs.map((p) => `cpu_${p}_ms_per_unit`),
    'cpu_total_ms_per_unit',
  ].concat([
    'latency_p50_ms',
    'latency_p90_ms',
    'latency_p99_ms',
    'latency_max_ms',
    'target_rate_per_s',
    'load_before',
    'load_after',
    'checks_ok',
  ]);
  const rows = results.flatMap((r) =>
    Object.entries(r.phases).map(([phase, p]) =>
      [
        r.position,
        r.arm,
        phase,
        p.units,
        p.drainSeconds ?? (p.lastClose - p.firstSend) / 1000,
        p.rate,
        ...procs.map((k) => (p.cpu[k] ?? NaN) / p.units),
      ]
        .concat([
          unitCost(kindOf(r.arm), p, phase as PhaseName),
          ...[50, 90, 99, 100].map((q) => pct(p.latencies, q)),
          p.targetRate ?? NaN,
          ...r.load,
        ])
        .map((v) => (typeof v === 'number' ? (Number.isFinite(v) ? String(Math.round(v * 1000) / 1000) : '') : v))
        .concat(String(r.ok))
        .join(','),
    ),
  );
  return `${[head.join(','), ...rows].join('\n')}\n`;
}

async function main(): Promise<void> {
  await mkdir(OUT, { recursive: true });
  if (!args['no-build']) await execa('npm', ['run', 'build'], { cwd: ROOT, stdout: 'ignore', stderr: 'inherit' });
  if (args['wait-quiet']) {
    say('waiting for a quiet machine: 1-minute load average < 1.0 for 60 s');
    for (let quietSince = 0; !(quietSince && Date.now() - quietSince >= 60_000); await sleep(5000))
      quietSince = load() < 1 ? quietSince || Date.now() : 0;
  }
  const cycle = (opt('arms')?.split(',') ?? [...FLOORS, 'S', 'S', ...[...FLOORS].reverse()]) as Arm[];
  for (const arm of cycle) if (!ARMS.includes(arm)) throw new Error(`unknown arm ${arm} (${ARMS.join(', ')})`);
  const order = Array.from({ length: CYCLES }, () => cycle)
    .flat()
    .filter((a) => !opt('only') || a === opt('only'));
  const git = (...a: string[]): string => {
    try {
      return execFileSync('git', a, { cwd: ROOT, encoding: 'utf8' }).trim();
    } catch {
      return '?';
    }
  };
  const cpus = os.cpus();
  const meta: Record<string, string> = {
    run: `${stamp}${opt('label') ? ` (${opt('label')})` : ''}${quick ? ' --quick' : ''}`,
    machine: `${cpus.length} × ${cpus[0]?.model ?? '?'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GB, Node ${process.version}`,
    commit: `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--untracked-files=no') ? ' (with local changes)' : ''}`,
    'load average at start': os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' '),
    arms: `${order.join(' ')} (${CYCLES} cycle(s), each arm a fresh dev server + PostgreSQL)`,
    phases: `warm-up ${WARMUP}, burst ${BURST}, flash sale ${FLASH || 'skipped'}, open loop ${OPEN_SECONDS} s, backlog ${BACKLOG}`,
    ...(order.includes('V')
      ? {
          'variant V': [opt('variant-label'), opt('variant-root'), opt('variant-worker-options')]
            .filter(Boolean)
            .join('; '),
        }
      : {}),
  };
  say(`bench → ${path.relative(process.cwd(), OUT) || OUT}; arms ${order.join(' ')}`);
  const results: ArmResult[] = [];
  for (const [i, arm] of order.entries()) results.push(await runArm(arm, i + 1));
  meta['load average at end'] = os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  meta.duration = `${((Date.now() - t0) / 60_000).toFixed(1)} min`;
  const text = report(results, meta);
  console.log(`\n${text}\n`);
  await writeFile(path.join(OUT, 'report.txt'), `${text}\n`);
  await writeFile(path.join(OUT, 'results.csv'), csv(results));
  const units = results.flatMap((r) =>
    Object.entries(r.phases).flatMap(([ph, p]) =>
      p.closeOffsets.map((t, k) => `${r.position},${r.arm},${ph},${t.toFixed(3)},${p.events[k]}`),
    ),
  );
  await writeFile(path.join(OUT, 'units.csv'), `position,arm,phase,close_offset_s,events\n${units.join('\n')}\n`);
  say(`wrote report.txt, results.csv, units.csv in ${path.relative(process.cwd(), OUT)}`);
  if (results.some((r) => !r.ok)) process.exit(1);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
