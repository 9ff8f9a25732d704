/**
 * `npm run demo`: places 5 orders over HTTP at `API_URL` (4 fit in stock, 1 asks one unit too many), follows each to
 * `completed` or `failed` (120 s at most) and checks them against every provider's ledger. With nothing answering, it
 * builds and starts the stack (log: `.data/logs/demo-stack.log`) and stops it at the end. Also API_KEY,
 * SIMULATOR_URL, DEMO_SKIP_BUILD=1. Exit code 0 when every order ended as expected and every check holds.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import logUpdate from 'log-update';
import { orderStatuses, STEPS } from '../activities/index.js';
import { PROVIDER_LIST } from '../providers/index.js';
import { apiKeyFor } from './lib/dev-api-keys.js';
import { errorMessage, repoRoot, runMain } from './lib/env.js';
import { checkLedger, describeLedgerCheck, orderEffects, readLedgers, type ProviderLedger } from './lib/ledgers.js';
import { spawnChild, stop, waitForHttp, type Proc } from './lib/processes.js';
import { localUrl, stackPorts } from './lib/stack-definition.js';

const ROOT = repoRoot();
const PORTS = stackPorts();
const API_URL = (process.env.API_URL?.trim() || localUrl(PORTS.api)).replace(/\/+$/, '');
const SIMULATOR_URL = (process.env.SIMULATOR_URL?.trim() || localUrl(PORTS.simulators)).replace(/\/+$/, '');
const TERMINAL = new Set(['completed', 'failed']);
const PROVIDER_STEPS = new Map(STEPS.flatMap((s) => (s.kind === 'provider' ? [[s.name, s] as const] : [])));

let auth: Record<string, string> = {};

/** `fetch` with a JSON body, the API key and a 10 s timeout; the body parsed when it is JSON. */
async function http(method: string, url: string, body?: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(url, {
    method,
    headers: { ...auth, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
    body: body ? JSON.stringify(body) : undefined,
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  const json: unknown = await Promise.resolve()
    .then(() => (text ? JSON.parse(text) : undefined))
    .catch(() => text);
  return { status: res.status, json };
}

/** Builds and starts the stack, waits until the API is healthy. @throws Error with the log's tail when it fails. */
async function startStack(): Promise<{ proc: Proc }> {
  const api = new URL(API_URL);
  if (!['127.0.0.1', 'localhost'].includes(api.hostname)) throw new Error(`nothing answers at ${API_URL}/health`);
  if (process.env.DEMO_SKIP_BUILD !== '1') await execa('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  const logFile = path.join(ROOT, '.data', 'logs', 'demo-stack.log');
  await mkdir(path.dirname(logFile), { recursive: true });
  await writeFile(logFile, '');
  const relative = path.relative(process.cwd(), logFile);
  console.log(`Nothing answers at ${API_URL}/health: starting the stack (log: ${relative})…`);
  const started = Date.now();
  const env = { PORT: api.port || '80', STACK_EXIT_AFTER_READY: '', NO_COLOR: '1' };
  const argv = [...process.execArgv, path.join(ROOT, 'scripts', 'stack.ts')];
  const stack = spawnChild(process.execPath, argv, { cwd: ROOT, env, forceKillAfterDelay: 90_000 }, logFile);
  try {
    await waitForHttp(`${API_URL}/health`, { timeoutMs: 10 * 60_000, child: stack });
  } catch (error) {
    await stop(stack);
    const tail = (await readFile(logFile, 'utf8')).split('\n').slice(-40).join('\n');
    throw new Error(`${errorMessage(error)}. Last lines of the stack's log:\n${tail}`);
  }
  console.log(`Stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  return { proc: stack }; // wrapped: a returned execa process would be awaited
}

type Plan = { label: string; expect: 'completed' | 'failed'; lines: { sku: string; quantity: number }[] };

function planOrders(inventory: Array<{ sku: string; available: number }>): Plan[] {
  if (inventory.length === 0) throw new Error('GET /inventory returned no products: is the database seeded?');
  const left = new Map(inventory.map((p) => [p.sku, p.available]));
  const plans = [1, 2, 3, 2].map((wanted, i): Plan => {
    const lines: Plan['lines'] = [];
    for (let k = 0; k < inventory.length && lines.length < wanted; k++) {
      const sku = inventory[(i + k) % inventory.length]!.sku;
      const quantity = Math.min(left.get(sku)!, ((i + lines.length) % 2) + 1);
      if (quantity < 1) continue;
      left.set(sku, left.get(sku)! - quantity);
      lines.push({ sku, quantity });
    }
    if (lines.length === 0)
      throw new Error('not enough stock left for the demo: reset the data (delete .data/postgres)');
    return { label: `order ${i + 1}`, expect: 'completed', lines };
  });
  const scarcest = [...inventory].sort((a, b) => a.available - b.available)[0]!;
  const over = { sku: scarcest.sku, quantity: Math.max(scarcest.available, 0) + 1 };
  return [...plans, { label: 'over stock', expect: 'failed', lines: [over] }];
}

type Order = { steps?: Array<{ name: string; state: string }>; invoiceNumber?: string; temporalUiUrl?: string } & {
  failure?: { code: string; message: string };
};
type Outcome = { plan: Plan; id?: string; status: string; ms?: number; order?: Order };

async function placeAndFollow(
  plan: Plan,
  key: string,
  deadline: number,
  statuses: Map<string, string>,
): Promise<Outcome> {
  const posted = Date.now();
  const customer = { email: `${plan.label.replace(/\W/g, '')}@example.com`, name: 'Demo' };
  const res = await http('POST', `${API_URL}/orders`, { customer, lines: plan.lines }, { 'idempotency-key': key });
  const id = (res.json as { id?: string } | undefined)?.id;
  if (res.status !== 202 || !id) return { plan, status: `rejected: HTTP ${res.status} ${JSON.stringify(res.json)}` };
  let order: Outcome['order'] & { status?: string } = {};
  while (Date.now() < deadline) {
    const got = await http('GET', `${API_URL}/orders/${id}`).catch(() => undefined);
    if (got?.status === 200) order = got.json as typeof order;
    if (order.status) statuses.set(id, order.status);
    if (order.status && TERMINAL.has(order.status))
      return { plan, id, status: order.status, ms: Date.now() - posted, order };
    await sleep(200);
  }
  return { plan, id, status: `timeout (last: ${order.status ?? 'unknown'})`, order };
}

/** What is wrong with an order's story against the ledgers (nothing: it holds). */
function storyProblems(o: Outcome, ledgers: readonly ProviderLedger[]): string[] {
  if (o.id === undefined) return [];
  const steps = o.order?.steps ?? [];
  const undone = o.status === 'completed' ? steps.filter((s) => s.state !== 'done') : [];
  const problems = undone.map((s) => `completed with ${s.name} ${s.state}`);
  for (const step of steps) {
    const def = PROVIDER_STEPS.get(step.name);
    const ledger = def && ledgers.find((l) => l.provider === def.provider.name);
    const expected = ({ done: 1, undone: 1, skipped: 0, pending: 0 } as Record<string, number>)[step.state];
    const found = def && ledger ? (ledger.countsByKey[def.key(o.id)] ?? 0) : expected;
    if (found !== expected) problems.push(`${step.name} ${step.state} but ${found} effect(s) at ${def!.provider.name}`);
  }
  for (const ledger of ledgers) {
    for (const [key, count] of Object.entries(orderEffects(ledger, o.id)))
      if (count !== 1) problems.push(`${count} effects under ${key} at ${ledger.provider}`);
  }
  return problems;
}

async function runDemo(): Promise<boolean> {
  auth = { authorization: `Bearer ${await apiKeyFor('orders:write')}` };
  const inventory = await http('GET', `${API_URL}/inventory`);
  if (inventory.status !== 200 || !Array.isArray(inventory.json))
    throw new Error(`GET /inventory answered ${inventory.status}`);
  const products = inventory.json as Array<{ sku: string; available: number }>;
  console.log(`Inventory: ${products.map((p) => `${p.sku} (${p.available} available)`).join(', ')}`);
  const plans = planOrders(products);
  console.log(`Placing ${plans.length} orders against ${API_URL}…`);

  // Live progress: orders per status, in the registry's status order.
  const statuses = new Map<string, string>();
  const rank = (s: string): number => orderStatuses(STEPS).indexOf(s) + 1 || 99;
  let last = '';
  const progress = (): string => {
    const counts = new Map<string, number>();
    for (const s of statuses.values()) counts.set(s, (counts.get(s) ?? 0) + 1);
    const parts = [...counts].sort(([a], [b]) => rank(a) - rank(b)).map(([s, n]) => `${s} ${n}`);
    const final = [...statuses.values()].filter((s) => TERMINAL.has(s)).length;
    return `  ${final}/${plans.length} final · ${parts.join(' · ') || 'placing'}`;
  };
  const ticker = setInterval(() => {
    const line = progress();
    if (process.stdout.isTTY) logUpdate(line);
    else if (line !== last) console.log((last = line));
  }, 100);
  const run = randomUUID().slice(0, 8);
  const deadline = Date.now() + 120_000;
  const outcomes = await Promise.all(
    plans.map((plan, i) => placeAndFollow(plan, `demo-${run}-${i}`, deadline, statuses)),
  );
  clearInterval(ticker);
  if (process.stdout.isTTY) logUpdate.done();
  else if (progress() !== last) console.log(progress());

  const ledgers = await readLedgers(SIMULATOR_URL, PROVIDER_LIST);
  const stories = outcomes.map((o) => storyProblems(o, ledgers));
  const effects = (o: Outcome, l: ProviderLedger): number | string =>
    o.id ? Object.values(orderEffects(l, o.id)).reduce((n, c) => n + c, 0) : '-';
  console.table(
    outcomes.map((o, i) => ({
      order: o.plan.label,
      id: o.id ?? '-',
      expected: o.plan.expect,
      status: o.status,
      invoice: o.order?.invoiceNumber ?? '-',
      failure: o.order?.failure ? `${o.order.failure.code}: ${o.order.failure.message}`.slice(0, 60) : '-',
      ms: o.ms ?? '-',
      ...Object.fromEntries(ledgers.map((l) => [l.provider, effects(o, l)])),
      story: o.id === undefined ? '-' : stories[i]!.length === 0 ? 'ok' : 'FAIL',
    })),
  );
  for (const o of outcomes)
    console.log(
      `  ${o.plan.label}: ${o.plan.lines.map((l) => `${l.quantity} × ${l.sku}`).join(', ')}  ${o.order?.temporalUiUrl ?? ''}`,
    );
  console.log(
    `Provider columns: effects each provider's simulator recorded under the order's keys ` +
      `(${[...PROVIDER_STEPS.values()].map((s) => s.key('<id>')).join(', ')}); story: the order's steps against them.`,
  );
  const completed = new Set(outcomes.filter((o) => o.status === 'completed').map((o) => o.id!));
  const checks = ledgers.map((l) => checkLedger(l, completed));
  for (const c of checks) console.log(`  ${c.ok ? 'ok  ' : 'FAIL'} ${describeLedgerCheck(c, completed.size)}`);
  const unmet = outcomes.filter((o) => o.status !== o.plan.expect);
  for (const o of unmet)
    console.log(`✖ ${o.plan.label} (${o.id ?? 'not placed'}): expected ${o.plan.expect}, got ${o.status}`);
  outcomes.forEach(
    (o, i) => stories[i]!.length > 0 && console.log(`✖ ${o.plan.label} (${o.id}): ${stories[i]!.join('; ')}`),
  );
  const ok = unmet.length === 0 && stories.every((s) => s.length === 0) && checks.every((c) => c.ok);
  if (ok) {
    console.log(
      "\n✔ every order ended as expected (4 completed, the over-stock order failed), every order's story matches the " +
        "ledgers, and every provider's ledger holds exactly one effect per key.",
    );
  }
  return ok;
}

async function main(): Promise<number> {
  let stack: Proc | undefined;
  const onSignal = (): void => void stop(stack).then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const healthy = await fetch(`${API_URL}/health`, { signal: AbortSignal.timeout(2000) }).catch(() => undefined);
    if (!healthy?.ok) stack = (await startStack()).proc;
    return (await runDemo()) ? 0 : 1;
  } finally {
    if (stack) console.log('Stopping the stack started for the demo…');
    await stop(stack);
  }
}

runMain(main, 'demo failed: ');
