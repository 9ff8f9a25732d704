/**
 * Benchmark: how long an order takes from `POST /orders` to `completed`, one at a time and in a burst,
 * against a running stack (`npm start`), over real HTTP. Prints figures; asserts nothing about speed.
 * It does check correctness on the way: every order completes with exactly one effect under each provider step's
 * key (the step registry) in its provider's ledger, and every provider's ledger (the simulator process,
 * `<SIMULATOR_URL>/<name>/_sim/ledger`) holds exactly one effect per key.
 *
 * Usage: `npm run bench:latency -- [--sequential 20] [--burst 50] [--poll-ms 20]`
 * Env: API_URL, SIMULATOR_URL (default: the stack definition's ports on 127.0.0.1, i.e. PORT and SIMULATOR_PORT or
 * 3000 and 4010), API_KEY (default: the first client key of `.data/api-keys.json`, which `npm start` writes; mind the
 * per-client rate limit, RATE_LIMIT_MAX).
 * Two latency figures per order: `client` from just before the POST to the first poll that sees `completed`
 * (carries up to one poll interval), and `server` = completedAt - createdAt of the order (the API's own
 * timestamps, ms precision, independent of polling). Burst orders are polled every --burst-poll-ms (default
 * 1000) so the polling itself does not load the API.
 */
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import { STEPS } from '../activities/steps/index.js';
import { PROVIDER_LIST } from '../providers/index.js';
import { apiKeyFor } from '../scripts/lib/api-keys-file.js';
import { checkLedger, describeLedgerCheck, readLedgers } from '../scripts/lib/ledgers.js';
import { localUrl, stackPorts } from '../scripts/lib/stack-definition.js';

const { values } = parseArgs({
  options: {
    sequential: { type: 'string', default: '20' },
    burst: { type: 'string', default: '50' },
    'poll-ms': { type: 'string', default: '20' },
    'burst-poll-ms': { type: 'string', default: '1000' },
  },
});
const SEQUENTIAL = Number(values.sequential);
const BURST = Number(values.burst);
const POLL_MS = Number(values['poll-ms']);
const BURST_POLL_MS = Number(values['burst-poll-ms']);
const PORTS = stackPorts();
const API = (process.env.API_URL?.trim() || localUrl(PORTS.api)).replace(/\/+$/, '');
const SIMULATOR_URL = (process.env.SIMULATOR_URL?.trim() || localUrl(PORTS.simulators)).replace(/\/+$/, '');
/** `Authorization` of every API call. */
const AUTH = { authorization: `Bearer ${await apiKeyFor('orders:write')}` };

interface Product {
  sku: string;
  available: number;
}

async function json<T>(res: Response): Promise<T> {
  if (!res.ok) throw new Error(`${res.url} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}

interface Outcome {
  id: string;
  /** Client-observed POST→completed, ms. */
  ms: number;
  /** completedAt - createdAt, ms (NaN for a failed order). */
  serverMs: number;
  status: string;
}

async function placeAndWait(sku: string, pollMs: number): Promise<Outcome> {
  const started = performance.now();
  const res = await fetch(`${API}/orders`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
    body: JSON.stringify({ customer: { email: 'bench@example.com' }, lines: [{ sku, quantity: 1 }] }),
  });
  const { id } = await json<{ id: string }>(res);
  for (;;) {
    const order = await json<{ status: string; createdAt: string; completedAt: string | null }>(
      await fetch(`${API}/orders/${id}`, { headers: AUTH }),
    );
    if (order.status === 'completed' || order.status === 'failed') {
      const serverMs = order.completedAt ? Date.parse(order.completedAt) - Date.parse(order.createdAt) : NaN;
      return { id, ms: performance.now() - started, serverMs, status: order.status };
    }
    if (performance.now() - started > 300_000) throw new Error(`order ${id} not done after 300 s`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

function stats(ms: number[]): string {
  const s = [...ms].sort((a, b) => a - b);
  const q = (p: number) => s[Math.min(s.length - 1, Math.floor(p * s.length))]!;
  return `n=${s.length} min=${s[0]!.toFixed(0)} p50=${q(0.5).toFixed(0)} p95=${q(0.95).toFixed(0)} max=${s.at(-1)!.toFixed(0)} ms`;
}

/** Every provider step of the registry: its provider and its idempotency key. */
const PROVIDER_STEPS = STEPS.flatMap((s) => (s.kind === 'provider' ? [s] : []));

/**
 * Checks every provider's ledger: exactly one effect under each provider step's key of every order, and exactly one
 * effect per key overall.
 * @throws Error naming the first order or ledger that breaks it.
 */
async function verify(ids: string[]): Promise<string[]> {
  const ledgers = await readLedgers(SIMULATOR_URL, PROVIDER_LIST);
  for (const id of ids) {
    for (const step of PROVIDER_STEPS) {
      const ledger = ledgers.find((l) => l.provider === step.provider.name);
      const count = ledger?.countsByKey[step.key(id)] ?? 0;
      if (count !== 1) throw new Error(`order ${id}: ${count} effects under ${step.key(id)} at ${step.provider.name}`);
    }
  }
  const checks = ledgers.map((l) => checkLedger(l, new Set(ids)));
  const bad = checks.find((c) => !c.ok);
  if (bad) throw new Error(describeLedgerCheck(bad, ids.length));
  return checks.map((c) => describeLedgerCheck(c, ids.length));
}

const inventory = await json<Product[]>(await fetch(`${API}/inventory`, { headers: AUTH }));
const product = [...inventory].sort((a, b) => b.available - a.available)[0];
if (!product || product.available < SEQUENTIAL + BURST) {
  throw new Error(`need ${SEQUENTIAL + BURST} units of one product; raise stock with PUT /inventory/:sku`);
}
console.log(`bench: ${API}, product ${product.sku} (${product.available} available), poll ${POLL_MS} ms`);

const seq: number[] = [];
const seqIds: string[] = [];
const seqServer: number[] = [];
for (let i = 0; i < SEQUENTIAL; i++) {
  const r = await placeAndWait(product.sku, POLL_MS);
  if (r.status !== 'completed') throw new Error(`order ${r.id} ended ${r.status}`);
  seq.push(r.ms);
  seqServer.push(r.serverMs);
  seqIds.push(r.id);
}
console.log(`sequential  POST→completed (client): ${stats(seq)}`);
console.log(`sequential  createdAt→completedAt (server): ${stats(seqServer)}`);

const burstStart = performance.now();
const burst = await Promise.all(Array.from({ length: BURST }, () => placeAndWait(product.sku, BURST_POLL_MS)));
const wall = (performance.now() - burstStart) / 1000;
const failed = burst.filter((r) => r.status !== 'completed');
if (failed.length) throw new Error(`${failed.length} burst orders did not complete`);
console.log(`burst of ${BURST} createdAt→completedAt (server): ${stats(burst.map((r) => r.serverMs))}`);
console.log(
  `burst throughput: ${(BURST / wall).toFixed(1)} orders/s (${BURST} orders done ${wall.toFixed(1)} s after the ` +
    `first POST, within one ${BURST_POLL_MS} ms poll)`,
);

const ledgerLines = await verify([...seqIds, ...burst.map((r) => r.id)]);
console.log(
  `effects: exactly 1 effect under each provider step's key (${PROVIDER_STEPS.map((s) => s.key('<id>')).join(', ')}) ` +
    `for each of ${SEQUENTIAL + BURST} orders`,
);
for (const line of ledgerLines) console.log(`  ${line}`);
