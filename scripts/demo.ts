/**
 * `npm run demo`: places a batch of real orders over HTTP and shows what happened to each.
 *
 * Against `API_URL` (default http://127.0.0.1:3000). When nothing answers on `${API_URL}/health`, it builds the
 * project and starts the stack itself (scripts/stack.ts, log in `.data/logs/demo-stack.log`) and stops it at the
 * end. Then it:
 *  1. reads `GET /inventory`;
 *  2. places 4 orders that fit in stock (1-3 lines, quantities 1-2) and 1 order asking for `available + 1` of a
 *     product (`POST /orders`, 202 + `Location`);
 *  3. polls `GET /orders/:id` until each is `completed` or `failed` (at most 120 s), showing live how many orders
 *     are in each status (scripts/lib/progress.ts), then a summary per final status with POST-to-final times;
 *  4. reads every provider's ledger from the simulator process (`<SIMULATOR_URL>/<name>/_sim/ledger`, each provider
 *     of providers/index.ts) and checks each order's story against its steps (`steps` of `GET /orders/:id`, the
 *     step registry's idempotency keys): a completed order has every step done; a provider step that acted has
 *     exactly one effect under its key at its provider, one that never ran none; no key of the order has more;
 *  5. prints a table: order id, final status, invoice number, failure reason, time from POST to the terminal
 *     status (ms), the effects each provider recorded for the order, the story check, and the Temporal UI link;
 *     then, per provider, the whole ledger's check: exactly one effect per key.
 *
 * Every API call sends `Authorization: Bearer <key>`: `API_KEY`, or the first client key (orders:write) of
 * `.data/api-keys.json` (written by `npm start`).
 *
 * Environment: API_URL, API_KEY, SIMULATOR_URL (default http://127.0.0.1:4010, i.e. `SIMULATOR_PORT` of the stack
 * definition), DEMO_SKIP_BUILD=1 (start the stack from the existing dist/ without `npm run build`).
 * Exit code 0 when the 4 orders completed, the over-stock order failed, every order's story holds and every ledger
 * has exactly one effect per key; 1 otherwise.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { STEPS } from '../activities/steps/index.js';
import { PROVIDER_LIST } from '../providers/index.js';
import { apiKeyFor } from './lib/api-keys-file.js';
import { errorMessage, repoRoot } from './lib/env.js';
import { checkLedger, describeLedgerCheck, orderEffects, readLedgers, type ProviderLedger } from './lib/ledgers.js';
import { Child, describeExit } from './lib/processes.js';
import { OrderProgress } from './lib/progress.js';
import { localUrl, stackPorts } from './lib/stack-definition.js';

const ROOT = repoRoot();
const PORTS = stackPorts();
const API_URL = trimSlash(process.env.API_URL?.trim() || localUrl(PORTS.api));
const SIMULATOR_URL = trimSlash(process.env.SIMULATOR_URL?.trim() || localUrl(PORTS.simulators));

/** How long to wait for all orders to reach a terminal status, ms. */
const ORDERS_TIMEOUT_MS = 120_000;
/** How long to wait for a stack started here (a first start may build the Temporal CLI: ~2 min), ms. */
const STACK_START_TIMEOUT_MS = 10 * 60_000;
const POLL_INTERVAL_MS = 200;
const TERMINAL = new Set(['completed', 'failed']);

/** The API key of every API call (set once the stack is up: `npm start` writes the keys file). */
let apiKey: string | undefined;

function trimSlash(url: string): string {
  return url.replace(/\/+$/, '');
}

// ---------------------------------------------------------------------------------------------------------
// HTTP

interface InventoryItem {
  sku: string;
  name: string;
  priceMinor: number;
  currency: string;
  onHand: number;
  reserved: number;
  available: number;
}

interface OrderView {
  id: string;
  status: string;
  /** The order's plan, step by step (`name`: the step's activity name; `state`: done, skipped, ...). */
  steps?: Array<{ name: string; state: string }>;
  /** The public failure (`{ code, message }`); the internal reason is not in the API. */
  failure?: { code: string; message: string } | null;
  invoiceNumber?: string | null;
  temporalUiUrl?: string | null;
}

/**
 * `fetch` with a timeout and a JSON body.
 * @returns the status, headers and parsed JSON body (undefined when empty or not JSON).
 * @throws Error on network errors and timeouts (default 10 000 ms).
 */
async function http(
  method: string,
  url: string,
  opts: { body?: unknown; headers?: Record<string, string>; timeoutMs?: number } = {},
): Promise<{ status: number; headers: Headers; json: unknown }> {
  const res = await fetch(url, {
    method,
    headers: {
      accept: 'application/json',
      ...(opts.body !== undefined ? { 'content-type': 'application/json' } : {}),
      ...(apiKey !== undefined && url.startsWith(API_URL) ? { authorization: `Bearer ${apiKey}` } : {}),
      ...opts.headers,
    },
    body: opts.body !== undefined ? JSON.stringify(opts.body) : undefined,
    signal: AbortSignal.timeout(opts.timeoutMs ?? 10_000),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, json };
}

async function isHealthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

function isInventoryItem(value: unknown): value is InventoryItem {
  const v = value as Partial<InventoryItem> | null;
  return typeof v?.sku === 'string' && typeof v.available === 'number';
}

/** `title: detail` of a problem+json body, or the raw JSON. */
function describeProblem(json: unknown): string {
  const p = json as { title?: unknown; detail?: unknown } | undefined;
  if (p && (typeof p.title === 'string' || typeof p.detail === 'string')) {
    return [p.title, p.detail].filter((x) => typeof x === 'string').join(': ');
  }
  return JSON.stringify(json) ?? '(no body)';
}

// ---------------------------------------------------------------------------------------------------------
// Starting the stack when nothing answers

interface StartedStack {
  child: Child;
  stop(): Promise<void>;
}

async function runNpmBuild(): Promise<void> {
  console.log('Building (npm run build)…');
  await execa('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
}

/**
 * Builds and starts scripts/stack.ts in its own process group, output to `.data/logs/demo-stack.log`, and waits
 * until `${API_URL}/health` answers.
 * @throws Error (with the log's last lines) when the stack exits first or is not ready within 10 minutes.
 */
async function startStack(): Promise<StartedStack> {
  const api = new URL(API_URL);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(api.hostname)) {
    throw new Error(`nothing answers at ${API_URL}/health, and it is not a local address: start the API there first`);
  }
  if (process.env.DEMO_SKIP_BUILD !== '1') await runNpmBuild();

  const logFile = path.join(ROOT, '.data', 'logs', 'demo-stack.log');
  await mkdir(path.dirname(logFile), { recursive: true });
  await writeFile(logFile, '');
  console.log(
    `Nothing answers at ${API_URL}/health: starting the stack (log: ${path.relative(process.cwd(), logFile)})…`,
  );
  const started = Date.now();
  const simulators = new URL(SIMULATOR_URL);
  const child = new Child('stack', process.execPath, [...process.execArgv, path.join(ROOT, 'scripts', 'stack.ts')], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: api.port || '80',
      ...(['127.0.0.1', 'localhost', '[::1]'].includes(simulators.hostname) && simulators.pathname === '/'
        ? { SIMULATOR_PORT: simulators.port || '80' }
        : {}),
      STACK_EXIT_AFTER_READY: '',
    },
    logFile,
    // The stack stops its own children (up to 10 s each): give it time before SIGKILL.
    stopTimeoutMs: 90_000,
  });
  const stack: StartedStack = {
    child,
    stop: async () => {
      console.log('Stopping the stack started for the demo…');
      await child.stop();
    },
  };

  const tail = async (): Promise<string> => {
    const text = await readFile(logFile, 'utf8').catch(() => '');
    return text.split('\n').slice(-40).join('\n');
  };
  while (!(await isHealthy(`${API_URL}/health`))) {
    if (!child.running) {
      const exit = await child.exited;
      throw new Error(
        `the stack exited (${describeExit(exit)}) before the API was healthy. Last log lines:\n${await tail()}`,
      );
    }
    if (Date.now() - started > STACK_START_TIMEOUT_MS) {
      await stack.stop();
      throw new Error(
        `the stack was not ready within ${STACK_START_TIMEOUT_MS / 60_000} minutes. Last log lines:\n${await tail()}`,
      );
    }
    await sleep(500);
  }
  console.log(`Stack ready in ${((Date.now() - started) / 1000).toFixed(1)} s.`);
  return stack;
}

// ---------------------------------------------------------------------------------------------------------
// The demo

interface PlannedOrder {
  label: string;
  expect: 'completed' | 'failed';
  customer: { email: string; name: string };
  lines: { sku: string; quantity: number }[];
}

interface OrderOutcome {
  planned: PlannedOrder;
  id?: string;
  status: string;
  invoiceNumber: string;
  failureReason: string;
  elapsedMs?: number;
  /** The order's steps as the API last showed them. */
  steps: NonNullable<OrderView['steps']>;
  temporalUiUrl: string;
}

const CUSTOMERS = [
  { email: 'ada@example.com', name: 'Ada Lovelace' },
  { email: 'grace@example.com', name: 'Grace Hopper' },
  { email: 'alan@example.com', name: 'Alan Turing' },
  { email: 'katherine@example.com', name: 'Katherine Johnson' },
  { email: 'edsger@example.com', name: 'Edsger Dijkstra' },
];

/**
 * Plans 4 orders that fit in the stock read from the inventory (1-3 distinct lines, quantities 1-2, drawing down
 * a local copy of `available`) and one that asks for `available + 1` of the product with the least stock.
 * @throws Error when the inventory is empty or too small for 4 orders.
 */
function planOrders(inventory: InventoryItem[]): PlannedOrder[] {
  if (inventory.length === 0) throw new Error('GET /inventory returned no products: is the database seeded?');
  const remaining = new Map(inventory.map((item) => [item.sku, item.available]));
  const wantedLines = [1, 2, 3, 2];
  const plans: PlannedOrder[] = [];
  for (let i = 0; i < 4; i += 1) {
    const lines: { sku: string; quantity: number }[] = [];
    for (let k = 0; k < inventory.length && lines.length < (wantedLines[i] ?? 1); k += 1) {
      const item = inventory[(i + k) % inventory.length] as InventoryItem;
      const left = remaining.get(item.sku) ?? 0;
      if (left < 1) continue;
      const quantity = Math.min(left, ((i + lines.length) % 2) + 1);
      remaining.set(item.sku, left - quantity);
      lines.push({ sku: item.sku, quantity });
    }
    if (lines.length === 0) {
      throw new Error('not enough stock left for the demo: reset the data (e.g. delete .data/postgres) and re-seed');
    }
    plans.push({
      label: `order ${i + 1}`,
      expect: 'completed',
      customer: CUSTOMERS[i] as PlannedOrder['customer'],
      lines,
    });
  }
  const scarcest = [...inventory].sort((a, b) => a.available - b.available)[0] as InventoryItem;
  plans.push({
    label: 'over stock',
    expect: 'failed',
    customer: CUSTOMERS[4] as PlannedOrder['customer'],
    lines: [{ sku: scarcest.sku, quantity: Math.max(scarcest.available, 0) + 1 }],
  });
  return plans;
}

/** Places one order; returns its id and the POST start time, or an outcome describing the rejection. */
async function placeOrder(
  plan: PlannedOrder,
  runId: string,
  index: number,
): Promise<{ id: string; postedAt: number } | OrderOutcome> {
  const postedAt = Date.now();
  const res = await http('POST', `${API_URL}/orders`, {
    body: { customer: plan.customer, lines: plan.lines },
    headers: { 'idempotency-key': `demo-${runId}-${index}` },
  });
  const body = res.json as Partial<OrderView> | undefined;
  const location = res.headers.get('location') ?? '';
  const id = body?.id ?? /\/orders\/([^/?#]+)/.exec(location)?.[1];
  if (res.status !== 202 || id === undefined) {
    return {
      planned: plan,
      status: `rejected: HTTP ${res.status}`,
      invoiceNumber: '',
      failureReason: describeProblem(res.json),
      steps: [],
      temporalUiUrl: '',
    };
  }
  return { id, postedAt };
}

/** Polls `GET /orders/:id` until the status is terminal or `deadline` (epoch ms) passes. */
async function followOrder(
  plan: PlannedOrder,
  id: string,
  postedAt: number,
  deadline: number,
  progress?: OrderProgress,
): Promise<OrderOutcome> {
  let last: Partial<OrderView> | undefined;
  let terminalAt: number | undefined;
  while (Date.now() < deadline) {
    try {
      const res = await http('GET', `${API_URL}/orders/${encodeURIComponent(id)}`);
      if (res.status === 200) last = res.json as Partial<OrderView>;
      if (last?.status) progress?.update(id, last.status, Date.now() - postedAt);
    } catch {
      // transient; keep polling until the deadline
    }
    if (last?.status !== undefined && TERMINAL.has(last.status)) {
      terminalAt = Date.now();
      break;
    }
    await sleep(POLL_INTERVAL_MS);
  }
  return {
    planned: plan,
    id,
    status: terminalAt === undefined ? `timeout (last: ${last?.status ?? 'unknown'})` : (last?.status ?? '?'),
    invoiceNumber: last?.invoiceNumber ?? '',
    failureReason: last?.failure ? `${last.failure.code}: ${last.failure.message}` : '',
    elapsedMs: terminalAt === undefined ? undefined : terminalAt - postedAt,
    steps: last?.steps ?? [],
    temporalUiUrl: last?.temporalUiUrl ?? '',
  };
}

/** The provider steps of the registry by activity name: where each acts and under which key. */
const PROVIDER_STEPS = new Map(STEPS.flatMap((s) => (s.kind === 'provider' ? [[s.name, s] as const] : [])));

/**
 * Checks an order's story against the ledgers: a completed order has every step `done`; a provider step that acted
 * (`done`, or `undone`: acted, then compensated) has exactly one effect under its key at its provider, one that never
 * ran (`skipped`, `pending`) none; every key of the order at every provider has exactly one effect.
 * @returns the problems found (none: the story holds).
 */
function storyProblems(o: OrderOutcome, ledgers: readonly ProviderLedger[]): string[] {
  if (o.id === undefined) return [];
  const id = o.id;
  const problems: string[] = [];
  if (o.status === 'completed') {
    const notDone = o.steps.filter((s) => s.state !== 'done').map((s) => `${s.name} ${s.state}`);
    if (notDone.length > 0) problems.push(`completed with ${notDone.join(', ')}`);
  }
  for (const step of o.steps) {
    const def = PROVIDER_STEPS.get(step.name);
    const ledger = def && ledgers.find((l) => l.provider === def.provider.name);
    if (!def || !ledger) continue;
    const expected = ['done', 'undone'].includes(step.state)
      ? 1
      : ['skipped', 'pending'].includes(step.state)
        ? 0
        : undefined;
    const found = ledger.countsByKey[def.key(id)] ?? 0;
    if (expected !== undefined && found !== expected) {
      problems.push(`${step.name} ${step.state} but ${found} effect(s) under ${def.key(id)} at ${ledger.provider}`);
    }
  }
  for (const ledger of ledgers) {
    for (const [key, count] of Object.entries(orderEffects(ledger, id))) {
      if (count !== 1) problems.push(`${count} effects under ${key} at ${ledger.provider}`);
    }
  }
  return problems;
}

/** The number of effects a provider recorded for an order (every key naming it), or `-` when it was not placed. */
function effectsCell(o: OrderOutcome, ledger: ProviderLedger): string {
  if (o.id === undefined) return '-';
  return String(Object.values(orderEffects(ledger, o.id)).reduce((n, c) => n + c, 0));
}

function truncate(text: string, max: number): string {
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}

function printTable(headers: string[], rows: string[][]): void {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  console.log(line(headers));
  console.log(widths.map((w) => '─'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
}

async function runDemo(): Promise<boolean> {
  apiKey = await apiKeyFor('orders:write');
  const inventoryRes = await http('GET', `${API_URL}/inventory`);
  if (inventoryRes.status !== 200 || !Array.isArray(inventoryRes.json)) {
    throw new Error(`GET ${API_URL}/inventory answered ${inventoryRes.status}: ${describeProblem(inventoryRes.json)}`);
  }
  const inventory = inventoryRes.json.filter(isInventoryItem);
  console.log(`Inventory: ${inventory.map((p) => `${p.sku} (${p.available} available)`).join(', ')}`);

  const plans = planOrders(inventory);
  const runId = randomUUID().slice(0, 8);
  console.log(`Placing ${plans.length} orders against ${API_URL}…`);
  const progress = new OrderProgress(plans.length, (status) => TERMINAL.has(status));
  const placed = await Promise.all(plans.map((plan, i) => placeOrder(plan, runId, i)));
  const deadline = Date.now() + ORDERS_TIMEOUT_MS;
  const outcomes = await Promise.all(
    placed.map((p, i) =>
      'postedAt' in p ? followOrder(plans[i] as PlannedOrder, p.id, p.postedAt, deadline, progress) : p,
    ),
  );
  progress.finish();

  const ledgers = await readLedgers(SIMULATOR_URL, PROVIDER_LIST);
  const stories = outcomes.map((o) => storyProblems(o, ledgers));
  console.log('');
  printTable(
    [
      '',
      'order id',
      'expected',
      'status',
      'invoice',
      'failure reason',
      'ms',
      ...ledgers.map((l) => l.provider),
      'story',
      'Temporal UI',
    ],
    outcomes.map((o, i) => [
      o.planned.label,
      o.id ?? '-',
      o.planned.expect,
      o.status,
      o.invoiceNumber || '-',
      truncate(o.failureReason || '-', 60),
      o.elapsedMs === undefined ? '-' : String(o.elapsedMs),
      ...ledgers.map((l) => effectsCell(o, l)),
      o.id === undefined ? '-' : stories[i]!.length === 0 ? 'ok' : 'FAIL',
      o.temporalUiUrl || '-',
    ]),
  );
  console.log('');
  console.log(
    `${ledgers.map((l) => l.provider).join(' / ')}: side effects each provider's simulator recorded under the ` +
      `order's idempotency keys (${[...PROVIDER_STEPS.values()].map((s) => s.key('<id>')).join(', ')}): one per ` +
      "provider step the order ran, none for a step it never reached. story: the order's steps against those effects.",
  );
  for (const plan of plans) {
    console.log(`  ${plan.label}: ${plan.lines.map((l) => `${l.quantity} × ${l.sku}`).join(', ')}`);
  }
  const completedIds = new Set(outcomes.filter((o) => o.status === 'completed' && o.id).map((o) => o.id!));
  const checks = ledgers.map((l) => checkLedger(l, completedIds));
  console.log('');
  for (const c of checks)
    console.log(
      `  ${c.ok ? 'ok  ' : 'FAIL'} ${describeLedgerCheck(c, completedIds.size)} (${SIMULATOR_URL}/${c.provider}/_sim/ledger)`,
    );

  const unmet = outcomes.filter((o) => o.status !== o.planned.expect);
  const untold = outcomes.flatMap((o, i) => (stories[i]!.length > 0 ? [{ o, problems: stories[i]! }] : []));
  const badLedgers = checks.filter((c) => !c.ok);
  console.log('');
  if (unmet.length === 0 && untold.length === 0 && badLedgers.length === 0) {
    console.log(
      "✔ every order ended as expected (4 completed, the over-stock order failed), every order's story matches the " +
        `ledgers, and every provider's ledger (${ledgers.map((l) => l.provider).join(', ')}) holds exactly one ` +
        'effect per key.',
    );
    return true;
  }
  for (const o of unmet)
    console.log(`✖ ${o.planned.label} (${o.id ?? 'not placed'}): expected ${o.planned.expect}, got ${o.status}`);
  for (const { o, problems } of untold) console.log(`✖ ${o.planned.label} (${o.id}): ${problems.join('; ')}`);
  for (const c of badLedgers) console.log(`✖ ${describeLedgerCheck(c, completedIds.size)}`);
  return false;
}

async function main(): Promise<number> {
  let stack: StartedStack | undefined;
  let interrupted = false;
  const onSignal = (): void => {
    if (interrupted) return;
    interrupted = true;
    console.log('Interrupted.');
    void (stack?.stop() ?? Promise.resolve()).then(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  try {
    if (!(await isHealthy(`${API_URL}/health`))) stack = await startStack();
    return (await runDemo()) ? 0 : 1;
  } finally {
    if (stack !== undefined && !interrupted) await stack.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`demo failed: ${errorMessage(error)}`);
    process.exit(1);
  },
);
