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
 *  4. prints a table: order id, final status, invoice number, failure reason, time from POST to the terminal
 *     status (ms), side effects recorded by the email simulator for `order-confirmation:<id>`, by the carrier
 *     simulator for `shipment:<id>` and by the accounting simulator for `accounting-invoice:<id>`
 *     (`GET /_sim/ledger/<key>`), and the Temporal UI link.
 *
 * Every API call sends `Authorization: Bearer <key>`: `API_KEY`, or the first client key (orders:write) of
 * `.data/api-keys.json` (written by `npm start`).
 *
 * Environment: API_URL, API_KEY, EMAIL_PROVIDER_URL (default http://127.0.0.1:4010), ACCOUNTING_PROVIDER_URL (default
 * http://127.0.0.1:4020), CARRIER_PROVIDER_URL (default http://127.0.0.1:4030), DEMO_SKIP_BUILD=1 (start the stack
 * from the existing dist/ without `npm run build`).
 * Exit code 0 when the 4 orders completed and the over-stock order failed; 1 otherwise.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { apiKeyFor } from './lib/api-keys-file.js';
import { errorMessage, repoRoot } from './lib/env.js';
import { Child, describeExit } from './lib/processes.js';
import { OrderProgress } from './lib/progress.js';

const ROOT = repoRoot();
const API_URL = trimSlash(process.env.API_URL?.trim() || 'http://127.0.0.1:3000');
const EMAIL_URL = trimSlash(process.env.EMAIL_PROVIDER_URL?.trim() || 'http://127.0.0.1:4010');
const ACCOUNTING_URL = trimSlash(process.env.ACCOUNTING_PROVIDER_URL?.trim() || 'http://127.0.0.1:4020');
const CARRIER_URL = trimSlash(process.env.CARRIER_PROVIDER_URL?.trim() || 'http://127.0.0.1:4030');

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
  /** The public failure (`{ code, message }`); the internal reason is not in the API. */
  failure?: { code: string; message: string } | null;
  invoiceNumber?: string | null;
  temporalUiUrl?: string | null;
}

interface LedgerView {
  key: string;
  count: number;
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
  const child = new Child('stack', process.execPath, [...process.execArgv, path.join(ROOT, 'scripts', 'stack.ts')], {
    cwd: ROOT,
    env: { ...process.env, PORT: api.port || '80', STACK_EXIT_AFTER_READY: '' },
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
  emailEffects: string;
  shipmentEffects: string;
  accountingEffects: string;
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

async function ledgerCount(baseUrl: string, key: string): Promise<string> {
  try {
    const { status, json } = await http('GET', `${baseUrl}/_sim/ledger/${encodeURIComponent(key)}`, {
      timeoutMs: 5000,
    });
    if (status === 404) return '0';
    if (status !== 200) return `HTTP ${status}`;
    const count = (json as Partial<LedgerView> | undefined)?.count;
    return typeof count === 'number' ? String(count) : '?';
  } catch (error) {
    return `n/a (${errorMessage(error)})`;
  }
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
      emailEffects: '',
      shipmentEffects: '',
      accountingEffects: '',
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
  const [emailEffects, shipmentEffects, accountingEffects] = await Promise.all([
    ledgerCount(EMAIL_URL, `order-confirmation:${id}`),
    ledgerCount(CARRIER_URL, `shipment:${id}`),
    ledgerCount(ACCOUNTING_URL, `accounting-invoice:${id}`),
  ]);
  return {
    planned: plan,
    id,
    status: terminalAt === undefined ? `timeout (last: ${last?.status ?? 'unknown'})` : (last?.status ?? '?'),
    invoiceNumber: last?.invoiceNumber ?? '',
    failureReason: last?.failure ? `${last.failure.code}: ${last.failure.message}` : '',
    elapsedMs: terminalAt === undefined ? undefined : terminalAt - postedAt,
    emailEffects,
    shipmentEffects,
    accountingEffects,
    temporalUiUrl: last?.temporalUiUrl ?? '',
  };
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
      'email',
      'shipment',
      'accounting',
      'Temporal UI',
    ],
    outcomes.map((o) => [
      o.planned.label,
      o.id ?? '-',
      o.planned.expect,
      o.status,
      o.invoiceNumber || '-',
      truncate(o.failureReason || '-', 60),
      o.elapsedMs === undefined ? '-' : String(o.elapsedMs),
      o.emailEffects || '-',
      o.shipmentEffects || '-',
      o.accountingEffects || '-',
      o.temporalUiUrl || '-',
    ]),
  );
  console.log('');
  console.log(
    'email / shipment / accounting: side effects the simulators recorded for the keys order-confirmation:<id>, ' +
      'shipment:<id> and accounting-invoice:<id> (1 each for a completed order, 0 for a failed one).',
  );
  for (const plan of plans) {
    console.log(`  ${plan.label}: ${plan.lines.map((l) => `${l.quantity} × ${l.sku}`).join(', ')}`);
  }

  const unmet = outcomes.filter((o) => o.status !== o.planned.expect);
  console.log('');
  if (unmet.length === 0) {
    console.log('✔ every order ended as expected: 4 completed, the over-stock order failed.');
    return true;
  }
  for (const o of unmet)
    console.log(`✖ ${o.planned.label} (${o.id ?? 'not placed'}): expected ${o.planned.expect}, got ${o.status}`);
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
