/**
 * `npm run bench`: the service (S) against the Temporal floor (F0: bare workflows of 4 no-op activities), arms
 * interleaved ABBA, each in a fresh environment (bench/lib/env.ts); phases, checks, report: docs/benchmark.md.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { execa, execaSync } from 'execa';
import pg from 'pg';
import { PROVIDER_LIST } from '../providers/index.js';
import { runMain } from '../scripts/lib/env.js';
import { checkLedger, describeLedgerCheck, readLedgers } from '../scripts/lib/ledgers.js';
import { ORDER_WORKFLOW_TYPE } from '../workflows/order-fulfilment.contract.js';
import { raiseStock, ROOT, startEnv, type ArmEnv } from './lib/env.js';
import { ARMS, fmt, kindOf, pct, report, unitCost } from './lib/report.js';
import type { Arm, ArmResult, Phase, PhaseName } from './lib/report.js';

const USAGE = `npm run bench -- [--quick] [--cycles 1] [--arms F0,S,S,F0] [--warmup 20] [--burst 200]
  [--flash <burst>] [--wait-quiet] [--no-build] [--keep] [--profile] [--card <token>] [--out <dir>]`;
const [strings, flags] = ['cycles warmup burst flash arms card out', 'quick wait-quiet no-build keep profile help'];
const args = parseArgs({
  options: {
    ...Object.fromEntries(strings.split(' ').map((name) => [name, { type: 'string' as const }])),
    ...Object.fromEntries(flags.split(' ').map((name) => [name, { type: 'boolean' as const }])),
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
const WARMUP = num('warmup', 20, 5);
const BURST = num('burst', 200, 20);
const FLASH = Number(opt('flash') ?? BURST);

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
  repeated: Map<number, number>;
}

function floorSender(env: ArmEnv): Sender {
  const send = async (): Promise<string> => {
    const id = `F0-${randomUUID()}`;
    await env.client.workflow.start('floor4', { taskQueue: env.taskQueue, workflowId: id });
    return id;
  };
  return { workflowType: 'floor4', send, repeated: new Map() };
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
  return { workflowType: ORDER_WORKFLOW_TYPE, send, repeated };
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
  const events = mine.map((c) => c.events);
  return { units: ids.length, firstSend, lastClose, rate, cpu, latencies, closeOffsets, events };
}

async function runArm(arm: Arm, position: number): Promise<ArmResult> {
  const kind = kindOf(arm);
  const dir = path.join(OUT, `${position}-${arm}`);
  const loadBefore = load();
  say(`arm ${position} ${arm}: starting a fresh environment (load ${loadBefore.toFixed(2)})`);
  const env = await startEnv({ kind, dir, profileDir: args.profile ? path.join(dir, 'profiles') : undefined });
  const phases: ArmResult['phases'] = {};
  try {
    // Enough stock on every SKU for every phase, the flash SKU's whole sale on top.
    const skus = kind === 'service' ? await raiseStock(env, WARMUP + BURST + FLASH + 1000) : [];
    const sender = kind === 'service' ? serviceSender(env, skus) : floorSender(env);
    let total = (await burst(sender, WARMUP)).ids.length;
    await waitClosed(env, sender.workflowType, total, 300_000);
    const measure = async (name: PhaseName, n: number, sku?: string): Promise<Phase> => {
      await sleep(1000);
      const [before, firstSend] = [await sampleCpu(env), Date.now()];
      const b = await burst(sender, n, sku);
      total += n;
      return (phases[name] = await finishPhase(env, sender, b.ids, firstSend, before, total, b.latencies));
    };
    const cost = (p: Phase) => fmt(unitCost(kind, p), 0);
    const b = await measure('burst', BURST);
    say(
      `  burst: ${BURST} units, ${fmt(b.rate, 2)}/s, CPU ${cost(b)} ms/unit, send p50 ${fmt(pct(b.latencies, 50), 0)} ms`,
    );
    if (FLASH > 0) {
      const f = await measure('flash', FLASH, skus[0]);
      const what = skus[0] ? ` for ${skus[0]}` : ' (floor: a second burst)';
      say(`  flash sale: ${FLASH} units${what}, ${fmt(f.rate, 2)}/s, CPU ${cost(f)} ms/unit`);
    }
    const checks = await check(env, sender, total, skus[0]);
    for (const c of checks) say(`  check: ${c}`);
    const ok = checks.every((c) => !c.startsWith('FAIL'));
    return { arm, position, phases, checks, ok, load: [loadBefore, load()] };
  } finally {
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
  const cycle = (opt('arms')?.split(',') ?? ['F0', 'S', 'S', 'F0']) as Arm[];
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
    arms: `${order.join(' ')} (${CYCLES} cycle(s), each arm npm start's stack on fresh data)`,
    phases: `warm-up ${WARMUP}, burst ${BURST}, flash sale ${FLASH || 'skipped'}`,
  };
  say(`bench → ${path.relative(process.cwd(), OUT) || OUT}; arms ${order.join(' ')}`);
  const results: ArmResult[] = [];
  for (const [i, arm] of order.entries()) results.push(await runArm(arm, i + 1));
  meta['load average at end'] = loads();
  meta.duration = `${((Date.now() - t0) / 60_000).toFixed(1)} min`;
  const text = report(results, meta, FLASH);
  console.log(`\n${text}\n`);
  await writeFile(path.join(OUT, 'report.txt'), `${text}\n`);
  say(`wrote report.txt in ${path.relative(process.cwd(), OUT)}`);
  if (results.some((r) => !r.ok)) process.exit(1);
}

runMain(main, 'bench failed: ', (err) => (err instanceof Error ? (err.stack ?? err.message) : String(err)));
