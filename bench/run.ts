/**
 * `npm run bench`: the service (S) against the Temporal floor (F0 / F5: bare workflows of 4 / 5 no-op activities),
 * arms interleaved ABBA, each in a fresh environment (bench/lib/env.ts); phases, checks, report: docs/benchmark.md.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { execa, execaSync } from 'execa';
import pLimit from 'p-limit';
import pg from 'pg';
import { PROVIDER_LIST } from '../providers/index.js';
import { runMain } from '../scripts/lib/env.js';
import { checkLedger, describeLedgerCheck, readLedgers } from '../scripts/lib/ledgers.js';
import { ORDER_WORKFLOW_TYPE } from '../workflows/order-fulfilment.contract.js';
import { raiseStock, ROOT, startEnv, type ArmEnv } from './lib/env.js';
import { ARMS, csv, fmt, kindOf, pct, report, unitCost } from './lib/report.js';
import type { Arm, ArmResult, Floor, Phase, PhaseName } from './lib/report.js';

const USAGE = `npm run bench -- [--quick] [--cycles 1] [--arms F0,S,S,F0]
  [--warmup 20] [--burst 200] [--flash <burst>] [--open-seconds 30] [--open-rate auto|<n>] [--backlog 5000]
  [--backlog-concurrency 16] [--backlog-arms F0,S] [--wait-quiet] [--no-build] [--keep] [--profile] [--card <token>] [--out <dir>]`;
const [strings, flags] = [
  'cycles warmup burst flash open-seconds backlog backlog-arms arms card out',
  'quick wait-quiet no-build keep profile help',
];
const args = parseArgs({
  options: {
    ...Object.fromEntries(strings.split(' ').map((name) => [name, { type: 'string' as const }])),
    ...Object.fromEntries(flags.split(' ').map((name) => [name, { type: 'boolean' as const }])),
    'open-rate': { type: 'string', default: 'auto' },
    'backlog-concurrency': { type: 'string', default: '16' },
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
const FLOORS: Floor[] = quick ? ['F5'] : ['F0', 'F5'];
const WARMUP = num('warmup', 20, 5);
const BURST = num('burst', 200, 20);
const FLASH = Number(opt('flash') ?? BURST);
const OPEN_SECONDS = num('open-seconds', 30, 4);
const BACKLOG = num('backlog', 5000, 30);
const BACKLOG_ARMS = opt('backlog-arms')?.split(',');
const OPEN_RATE = args['open-rate'] === 'auto' ? undefined : Number(args['open-rate']);

const FLOOR_TYPES: Record<Floor, string> = { F0: 'floor4', F5: 'floor5' };
const stamp = new Date().toISOString().replace(/\D/g, '').slice(0, 14);
const OUT = path.resolve(opt('out') ?? path.join(ROOT, '.data', 'bench', stamp));
const t0 = Date.now();
const say = (line: string): void => console.log(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(7)} s] ${line}`);
const load = (): number => os.loadavg()[0]!;
const loads = (): string =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

interface Sender {
  workflowType: string;
  send(sku?: string): Promise<string>;
  probe(): Promise<string>;
  repeated: Map<number, number>;
  close(): Promise<void>;
}

function floorSender(env: ArmEnv, floor: Floor): Sender {
  const workflowType = FLOOR_TYPES[floor];
  const probeDb = new pg.Pool({ connectionString: env.databaseUrl, max: 10 });
  const send = async (): Promise<string> => {
    const id = `${floor}-${randomUUID()}`;
    await env.client.workflow.start(workflowType, { taskQueue: env.taskQueue, workflowId: id });
    return id;
  };
  // The raw probe of the open loop: one INSERT + one workflow start.
  const probe = () => probeDb.query('INSERT INTO bench_probe (id) VALUES ($1)', [randomUUID()]).then(() => send());
  return { workflowType, send, probe, repeated: new Map(), close: () => probeDb.end() };
}

function serviceSender(env: ArmEnv, skus: string[]): Sender {
  let seq = 0;
  const repeated = new Map<number, number>();
  // A 5xx, 409 (its own first attempt in flight) or 429 is repeated with the same key, up to 5 attempts.
  const send = async (only?: string): Promise<string> => {
    const body = JSON.stringify({
      customer: { email: 'bench@example.com', name: 'Bench' },
      lines: [{ sku: only ?? skus[seq++ % skus.length], quantity: 1 }],
      ...(opt('card') ? { payment: { method: opt('card') } } : {}), // --card: every order paid by that card token
    });
    const auth: Record<string, string> = env.apiKey ? { authorization: `Bearer ${env.apiKey}` } : {};
    const headers = { 'content-type': 'application/json', 'idempotency-key': randomUUID(), ...auth };
    for (let attempt = 1; ; attempt++) {
      const res = await fetch(`${env.apiUrl}/orders`, { method: 'POST', headers, body });
      const json = (await res.json().catch(() => ({}))) as { id?: string };
      if (res.ok && json.id) return `order-${json.id}`;
      repeated.set(res.status, (repeated.get(res.status) ?? 0) + 1);
      if (!(res.status >= 500 || res.status === 409 || res.status === 429) || attempt >= 5)
        throw new Error(`POST /orders answered ${res.status} (attempt ${attempt}): ${JSON.stringify(json)}`);
      await sleep(250 * attempt);
    }
  };
  return { workflowType: ORDER_WORKFLOW_TYPE, send, probe: () => send(), repeated, close: async () => undefined };
}

async function burst(s: Sender, n: number, sku?: string): Promise<{ ids: string[]; latencies: number[] }> {
  const latencies: number[] = [];
  const timed = async () => {
    const t = performance.now();
    const id = await s.send(sku);
    latencies.push(performance.now() - t);
    return id;
  };
  return { ids: await Promise.all(Array.from({ length: n }, timed)), latencies };
}

const count = async (env: ArmEnv, query: string): Promise<number> =>
  Number((await env.connection.workflowService.countWorkflowExecutions({ namespace: 'default', query })).count ?? 0);

async function waitClosed(env: ArmEnv, type: string, expected: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (let [last, lastChange] = [-1, Date.now()]; ; await sleep(250)) {
    const n = await count(env, `WorkflowType = "${type}" AND ExecutionStatus != "Running"`);
    if (n >= expected) return;
    if (n !== last) [last, lastChange] = [n, Date.now()];
    if (Date.now() > deadline || Date.now() - lastChange > 120_000)
      throw new Error(`${n} of ${expected} ${type} closed`);
  }
}

const sampleCpu = async (env: ArmEnv): Promise<Record<string, number>> =>
  Object.fromEntries(await Promise.all(env.meters.map(async (m) => [m.name, await m.read()] as const)));

type Cpu = Record<string, number>;
async function finishPhase(
  env: ArmEnv,
  s: Sender,
  ids: string[],
  firstSend: number,
  before: Cpu,
  total: number,
  latencies: number[],
) {
  await waitClosed(env, s.workflowType, total, Math.max(300_000, ids.length * 2000));
  const after = await sampleCpu(env);
  const cpu = Object.fromEntries(Object.keys(after).map((k) => [k, after[k]! - (before[k] ?? 0)]));
  const wanted = new Set(ids);
  const closed = new Map<string, { close: number; status: string; events: number }>();
  const query = `WorkflowType = "${s.workflowType}" AND CloseTime >= "${new Date(firstSend - 1000).toISOString()}"`;
  for (let i = 0; i < 40 && closed.size < ids.length; i++) {
    for await (const wf of env.client.workflow.list({ query, pageSize: 1000 })) {
      const [close, status, events] = [wf.closeTime?.getTime() ?? NaN, wf.status.name, wf.historyLength];
      if (wanted.has(wf.workflowId)) closed.set(wf.workflowId, { close, status, events });
    }
    if (closed.size < ids.length) await sleep(250);
  }
  const mine = [...closed.values()];
  if (mine.length < ids.length)
    throw new Error(`${ids.length - mine.length} of ${ids.length} units not listed as closed`);
  const bad = mine.filter((c) => c.status !== 'COMPLETED').length;
  if (bad) throw new Error(`${bad} of ${ids.length} units closed other than COMPLETED`);
  const lastClose = Math.max(...mine.map((c) => c.close));
  const rate = ids.length / ((lastClose - firstSend) / 1000);
  const closeOffsets = mine.map((c) => (c.close - firstSend) / 1000);
  return {
    units: ids.length,
    firstSend,
    lastClose,
    rate,
    cpu,
    latencies,
    closeOffsets,
    events: mine.map((c) => c.events),
  };
}

let serviceRate: number | undefined;

async function runArm(arm: Arm, position: number): Promise<ArmResult> {
  const kind = kindOf(arm);
  const dir = path.join(OUT, `${position}-${arm}`);
  const loadBefore = load();
  say(`arm ${position} ${arm}: starting a fresh environment (load ${loadBefore.toFixed(2)})`);
  const env = await startEnv({
    ...{ kind, dir, profileDir: args.profile ? path.join(dir, 'profiles') : undefined },
    log: (line) => say(`  ${line}`),
  });
  const phases: ArmResult['phases'] = {};
  let s: Sender | undefined;
  try {
    // Enough stock on every SKU for every phase, the flash SKU's whole sale on top.
    const skus = kind === 'service' ? await raiseStock(env.databaseUrl, WARMUP + BURST + FLASH + 1000 + BACKLOG) : [];
    const sender = (s = kind === 'service' ? serviceSender(env, skus) : floorSender(env, arm as Floor));
    let total = (await burst(sender, WARMUP)).ids.length;
    await waitClosed(env, sender.workflowType, total, 300_000);
    const measure = async (name: PhaseName, n: number, sku?: string): Promise<Phase> => {
      await sleep(1000);
      const [before, firstSend] = [await sampleCpu(env), Date.now()];
      const b = await burst(sender, n, sku);
      total += n;
      return (phases[name] = await finishPhase(env, sender, b.ids, firstSend, before, total, b.latencies));
    };
    const cost = (p: Phase, name: PhaseName) => fmt(unitCost(kind, p, name), 0);
    const b = await measure('burst', BURST);
    if (arm === 'S') serviceRate = b.rate;
    say(
      `  burst: ${BURST} units, ${fmt(b.rate, 2)}/s, CPU ${cost(b, 'burst')} ms/unit, send p50 ${fmt(pct(b.latencies, 50), 0)} ms`,
    );
    if (FLASH > 0) {
      const f = await measure('flash', FLASH, skus[0]);
      const what = skus[0] ? ` for ${skus[0]}` : ' (floor: a second burst)';
      say(`  flash sale: ${FLASH} units${what}, ${fmt(f.rate, 2)}/s, CPU ${cost(f, 'flash')} ms/unit`);
    }
    const target = OPEN_RATE ?? (serviceRate ? serviceRate / 2 : undefined);
    if (OPEN_SECONDS > 0 && target) {
      await sleep(1000);
      const n = Math.max(1, Math.round(target * OPEN_SECONDS));
      const [before, firstSend, start] = [await sampleCpu(env), Date.now(), performance.now()];
      const sends: Array<Promise<{ id: string; latency: number }>> = [];
      for (let i = 0; i < n; i++) {
        const intended = start + (i * 1000) / target;
        if (intended > performance.now()) await sleep(intended - performance.now());
        sends.push(sender.probe().then((id) => ({ id, latency: performance.now() - intended })));
      }
      const sent = await Promise.all(sends);
      total += n;
      const [ids, latencies] = [sent.map((x) => x.id), sent.map((x) => x.latency)];
      const p = await finishPhase(env, sender, ids, firstSend, before, total, latencies);
      phases.open = { ...p, targetRate: target };
      const [p50, p99] = [fmt(pct(p.latencies, 50), 1), fmt(pct(p.latencies, 99), 1)];
      say(`  open loop: ${n} at ${fmt(target, 2)}/s, p50 ${p50} ms, p99 ${p99} ms`);
    } else say('  open loop: skipped (no service rate yet; --open-rate sets one)');
    if (BACKLOG > 0 && (!BACKLOG_ARMS || BACKLOG_ARMS.includes(arm))) {
      await env.stopWorker();
      const ids = await pLimit(Number(args['backlog-concurrency'])).map(Array(BACKLOG).fill(0), () => sender.send());
      total += ids.length;
      const before = await sampleCpu(env);
      const { spawnedAt } = env.startWorker();
      const p = await finishPhase(env, sender, ids, spawnedAt, before, total, []);
      phases.backlog = { ...p, drainSeconds: (p.lastClose - spawnedAt) / 1000 };
      say(
        `  backlog: ${BACKLOG} drained in ${fmt(phases.backlog.drainSeconds, 1)} s, CPU ${cost(p, 'backlog')} ms/unit`,
      );
    }
    const checks = await check(env, sender, total, skus[0]);
    for (const c of checks) say(`  check: ${c}`);
    const ok = checks.every((c) => !c.startsWith('FAIL'));
    return { arm, position, phases, checks, ok, load: [loadBefore, load()] };
  } finally {
    await s?.close().catch(() => undefined);
    await env.stop();
    if (!args.keep)
      for (const sub of ['postgres', 'temporal']) await rm(path.join(dir, sub), { recursive: true, force: true });
  }
}

async function check(env: ArmEnv, s: Sender, total: number, flashSku?: string): Promise<string[]> {
  const repeats = JSON.stringify(Object.fromEntries(s.repeated));
  const out = s.repeated.size ? [`WARN: POSTs repeated after an error answer (status: count) ${repeats}`] : [];
  const runs = await count(env, `WorkflowType = "${s.workflowType}"`);
  const done = await count(env, `WorkflowType = "${s.workflowType}" AND ExecutionStatus = "Completed"`);
  const verdict = (ok: boolean): string => (ok ? 'ok' : 'FAIL');
  out.push(`${verdict(runs === total && done === total)}: workflow runs ${runs}, completed ${done}, sent ${total}`);
  if (s.workflowType !== ORDER_WORKFLOW_TYPE) return out;
  const db = new pg.Client({ connectionString: env.databaseUrl });
  await db.connect();
  try {
    const { rows } = await db.query<{ id: string; status: string }>('SELECT id, status FROM orders');
    const completed = rows.filter((r) => r.status === 'completed').length;
    const allDone = rows.length === total && completed === total;
    out.push(`${verdict(allDone)}: orders ${rows.length} (one per POST: ${total}), completed ${completed}`);
    const ids = new Set(rows.map((r) => r.id));
    for (const ledger of await readLedgers(env.simulatorUrl!, PROVIDER_LIST)) {
      const c = checkLedger(ledger, ids);
      out.push(`${verdict(c.ok)}: ${describeLedgerCheck(c, ids.size)}`);
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
      `${verdict(!off.length)}: stock of ${stock.rows.length} products = the sums of their movements, none left reserved` +
        `${off.length ? ` (off: ${off.map((r) => r.sku).join(', ')})` : ''}${flashSku ? `; flash SKU ${flashSku}` : ''}`,
    );
  } finally {
    await db.end();
  }
  return out;
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
  const order = Array.from({ length: CYCLES }, () => cycle).flat();
  const git = (...a: string[]): string => {
    const r = execaSync('git', a, { cwd: ROOT, reject: false });
    return r.failed ? '?' : r.stdout;
  };
  const cpus = os.cpus();
  const changes = git('status', '--porcelain', '--untracked-files=no') ? ' (with local changes)' : '';
  const meta: Record<string, string> = {
    run: `${stamp}${quick ? ' --quick' : ''}`,
    machine: `${cpus.length} × ${cpus[0]?.model ?? '?'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GB, Node ${process.version}`,
    commit: `${git('rev-parse', '--short', 'HEAD')}${changes}`,
    'load average at start': loads(),
    arms: `${order.join(' ')} (${CYCLES} cycle(s), each arm a fresh dev server + PostgreSQL)`,
    phases: `warm-up ${WARMUP}, burst ${BURST}, flash sale ${FLASH || 'skipped'}, open loop ${OPEN_SECONDS} s, backlog ${BACKLOG}`,
  };
  say(`bench → ${path.relative(process.cwd(), OUT) || OUT}; arms ${order.join(' ')}`);
  const results: ArmResult[] = [];
  for (const [i, arm] of order.entries()) results.push(await runArm(arm, i + 1));
  meta['load average at end'] = loads();
  meta.duration = `${((Date.now() - t0) / 60_000).toFixed(1)} min`;
  const text = report(results, meta, { flash: FLASH, backlog: BACKLOG });
  console.log(`\n${text}\n`);
  await writeFile(path.join(OUT, 'report.txt'), `${text}\n`);
  await writeFile(path.join(OUT, 'results.csv'), csv(results));
  say(`wrote report.txt and results.csv in ${path.relative(process.cwd(), OUT)}`);
  if (results.some((r) => !r.ok)) process.exit(1);
}

runMain(main, 'bench failed: ', (err) => (err instanceof Error ? (err.stack ?? err.message) : String(err)));
