/**
 * A randomized fault run (issue 23, item 7) on the real stack: the Nest API, two worker processes, the Temporal dev
 * server, PostgreSQL and the simulators over HTTP (the simulated warehouse reporting picks packed through the API).
 * From one seed (`FAULT_RUN_SEED`, printed; random when unset) it places `FAULT_RUN_ORDERS` orders (default 40; the
 * closing notes' runs use 200) a few at a time, by card (approved, declined, insufficient funds) and on account, over
 * the test catalogue (CAP-RED has 3 on hand: it runs out; the others are stocked for the run), and meanwhile:
 * - repeats a POST under the same Idempotency-Key (at once or up to 1.5 s later; a 409 while its twin is in progress is
 *   retried after its Retry-After): the same order;
 * - cancels orders 0–4 s after placing them (200, 202 or 409 are all answers a customer may get);
 * - queues provider faults at random: a 503, a slow answer (past the 2 s provider timeout: the outcome looks unknown),
 *   a lost answer (the effect happened), a 422 refusal;
 * - moves the warehouse's packing delay between 0.1 and 2 s (1.5 s at first);
 * - SIGKILLs one of the two workers every 5–12 s and starts it again 1 s later.
 * Then every order must settle (final, or `attention_required` for a person). Every doubt has an exit: an operator
 * retries each waiting order (the step again under its key) for up to 3 rounds, and then every order must be final.
 * One story must hold for each:
 * - one order per Idempotency-Key; exactly one effect per key in every provider's ledger;
 * - money: at most one authorization; a capture only of a shipped order and of the authorized amount; cancelled or
 *   failed after an authorization ⇒ exactly one void and no capture; completed card order ⇒ exactly one capture of
 *   its total; never a void and a capture together; an order on account never reaches the payments provider;
 * - a declined card: nothing reserved, invoiced, emailed or picked;
 * - stock: each product's `on_hand` and `reserved` equal its opening values plus its movements; a completed order's
 *   lines shipped (on hand down by the quantity, nothing left reserved), a cancelled or failed order's movements net
 *   to zero; nothing is left reserved;
 * - a cancelled order that was confirmed got exactly one cancellation notice, one that was not got none.
 *
 * Returns (issue 24, item 3). Once every order is final, the run places returns on a random subset of the completed
 * orders (`FAULT_RUN_RETURNS`, default half of them; some lines, some of their units) while the same chaos goes on
 * (workers SIGKILLed, provider faults, now also queued on the carrier's `return-label:`, the payments provider's
 * `refund:` and accounting's `credit-note:` keys, with a damaged-unit refund share `RETURN_DAMAGED_REFUND_PERCENT`
 * drawn from the seed):
 * - a POST /orders/:id/returns repeated under the same Idempotency-Key (the same return); two requests for the same
 *   units at once under different keys (both accepted when the order shipped enough for both, else one 202, one 422);
 * - withdrawals at random moments (even before the label: 200, 202, or 409 when the workflow could not take it);
 * - the warehouse's receipt through the API (random received and damaged quantities ≤ asked, a line sometimes left
 *   out, the POST sometimes repeated under its key, sometimes raced by a withdrawal: exactly one of them wins); a
 *   return whose label failed for good gets an operator's retry first, as the warehouse cannot receive without it;
 *   some returns are never received and are withdrawn once labelled instead.
 * Then the returns settle (final, or `attention_required`); an operator retries each waiting one (POST
 * /returns/:id/retry) for up to 3 rounds, after which every return is final (`completed` or `withdrawn`). Per return
 * and per order:
 * - a received return completed with the receipt the warehouse reported, a withdrawn one withdrawn; one return per
 *   accepted request;
 * - money: the refund is the rule's (undamaged units at their price, damaged ones at the stored share, rounded down
 *   per line); at most one refund (`refund:<id>`) and one credit note (`credit-note:<id>`) per return, exactly one of
 *   each for a completed return with an amount (the refund for card orders only, of that amount); the order's
 *   `payments.refunded_minor` is the sum of its refunded returns and at most what was captured; a withdrawn return:
 *   no refund, no credit note;
 * - stock: a return's `return:<id>:<sku>` movements restock exactly the undamaged units received (none for 0, none
 *   for a withdrawn return); the order's open returns never claim more than it shipped; per product, stock is still
 *   its opening values plus its movements (return movements included);
 * - emails: one label email at most, and the closing email for a completed return only; every provider ledger still
 *   holds exactly one effect per key.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { checkLedger, describeLedgerCheck, readLedgers } from '../../scripts/lib/ledgers.js';
import { PROVIDER_LIST } from '../../providers/index.js';
import { isTerminalStatus, OrderStatus } from '../../workflows/order-fulfilment.contract.js';
import { FINAL_RETURN_STATUSES, ReturnStatus } from '../../workflows/order-return.contract.js';
import { lineRefundMinor } from '../../activities/returns/return.activities.js';
import { RETURN_REASON_CODES } from '../../src/returns/return.dto.js';
import { testKeys } from '../helpers/api-keys.js';
import type { TestSku } from '../helpers/fixtures.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';
import { startWorkerProcess } from '../helpers/worker-process.js';

const ORDERS = Number(process.env.FAULT_RUN_ORDERS ?? 40);
const SEED = Number(process.env.FAULT_RUN_SEED ?? Math.floor(Math.random() * 2 ** 31));
/** Orders placed at once. */
const CONCURRENCY = 6;
/** How long every order gets to settle once the last one was placed, ms. */
const SETTLE_MS = 240_000;
/** Returns placed: `FAULT_RUN_RETURNS`, or half the completed orders (rounded up) when unset. */
const RETURNS = process.env.FAULT_RUN_RETURNS === undefined ? null : Number(process.env.FAULT_RUN_RETURNS);
const PROBLEMS = 'https://order-fulfilment.dev/problems/';

/** mulberry32: a small seeded generator, so a failing run can be repeated from its seed. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
const random = seeded(SEED);
const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const between = (min: number, max: number): number => Math.round(min + random() * (max - min));
/** The returns' own generator (from the same seed), so the orders' draws stay what they were for a seed. */
const returnsRandom = seeded(SEED ^ 0x5eed_2024);
const rPick = <T>(items: readonly T[]): T => items[Math.floor(returnsRandom() * items.length)]!;
const rBetween = (min: number, max: number): number => Math.round(min + returnsRandom() * (max - min));
/** The share of a damaged unit's price a return refunds (the API's RETURN_DAMAGED_REFUND_PERCENT for the run). */
const DAMAGED_REFUND_PERCENT = rPick([0, 0, 30, 50, 100]);

/** What the run did to one order. */
interface Placed {
  id: string;
  key: string;
  method: string | null;
  cancel: number | null;
  duplicate: boolean;
}

/** What the run did to one return, and what it was answered. */
interface ReturnRun {
  id: string;
  orderId: string;
  /** A card order (captured): the refund goes through the payments provider. */
  card: boolean;
  lines: Array<{ sku: string; quantity: number }>;
  /** A withdrawal was taken (200 or 202): the return must end `withdrawn`. */
  withdrawn: boolean;
  /** The receipt the return holds (every line, 0 for one left out), when the warehouse's report was taken (200). */
  receipt: Array<{ sku: string; quantity: number; damaged: number }> | null;
}

let stack: TestStack;
const workers: Array<ChildProcess | null> = [null, null];
const counts = { duplicates: 0, cancels: {} as Record<string, number>, faults: 0, kills: 0 };
/** What the returns part did (kills and faults are counted from its start). */
const returnCounts = {
  requests: 0,
  duplicates: 0,
  races: { both: 0, one: 0 },
  withdrawals: {} as Record<string, number>,
  receipts: {} as Record<string, number>,
  /** Receipts refused 409 while GET /returns/:id already showed a label (the workflow had not seen it yet). */
  earlyReceipts: 0,
  labelRetries: 0,
  retries: 0,
  faults: 0,
  kills: 0,
  faultsAtStart: 0,
};
let killing = true;

async function startWorker(slot: number): Promise<void> {
  workers[slot] = (await startWorkerProcess(stack, { PROVIDER_TIMEOUT_MS: '2000' })).child;
}

/** Kills one of the two workers every 5–12 s and starts it again 1 s later, until the run stops it. */
async function killWorkers(): Promise<void> {
  while (killing) {
    await sleep(between(5_000, 12_000));
    if (!killing) return;
    const slot = between(0, 1);
    const child = workers[slot];
    if (!child) continue;
    workers[slot] = null;
    child.kill('SIGKILL');
    await once(child, 'exit');
    counts.kills++;
    await sleep(1_000);
    await startWorker(slot);
  }
}

/** A fault at a random provider, for the next matching request (whichever order's it is). */
function injectRandomFault(): void {
  const provider = stack.sims.provider(pick(PROVIDER_LIST).name);
  const mode = pick(['unavailable', 'unavailable', 'slow', 'drop-response', 'reject'] as const);
  provider.injectFault({ mode, times: mode === 'unavailable' ? between(1, 3) : 1, delayMs: between(500, 4_000) });
  counts.faults++;
}

async function placeOne(): Promise<Placed> {
  const r = random();
  const method =
    r < 0.4 ? 'pm_card_ok' : r < 0.47 ? 'pm_card_declined' : r < 0.52 ? 'pm_card_insufficient_funds' : null;
  // CAP-RED (3 on hand) in about 1 line of 10: a few orders meet a shortage, most go through.
  const skus: TestSku[] = [...Array<TestSku>(9).fill('TEE-BLK-M', 0, 5).fill('MUG-WHT', 5), 'CAP-RED'];
  const lines = [...new Set([pick(skus), ...(random() < 0.3 ? [pick(skus)] : [])])].map((sku) => ({
    sku,
    quantity: between(1, 2),
  }));
  const body = {
    customer: { email: `fault-run-${between(1, 9_999)}@example.com` },
    lines,
    ...(method ? { payment: { method } } : {}),
  };
  if (random() < 0.2) injectRandomFault();
  if (random() < 0.15) stack.warehouse.configure({ WAREHOUSE_PACK_DELAY_MS: String(between(100, 2_000)) });
  const key = randomUUID();
  // A repeat that meets its twin still in progress is answered 409 with Retry-After, and retried as a client would.
  const post = async () => {
    for (let attempt = 1; ; attempt++) {
      const res = await stack.http.post('/orders').set('Idempotency-Key', key).send(body);
      if (res.status !== 409 || attempt === 20) return res;
      await sleep(Number(res.headers['retry-after'] ?? 1) * 1_000);
    }
  };
  const duplicate = random() < 0.3;
  const again = duplicate ? sleep(between(0, 1_500)).then(post) : null;
  const first = await post();
  expect(first.status, first.text).toBe(202);
  const id = first.body.id as string;
  if (again) {
    const repeat = await again;
    expect(repeat.status, repeat.text).toBe(202);
    expect(repeat.body.id).toBe(id);
    counts.duplicates++;
  }
  let cancel: number | null = null;
  if (random() < 0.25) {
    await sleep(between(0, 4_000));
    const res = await stack.http.post(`/orders/${id}/cancel`).set('Idempotency-Key', randomUUID()).send({
      reason: 'fault run',
    });
    expect([200, 202, 409], res.text).toContain(res.status);
    cancel = res.status;
    counts.cancels[res.status] = (counts.cancels[res.status] ?? 0) + 1;
  }
  return { id, key, method, cancel, duplicate };
}

/** A fault at the carrier's, the payments provider's or accounting's next return request (label, refund, credit). */
function injectReturnFault(): void {
  const [provider, keyPrefix] = rPick([
    ['carrier', 'return-label:'],
    ['payments', 'refund:'],
    ['accounting', 'credit-note:'],
  ] as const);
  const mode = rPick(['unavailable', 'unavailable', 'slow', 'drop-response', 'reject'] as const);
  stack.sims.provider(provider).injectFault({
    mode,
    keyPrefix,
    times: mode === 'unavailable' ? rBetween(1, 3) : 1,
    delayMs: rBetween(500, 4_000),
  });
  returnCounts.faults++;
}

type Agent = ReturnType<TestStack['as']>;
type Answer = Awaited<ReturnType<Agent['get']>>;

/**
 * POSTs as a client would: a 503 (no worker took the Update in time) or a 409 `idempotency-key-in-use` (its twin is
 * in progress) is repeated under the same Idempotency-Key after its Retry-After.
 */
async function postAsClient(agent: Agent, path: string, key: string, body: object): Promise<Answer> {
  for (let attempt = 1; ; attempt++) {
    const res = await agent.post(path).set('Idempotency-Key', key).send(body);
    const busy = res.status === 409 && res.body?.type === `${PROBLEMS}idempotency-key-in-use`;
    if ((res.status !== 503 && !busy) || attempt === 20) return res;
    await sleep(Number(res.headers['retry-after'] ?? 1) * 1_000);
  }
}

/** GET /returns/:id (operator view: with `attentionReason`). */
async function getReturn(id: string): Promise<Record<string, unknown>> {
  const res = await stack.ops.get(`/returns/${id}`);
  expect(res.status, res.text).toBe(200);
  return res.body as Record<string, unknown>;
}

/** Polls until the return is final or waits for a person; returns its body (operator view). */
async function returnSettled(id: string, deadline: number): Promise<Record<string, unknown>> {
  for (;;) {
    const body = await getReturn(id);
    const status = body.status as ReturnStatus;
    if (FINAL_RETURN_STATUSES.includes(status) || status === ReturnStatus.AttentionRequired) return body;
    if (Date.now() > deadline) throw new Error(`return ${id} still ${status} after the settle bound`);
    await sleep(250);
  }
}

/** The customer withdraws the return (200 or 202: taken; 409: too late, or its workflow could not take it yet). */
async function withdraw(run: ReturnRun, moment: string): Promise<boolean> {
  const res = await postAsClient(stack.http, `/returns/${run.id}/withdraw`, randomUUID(), {});
  expect([200, 202, 409], `withdrawal of return ${run.id}: ${res.text}`).toContain(res.status);
  const tag = `${moment} ${res.status}`;
  returnCounts.withdrawals[tag] = (returnCounts.withdrawals[tag] ?? 0) + 1;
  if (res.status === 409) expect(res.body.type).toBe(`${PROBLEMS}return-not-withdrawable`);
  if (res.status !== 409) run.withdrawn = true;
  return res.status !== 409;
}

/**
 * Waits until the return can take the warehouse's receipt: it has its label (`label_created`, or waiting for a
 * person over the label's email). A label that failed for good gets an operator's retry first.
 * @returns false when the return ended meanwhile (withdrawn).
 */
async function untilLabelled(run: ReturnRun, deadline: number): Promise<boolean> {
  let retriedAt = 0;
  for (;;) {
    const body = await getReturn(run.id);
    const status = body.status as ReturnStatus;
    if (FINAL_RETURN_STATUSES.includes(status)) return false;
    if (body.label !== null && (status === ReturnStatus.LabelCreated || status === ReturnStatus.AttentionRequired)) {
      return true;
    }
    if (status === ReturnStatus.AttentionRequired && Date.now() - retriedAt > 3_000) {
      const res = await postAsClient(stack.ops, `/returns/${run.id}/retry`, randomUUID(), { reason: 'fault run' });
      expect([202, 409], `retry of return ${run.id}'s label: ${res.text}`).toContain(res.status);
      returnCounts.labelRetries++;
      retriedAt = Date.now();
    }
    if (Date.now() > deadline) throw new Error(`return ${run.id} still ${status} without a label`);
    await sleep(250);
  }
}

/**
 * The warehouse reports the return received: random quantities ≤ asked (a line of several sometimes left out), the
 * POST sometimes repeated under its key, sometimes raced by the customer's withdrawal (exactly one of them wins).
 * A 409 while the workflow has not yet seen its label (GET showed it) is repeated a moment later under the same key.
 */
async function receive(run: ReturnRun): Promise<void> {
  const left = run.lines.length > 1 && returnsRandom() < 0.2 ? rPick(run.lines).sku : null;
  // Mostly every unit asked for, at times fewer (even none); mostly undamaged, at times some or all damaged.
  const full = run.lines.map((l) => {
    const quantity = l.sku === left ? 0 : returnsRandom() < 0.3 ? rBetween(0, l.quantity) : l.quantity;
    return { sku: l.sku, quantity, damaged: returnsRandom() < 0.3 ? rBetween(0, quantity) : 0 };
  });
  const body = { lines: full.filter((l) => l.sku !== left) };
  const key = randomUUID();
  const warehouse = stack.as(testKeys().warehouse.key);
  const report = async () => {
    const res = await postAsClient(warehouse, `/returns/${run.id}/received`, key, body);
    expect([200, 409], `receipt of return ${run.id}: ${res.text}`).toContain(res.status);
    if (res.status === 409) expect(res.body.type).toBe(`${PROBLEMS}return-not-awaiting-receipt`);
    return res;
  };
  const racing = returnsRandom() < 0.15 ? sleep(rBetween(0, 300)).then(() => withdraw(run, 'racing a receipt')) : null;
  const repeat = returnsRandom() < 0.25 ? sleep(rBetween(0, 1_000)).then(report) : null;
  const answers: Answer[] = [];
  for (let attempt = 1; ; attempt++) {
    const res = await report();
    answers.push(res);
    if (res.status === 200 || racing || run.withdrawn || attempt === 40) break;
    returnCounts.earlyReceipts++;
    await sleep(500);
  }
  if (repeat) answers.push(await repeat);
  const withdrawnToo = racing ? await racing : false;
  // Once taken, the same key answers the same receipt.
  const taken = answers.find((r) => r.status === 200);
  if (taken) answers.push(await report());
  for (const res of answers) returnCounts.receipts[res.status] = (returnCounts.receipts[res.status] ?? 0) + 1;
  if (taken) {
    expect(taken.body.receipt.lines, `receipt of return ${run.id}`).toEqual(body.lines);
    for (const res of answers.filter((r) => r.status === 200)) expect(res.body.receipt).toEqual(taken.body.receipt);
    expect(answers.at(-1)!.status, `receipt of return ${run.id} under its key again`).toBe(200);
    run.receipt = full;
  }
  if (racing) expect(withdrawnToo !== !!taken, `return ${run.id}: receipt or withdrawal, exactly one`).toBe(true);
  else expect(taken, `receipt of return ${run.id}: ${answers.at(-1)!.text}`).toBeDefined();
}

/** One return's story after it was accepted: withdrawn at some moment, or received. */
async function driveReturn(run: ReturnRun, deadline: number): Promise<void> {
  const plan = returnsRandom() < 0.2 ? 'withdraw' : 'receive';
  if (returnsRandom() < 0.15) {
    // A withdrawal at a random moment (before or after the label); a 409 leaves the return going.
    await sleep(rBetween(0, 3_000));
    if (await withdraw(run, 'at random')) return;
  }
  if (!(await untilLabelled(run, deadline))) return;
  if (plan === 'withdraw') {
    await sleep(rBetween(0, 1_000));
    expect(await withdraw(run, 'instead of a receipt'), `withdrawal of labelled return ${run.id}`).toBe(true);
    return;
  }
  await sleep(rBetween(0, 1_500));
  await receive(run);
}

/**
 * Asks for a return of some of a completed order's units (repeated under its key at times; raced at times by a
 * request for the same units under another key), then drives each accepted return.
 */
async function returnOne(
  order: { id: string; card: boolean; lines: Array<{ sku: string; quantity: number }> },
  deadline: number,
): Promise<ReturnRun[]> {
  let chosen = order.lines.filter(() => returnsRandom() < 0.7);
  if (chosen.length === 0) chosen = [rPick(order.lines)];
  const lines = chosen.map((l) => ({ sku: l.sku, quantity: rBetween(1, l.quantity) }));
  const body = { lines, reason: { code: rPick(RETURN_REASON_CODES), text: 'fault run' } };
  if (returnsRandom() < 0.35) injectReturnFault();
  const key = randomUUID();
  const path = `/orders/${order.id}/returns`;
  const duplicate = returnsRandom() < 0.3;
  const race = returnsRandom() < 0.2;
  const again = duplicate ? sleep(rBetween(0, 1_500)).then(() => postAsClient(stack.http, path, key, body)) : null;
  const [first, rival] = await Promise.all([
    postAsClient(stack.http, path, key, body),
    race ? postAsClient(stack.http, path, randomUUID(), body) : null,
  ]);
  const answers = [first, ...(rival ? [rival] : [])];
  returnCounts.requests += answers.length;
  for (const res of answers) {
    expect([202, 422], `return of order ${order.id}: ${res.text}`).toContain(res.status);
    if (res.status === 422) expect(res.body.type).toBe(`${PROBLEMS}return-exceeds-shipped`);
    else expect(res.headers.location).toBe(`/returns/${res.body.id as string}`);
  }
  if (rival) {
    // Both fit when the order shipped twice what each asks for; else the order's lock lets exactly one through.
    const shipped = new Map(order.lines.map((l) => [l.sku, l.quantity]));
    const bothFit = lines.every((l) => 2 * l.quantity <= shipped.get(l.sku)!);
    expect(answers.map((r) => r.status).sort(), `two requests for the same units of order ${order.id}`).toEqual(
      bothFit ? [202, 202] : [202, 422],
    );
    if (bothFit) returnCounts.races.both++;
    else returnCounts.races.one++;
  } else {
    expect(first.status, `return of order ${order.id}: ${first.text}`).toBe(202);
  }
  if (again) {
    const repeat = await again;
    expect(repeat.status, `repeated return request of order ${order.id}: ${repeat.text}`).toBe(first.status);
    if (first.status === 202) expect(repeat.body.id).toBe(first.body.id);
    returnCounts.duplicates++;
  }
  const runs = answers
    .filter((r) => r.status === 202)
    .map((r): ReturnRun => ({
      id: r.body.id as string,
      orderId: order.id,
      card: order.card,
      lines,
      withdrawn: false,
      receipt: null,
    }));
  await Promise.all(runs.map((run) => driveReturn(run, deadline)));
  return runs;
}

/** Polls until the order is final or waits for a person; returns its body (operator view). */
async function settled(id: string, deadline: number): Promise<Record<string, unknown>> {
  for (;;) {
    const res = await stack.ops.get(`/orders/${id}`);
    expect(res.status).toBe(200);
    const status = res.body.status as string;
    if (isTerminalStatus(status) || status === OrderStatus.AttentionRequired) return res.body;
    if (Date.now() > deadline) throw new Error(`order ${id} still ${status} after the settle bound`);
    await sleep(250);
  }
}

beforeAll(async () => {
  stack = await startTestStack({
    worker: false,
    overrides: { RETURN_DAMAGED_REFUND_PERCENT: String(DAMAGED_REFUND_PERCENT) },
  });
  await Promise.all([startWorker(0), startWorker(1)]);
}, 120_000);
afterAll(async () => {
  killing = false;
  for (const c of workers) c?.kill('SIGKILL');
  await stack?.close();
});

it(`a randomized fault run keeps one story per order (${ORDERS} orders)`, async () => {
  console.log(
    `fault run: seed ${SEED} (FAULT_RUN_SEED=${SEED} repeats it), ${ORDERS} orders, damaged units refunded at ` +
      `${DAMAGED_REFUND_PERCENT} %`,
  );
  const startedAt = Date.now();
  // Stock for the run (CAP-RED keeps its 3: it runs out), and a packing delay that leaves cancels a window.
  await stack.db.prisma.product.updateMany({ where: { sku: { not: 'CAP-RED' } }, data: { onHand: 10 * ORDERS } });
  stack.warehouse.configure({ WAREHOUSE_PACK_DELAY_MS: '1500' });
  const opening = new Map(
    (await stack.db.prisma.product.findMany()).map((p) => [p.sku, { onHand: p.onHand, reserved: p.reserved }]),
  );
  const killer = killWorkers();
  const placed: Placed[] = [];
  for (let next = 0; next < ORDERS; next += CONCURRENCY) {
    const batch = Array.from({ length: Math.min(CONCURRENCY, ORDERS - next) }, () =>
      sleep(between(0, 500)).then(placeOne),
    );
    placed.push(...(await Promise.all(batch)));
  }
  const deadline = Date.now() + SETTLE_MS;
  const bodies = new Map<string, Record<string, unknown>>();
  for (const p of placed) bodies.set(p.id, await settled(p.id, deadline));
  killing = false;
  await killer;

  // Every doubt has an exit: an operator retries each order that waits for a person (the step again under its key: a
  // provider that acted replays its answer), until none waits; a wait that no retry ends within 3 rounds fails.
  const waited = placed.filter((p) => bodies.get(p.id)!.status === OrderStatus.AttentionRequired).length;
  let retries = 0;
  for (let round = 1; round <= 3; round++) {
    const waiting = placed.filter((p) => bodies.get(p.id)!.status === OrderStatus.AttentionRequired);
    for (const p of waiting) {
      const res = await stack.ops.post(`/orders/${p.id}/retry`).set('Idempotency-Key', randomUUID()).send({});
      expect([202, 409], res.text).toContain(res.status);
      retries++;
    }
    await sleep(2_000);
    for (const p of waiting) bodies.set(p.id, await settled(p.id, Date.now() + SETTLE_MS));
  }
  const stuck = placed.filter((p) => !isTerminalStatus(bodies.get(p.id)!.status as string));
  expect(
    stuck.map((p) => `${p.id}: ${JSON.stringify(bodies.get(p.id)!.failure)}`),
    'orders no retry settled',
  ).toEqual([]);

  const completed = new Set(placed.filter((p) => bodies.get(p.id)!.status === OrderStatus.Completed).map((p) => p.id));
  const ordersMs = Date.now() - startedAt;

  // Returns on some of the completed orders, while workers die and providers fail again.
  const returnsStartedAt = Date.now();
  const returned = [...completed]
    .map((id) => ({ id, sort: returnsRandom() }))
    .sort((a, b) => a.sort - b.sort)
    .slice(0, RETURNS ?? Math.ceil(completed.size / 2))
    .map(({ id }) => {
      const p = placed.find((o) => o.id === id)!;
      const lines = (bodies.get(id)!.lines as Array<{ sku: string; quantity: number }>).map((l) => ({
        sku: l.sku,
        quantity: l.quantity,
      }));
      return { id, card: p.method !== null, lines };
    });
  returnCounts.faultsAtStart = counts.faults;
  const killsBefore = counts.kills;
  killing = true;
  const returnKiller = killWorkers();
  const returnDeadline = Date.now() + SETTLE_MS;
  const runs = (
    await Promise.all(
      returned.map((order, i) =>
        sleep(i * 400 + rBetween(0, 400)).then(() => {
          if (returnsRandom() < 0.2) injectRandomFault();
          return returnOne(order, returnDeadline);
        }),
      ),
    )
  ).flat();
  const returnBodies = new Map<string, Record<string, unknown>>();
  for (const run of runs) returnBodies.set(run.id, await returnSettled(run.id, returnDeadline));
  killing = false;
  await returnKiller;
  returnCounts.kills = counts.kills - killsBefore;

  // Every doubt has an exit here too: an operator retries each return that waits for a person, for up to 3 rounds.
  const returnsWaited = runs.filter((r) => returnBodies.get(r.id)!.status === ReturnStatus.AttentionRequired).length;
  for (let round = 1; round <= 3; round++) {
    const waiting = runs.filter((r) => returnBodies.get(r.id)!.status === ReturnStatus.AttentionRequired);
    for (const r of waiting) {
      const res = await postAsClient(stack.ops, `/returns/${r.id}/retry`, randomUUID(), { reason: 'fault run' });
      expect([202, 409], res.text).toContain(res.status);
      returnCounts.retries++;
    }
    if (waiting.length === 0) break;
    await sleep(2_000);
    for (const r of waiting) returnBodies.set(r.id, await returnSettled(r.id, Date.now() + SETTLE_MS));
  }
  const openReturns = runs.filter(
    (r) => !FINAL_RETURN_STATUSES.includes(returnBodies.get(r.id)!.status as ReturnStatus),
  );
  expect(
    openReturns.map(
      (r) => `${r.id}: ${String(returnBodies.get(r.id)!.status)} ${String(returnBodies.get(r.id)!.attentionReason)}`,
    ),
    'returns no retry settled',
  ).toEqual([]);
  const returnsMs = Date.now() - returnsStartedAt;

  // One order per key, and every provider's ledger: exactly one effect per key (a key for every completed order at
  // the providers every order calls; the returns' keys too).
  expect(new Set(placed.map((p) => p.id)).size).toBe(placed.length);
  for (const ledger of await readLedgers(stack.sims.url)) {
    const check = checkLedger(ledger, completed);
    expect(check.ok, describeLedgerCheck(check, completed.size)).toBe(true);
  }

  const count = (provider: string, key: string) => stack.sims.provider(provider).ledger.count(key);
  const stories: Record<string, number> = {};
  const money = { authorizations: 0, captures: 0, voids: 0 };
  for (const p of placed) {
    const order = bodies.get(p.id)!;
    const status = order.status as string;
    const story = `${status}${order.failure ? ` ${(order.failure as { code: string }).code}` : ''}`;
    stories[story] = (stories[story] ?? 0) + 1;
    const at = (key: string) => `${key}:${p.id}`;
    const auth = count('payments', at('payment-authorization'));
    const capture = count('payments', at('payment-capture'));
    const voided = count('payments', at('payment-void'));
    const shipped = count('carrier', at('shipment'));
    money.authorizations += auth;
    money.captures += capture;
    money.voids += voided;
    const where = `order ${p.id} (${story}, ${p.method ?? 'on account'}, cancel ${p.cancel ?? 'none'})`;
    const payment = await stack.db.prisma.payment.findUnique({ where: { orderId: p.id } });
    const authorized = payment?.authorizedAt != null;

    // Money.
    expect(capture + voided, `${where}: a void and a capture`).toBeLessThanOrEqual(1);
    expect(capture, `${where}: a capture without a shipment`).toBeLessThanOrEqual(shipped);
    if (p.method === null) {
      expect(auth + capture + voided + (payment ? 1 : 0), `${where}: on account at the payments provider`).toBe(0);
    }
    if (capture === 1) {
      const captured = stack.payments.ledger.effects(at('payment-capture'))[0]!.request as { amountMinor: number };
      expect(captured.amountMinor, `${where}: captured amount`).toBe(order.totalMinor);
      expect(payment?.amountMinor, `${where}: authorized amount`).toBe(order.totalMinor);
    }
    if (status === OrderStatus.Completed && p.method !== null) {
      expect([auth, capture, payment?.capturedMinor], `${where}: completed card order`).toEqual([
        1,
        1,
        order.totalMinor,
      ]);
    }
    if ((status === OrderStatus.Cancelled || status === OrderStatus.Failed) && authorized) {
      expect([voided, capture, payment?.status], `${where}: stopped after an authorization`).toEqual([1, 0, 'voided']);
    }
    if (!authorized) expect(capture + voided, `${where}: no authorization, yet a capture or void`).toBe(0);

    // A declined card: nothing else happened.
    if ((order.failure as { code?: string } | null)?.code === 'payment_declined') {
      const movements = await stack.db.prisma.inventoryMovement.count({ where: { orderId: p.id } });
      const invoice = await stack.db.prisma.invoice.findUnique({ where: { orderId: p.id } });
      expect(
        [movements, invoice, count('email', at('order-confirmation')), count('warehouse', at('pick'))],
        `${where}: declined`,
      ).toEqual([0, null, 0, 0]);
    }

    // Stock per order: shipped lines of a completed order, nothing left of a stopped one (returns are checked below).
    const [net] = await stack.db.prisma.$queryRaw<Array<{ on_hand: number; reserved: number }>>`
      SELECT COALESCE(sum(on_hand_delta), 0)::int AS on_hand, COALESCE(sum(reserved_delta), 0)::int AS reserved
      FROM inventory_movements WHERE order_id = ${p.id}::uuid AND reason <> 'return'`;
    const quantity = (order.lines as Array<{ quantity: number }>).reduce((n, l) => n + l.quantity, 0);
    if (status === OrderStatus.Completed) expect(net, `${where}: stock`).toEqual({ on_hand: -quantity, reserved: 0 });
    if (status === OrderStatus.Cancelled || status === OrderStatus.Failed) {
      expect(net, `${where}: stock`).toEqual({ on_hand: 0, reserved: 0 });
    }

    // The customer's notices.
    if (status === OrderStatus.Cancelled) {
      expect(count('email', at('order-cancellation')), `${where}: cancellation notice`).toBe(
        count('email', at('order-confirmation')),
      );
    }
  }

  const returnFigures = await checkReturns(runs, returnBodies);

  // Stock per product: opening values plus every movement (the returns' restocks included).
  const sums = await stack.db.prisma.$queryRaw<Array<{ sku: string; on_hand: number; reserved: number }>>`
    SELECT sku, sum(on_hand_delta)::int AS on_hand, sum(reserved_delta)::int AS reserved
    FROM inventory_movements GROUP BY sku`;
  for (const product of await stack.db.prisma.product.findMany()) {
    const moved = sums.find((s) => s.sku === product.sku) ?? { on_hand: 0, reserved: 0 };
    const start = opening.get(product.sku)!;
    expect([product.onHand, product.reserved], `stock of ${product.sku}`).toEqual([
      start.onHand + moved.on_hand,
      start.reserved + moved.reserved,
    ]);
  }

  // Every order ended: nothing is left reserved.
  const reserved = await stack.db.prisma.product.aggregate({ _sum: { reserved: true } });
  expect(reserved._sum.reserved, 'units still reserved once every order ended').toBe(0);

  console.log(
    `fault run (seed ${SEED}): ${ORDERS} orders ${JSON.stringify(stories)} (${waited} waited for a person, ` +
      `${retries} operator retries); ${counts.duplicates} repeated POSTs, ` +
      `cancels answered ${JSON.stringify(counts.cancels)}, ${counts.faults} provider faults, ${counts.kills} worker ` +
      `kills; ${money.authorizations} authorizations, ${money.captures} captures, ${money.voids} voids ` +
      `(${Math.round(ordersMs / 1000)} s)`,
  );
  console.log(
    `fault run (seed ${SEED}), returns: ${runs.length} returns of ${returned.length} orders ` +
      `(${returnCounts.requests} requests, ${returnCounts.duplicates} repeated, races ${JSON.stringify(returnCounts.races)}) ` +
      `${JSON.stringify(returnFigures.statuses)}; withdrawals answered ${JSON.stringify(returnCounts.withdrawals)}, ` +
      `receipts answered ${JSON.stringify(returnCounts.receipts)} (${returnCounts.earlyReceipts} refused before the ` +
      `workflow saw the label); ${returnsWaited} waited for a person, ${returnCounts.labelRetries} label retries and ` +
      `${returnCounts.retries} operator retries; ${returnFigures.refunds} refunds (${returnFigures.refundedMinor} minor), ` +
      `${returnFigures.creditNotes} credit notes; ${returnFigures.received} units received, ` +
      `${returnFigures.damaged} damaged, ${returnFigures.restocked} restocked (damaged refunded at ` +
      `${DAMAGED_REFUND_PERCENT} %); ${returnCounts.faults} faults on return keys + ` +
      `${counts.faults - returnCounts.faultsAtStart} anywhere, ${returnCounts.kills} worker kills ` +
      `(${Math.round(returnsMs / 1000)} s)`,
  );
}, 900_000);

/**
 * The returns' invariants, per return and per order (see the header). @returns figures for the closing line.
 */
async function checkReturns(
  runs: readonly ReturnRun[],
  bodies: ReadonlyMap<string, Record<string, unknown>>,
): Promise<{
  statuses: Record<string, number>;
  received: number;
  damaged: number;
  refunds: number;
  creditNotes: number;
  restocked: number;
  refundedMinor: number;
}> {
  const figures = {
    statuses: {} as Record<string, number>,
    received: 0,
    damaged: 0,
    refunds: 0,
    creditNotes: 0,
    restocked: 0,
    refundedMinor: 0,
  };
  const count = (provider: string, key: string) => stack.sims.provider(provider).ledger.count(key);
  for (const run of runs) {
    const body = bodies.get(run.id)!;
    const status = body.status as ReturnStatus;
    figures.statuses[status] = (figures.statuses[status] ?? 0) + 1;
    const where = `return ${run.id} of order ${run.orderId} (${status}, ${run.card ? 'card' : 'on account'})`;
    const row = await stack.db.prisma.return.findUniqueOrThrow({ where: { id: run.id }, include: { lines: true } });
    const refunds = count('payments', `refund:${run.id}`);
    const credits = count('accounting', `credit-note:${run.id}`);
    figures.refunds += refunds;
    figures.creditNotes += credits;
    expect([refunds, credits], `${where}: at most one refund and one credit note`).toEqual([
      Math.min(refunds, 1),
      Math.min(credits, 1),
    ]);
    const movements = await stack.db.prisma.inventoryMovement.findMany({
      where: { id: { startsWith: `return:${run.id}:` } },
    });
    figures.restocked += movements.reduce((n, m) => n + m.onHandDelta, 0);
    expect(count('email', `return-label-email:${run.id}`), `${where}: label email`).toBeLessThanOrEqual(1);

    if (run.withdrawn) {
      expect(status, `${where}: a withdrawal was taken`).toBe(ReturnStatus.Withdrawn);
      expect(
        [refunds, credits, movements.length, row.refundMinor, row.refundId, row.creditNoteId, row.receivedAt],
        `${where}: withdrawn, yet refunded, credited, restocked or received`,
      ).toEqual([0, 0, 0, null, null, null, null]);
      expect(count('email', `return-refund-email:${run.id}`), `${where}: closing email`).toBe(0);
      continue;
    }
    expect(status, `${where}: the receipt was taken`).toBe(ReturnStatus.Completed);
    const receipt = run.receipt!;
    figures.received += receipt.reduce((n, l) => n + l.quantity, 0);
    figures.damaged += receipt.reduce((n, l) => n + l.damaged, 0);
    // What the warehouse reported is what the return holds.
    expect(
      row.lines
        .map((l) => ({ sku: l.sku, quantity: l.receivedQuantity, damaged: l.damagedQuantity }))
        .sort((a, b) => a.sku.localeCompare(b.sku)),
      `${where}: received lines`,
    ).toEqual([...receipt].sort((a, b) => a.sku.localeCompare(b.sku)));
    // The refund rule: undamaged units at their price, damaged ones at the stored share, rounded down per line.
    expect(row.damagedRefundPercent, `${where}: damaged share`).toBe(DAMAGED_REFUND_PERCENT);
    const rule = row.lines.reduce((n, l) => n + lineRefundMinor(l, row.damagedRefundPercent), 0);
    expect(row.refundMinor, `${where}: refund amount`).toBe(rule);
    const amount = row.refundMinor!;
    figures.refundedMinor += row.refundId ? amount : 0;
    expect(credits, `${where}: credit note`).toBe(amount > 0 ? 1 : 0);
    expect(row.creditNoteId !== null, `${where}: credit note id`).toBe(amount > 0);
    if (credits === 1) {
      const note = stack.accounting.ledger.effects(`credit-note:${run.id}`)[0]!.request as { totalMinor: number };
      expect(note.totalMinor, `${where}: credit note amount`).toBe(amount);
    }
    const refundDue = run.card && amount > 0;
    expect(refunds, `${where}: refund`).toBe(refundDue ? 1 : 0);
    expect(row.refundId !== null, `${where}: refund id`).toBe(refundDue);
    if (refunds === 1) {
      const refund = stack.payments.ledger.effects(`refund:${run.id}`)[0]!.request as { amountMinor: number };
      expect(refund.amountMinor, `${where}: refunded amount`).toBe(amount);
    }
    expect(count('carrier', `return-label:${run.id}`), `${where}: label`).toBe(1);
    expect(count('email', `return-refund-email:${run.id}`), `${where}: closing email`).toBe(1);
    // Restock: exactly the undamaged units received, one movement per SKU with any.
    expect(
      movements
        .map((m) => [m.id, m.reason, m.onHandDelta, m.reservedDelta, m.orderId])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
      `${where}: restock`,
    ).toEqual(
      receipt
        .filter((l) => l.quantity - l.damaged > 0)
        .map((l) => [`return:${run.id}:${l.sku}`, 'return', l.quantity - l.damaged, 0, run.orderId])
        .sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
  }

  // Per order: one return per accepted request, refunds within what was captured, open returns within what shipped.
  for (const orderId of new Set(runs.map((r) => r.orderId))) {
    const mine = runs.filter((r) => r.orderId === orderId);
    const rows = await stack.db.prisma.return.findMany({ where: { orderId }, include: { lines: true } });
    expect(rows.map((r) => r.id).sort(), `order ${orderId}: its returns`).toEqual(mine.map((r) => r.id).sort());
    const payment = await stack.db.prisma.payment.findUnique({ where: { orderId } });
    const refunded = rows.reduce((n, r) => n + (r.refundId ? r.refundMinor! : 0), 0);
    if (mine[0]!.card) {
      expect(payment?.refundedMinor, `order ${orderId}: refunded_minor = its returns' refunds`).toBe(refunded);
      expect(refunded, `order ${orderId}: refunds within the capture`).toBeLessThanOrEqual(payment!.capturedMinor);
    } else {
      expect([payment, refunded], `order ${orderId}: on account, yet a payment or a refund`).toEqual([null, 0]);
    }
    const shipped = await stack.db.prisma.$queryRaw<Array<{ sku: string; shipped: number }>>`
      SELECT sku, (-sum(on_hand_delta))::int AS shipped FROM inventory_movements
      WHERE order_id = ${orderId}::uuid AND reason = 'shipment' GROUP BY sku`;
    const open = rows.filter((r) => r.status !== ReturnStatus.Withdrawn && r.status !== ReturnStatus.Expired);
    for (const { sku, shipped: units } of shipped) {
      const claimed = open
        .flatMap((r) => r.lines)
        .filter((l) => l.sku === sku)
        // A received return claims what came back; one not received yet, what it asked for.
        .reduce((n, l) => n + (l.receivedQuantity ?? l.quantity), 0);
      expect(claimed, `order ${orderId}: open returns of ${sku} within what shipped`).toBeLessThanOrEqual(units);
    }
    const skus = new Set(shipped.map((s) => s.sku));
    expect(
      rows.flatMap((r) => r.lines).filter((l) => !skus.has(l.sku)),
      `order ${orderId}: returns of unshipped SKUs`,
    ).toEqual([]);
  }
  return figures;
}
