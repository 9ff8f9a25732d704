/**
 * What operators see, end to end: the API's `GET /metrics`, the real worker process (src/worker.ts, run with tsx)
 * with its Prometheus endpoint on `WORKER_METRICS_PORT` and its JSON log lines, the `CustomerId` search attribute,
 * the page at `/`, and the documented body limit. One order that goes through, one that fails for lack of stock.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import getPort from 'get-port';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JSON_BODY_LIMIT_BYTES } from '../../src/common/api-limits.js';
import { METRICS } from '../../src/metrics/metric-definitions.js';
import { customerSearchId } from '../../src/orders/workflow/customer-id.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/order-fulfilment.contract.js';
import { PROBLEM_JSON, testKeys } from '../helpers/api-app.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';

const WORKER_ENTRY = fileURLToPath(new URL('../../src/worker.ts', import.meta.url));
/** Statuses an order stays in until someone acts: final ones, and waiting for an operator. */
const SETTLED = ['completed', 'failed', 'cancelled', 'attention_required'];
const EMAIL = 'observed.customer@example.com';

let stack: TestStack;
let worker: ChildProcess;
let workerMetricsUrl: string;
/** The worker's stdout, parsed: one JSON object per line. */
const workerLines: Array<Record<string, unknown>> = [];
const workerText: string[] = [];

async function until<T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 45_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 150));
  }
}

async function settled(id: string): Promise<Record<string, unknown>> {
  return until(`order ${id} to settle`, async () => {
    const res = await stack.http.get(`/orders/${id}`).expect(200);
    return SETTLED.includes(res.body.status) ? (res.body as Record<string, unknown>) : undefined;
  });
}

/** Parses a Prometheus text exposition into `name{labels}` → value. */
function samples(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const cut = line.lastIndexOf(' ');
    out.set(line.slice(0, cut), Number(line.slice(cut + 1)));
  }
  return out;
}

/** The value of the sample whose name is `name` and whose labels include every `labels` pair. */
function sample(all: Map<string, number>, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const [key, value] of all) {
    const brace = key.indexOf('{');
    if ((brace < 0 ? key : key.slice(0, brace)) !== name) continue;
    if (Object.entries(labels).every(([k, v]) => key.includes(`${k}="${v}"`))) return value;
  }
  return undefined;
}

beforeAll(async () => {
  stack = await startTestStack({ worker: false });
  const port = await getPort();
  workerMetricsUrl = `http://127.0.0.1:${port}/metrics`;
  const env: NodeJS.ProcessEnv = { ...process.env, ...stack.env };
  Object.assign(env, { WORKER_METRICS_PORT: String(port), HOST: '127.0.0.1', LOG_FORMAT: 'json', LOG_LEVEL: 'info' });
  worker = spawn(process.execPath, ['--import', 'tsx', WORKER_ENTRY], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  createInterface({ input: worker.stdout! }).on('line', (line) => {
    workerText.push(line);
    try {
      workerLines.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      // webpack's bundle report is not JSON
    }
  });
  await until('the worker to run', async () =>
    workerLines.some((l) => l.msg === 'worker running') ? true : undefined,
  );
}, 120_000);

afterAll(async () => {
  if (worker && worker.exitCode === null) {
    worker.kill('SIGTERM');
    await new Promise((resolve) => worker.once('exit', resolve));
  }
  await stack?.close();
});

describe('observability', () => {
  let okId: string;
  let failedId: string;

  it('accepts and follows orders; the API counts accepted orders and idempotency outcomes', async () => {
    const body = { customer: { email: EMAIL, name: 'Observed' }, lines: [{ sku: 'MUG-WHT', quantity: 1 }] };
    const first = await stack.http.post('/orders').set('Idempotency-Key', 'obs-key-1').send(body).expect(202);
    okId = first.body.id;
    const replay = await stack.http.post('/orders').set('Idempotency-Key', 'obs-key-1').send(body).expect(202);
    expect(replay.headers['idempotent-replayed']).toBe('true');
    await stack.http
      .post('/orders')
      .set('Idempotency-Key', 'obs-key-1')
      .send({ ...body, lines: [{ sku: 'MUG-WHT', quantity: 2 }] })
      .expect(422);
    const tooMany = await stack.http
      .post('/orders')
      .send({ customer: { email: EMAIL }, lines: [{ sku: 'CAP-RED', quantity: 4 }] })
      .expect(202);
    failedId = tooMany.body.id;

    expect((await settled(failedId)).status).toBe('failed');
    expect((await settled(okId)).status).toBe('completed');

    await stack.http.get('/no-such-route/42').expect(404);
    await stack.http.get('/').expect(200);
    const res = await stack.http.get('/metrics').expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain/);
    const api = samples(res.text);
    // Labelled with the API client of the key (the stack's default test key).
    expect(sample(api, METRICS.ordersAccepted.name, { client: testKeys().shop.client })).toBe(2);
    expect(sample(api, METRICS.idempotencyOutcomes.name, { outcome: 'new' })).toBe(1);
    expect(sample(api, METRICS.idempotencyOutcomes.name, { outcome: 'replayed' })).toBe(1);
    expect(sample(api, METRICS.idempotencyOutcomes.name, { outcome: 'reused' })).toBe(1);
    expect(sample(api, METRICS.orders.name, { status: 'failed' })).toBe(1);
    expect(sample(api, METRICS.orders.name, { status: 'received' })).toBe(0);
    expect(sample(api, METRICS.oldestOpenOrderAge.name, { status: 'received' })).toBe(0);
    expect(sample(api, METRICS.longestInStatus.name, { status: 'attention_required' })).toBe(0);
    // Requests by method, route template and status (RED): never a raw path, an id or a key in a label.
    expect(sample(api, METRICS.httpRequests.name, { method: 'POST', route: '/orders', status: '202' })).toBe(3);
    expect(sample(api, METRICS.httpRequests.name, { method: 'POST', route: '/orders', status: '422' })).toBe(1);
    expect(
      sample(api, METRICS.httpRequests.name, { method: 'GET', route: '/orders/:id', status: '200' }),
    ).toBeGreaterThanOrEqual(2);
    expect(
      sample(api, `${METRICS.httpRequestDuration.name}_count`, { method: 'POST', route: '/orders', status: '202' }),
    ).toBe(3);
    // A path no route matches is `unmatched`, never its raw path or the middleware's wildcard mount.
    expect(sample(api, METRICS.httpRequests.name, { route: 'unmatched', status: '404' })).toBeGreaterThanOrEqual(1);
    expect(
      sample(api, METRICS.httpRequests.name, { method: 'GET', route: 'static', status: '200' }),
    ).toBeGreaterThanOrEqual(1);
    expect(res.text).not.toContain('splat');
    expect(res.text).not.toContain('no-such-route');
    expect(res.text).not.toContain(okId);
    expect(res.text).not.toContain('obs-key-1');
    expect(sample(api, 'process_cpu_seconds_total')).toBeGreaterThan(0);
  });

  it("serves the worker's metrics beside the Temporal SDK's", async () => {
    // The order reads `completed` once its last activity wrote it; the workflow completes a workflow task later,
    // and the SDK's counter follows: wait for it rather than race it (it lost under a loaded full run).
    const worker = await until('the worker to count the completed workflow', async () => {
      const scraped = samples(await (await fetch(workerMetricsUrl)).text());
      return sample(scraped, 'temporal_workflow_completed') !== undefined ? scraped : undefined;
    });
    const duration = `${METRICS.activityDuration.name}_count`;
    expect(sample(worker, duration, { activity: 'reserveInventory', outcome: 'success' })).toBeGreaterThanOrEqual(1);
    expect(sample(worker, duration, { activity: 'sendOrderConfirmation', outcome: 'success' })).toBe(1);
    expect(sample(worker, duration, { activity: 'reserveInventory', outcome: 'failure' })).toBe(1);
    expect(sample(worker, `${METRICS.activityAttempts.name}_bucket`, { activity: 'createInvoice', le: '1' })).toBe(1);
    expect(
      sample(worker, METRICS.activityFailures.name, {
        activity: 'reserveInventory',
        error_type: 'InsufficientStockError',
        retryable: 'false',
      }),
    ).toBe(1);
    // The claim's kind is the step's activity name.
    expect(sample(worker, METRICS.sideEffectClaims.name, { kind: 'sendOrderConfirmation', how: 'new' })).toBe(1);
    expect(sample(worker, METRICS.sideEffectClaims.name, { kind: 'shipOrder', how: 'new' })).toBe(1);
    expect(sample(worker, METRICS.sideEffectClaims.name, { kind: 'syncInvoiceToAccounting', how: 'new' })).toBe(1);
    expect(sample(worker, 'temporal_worker_task_slots_available', { worker_type: 'ActivityWorker' })).toBeGreaterThan(
      0,
    );
    expect(sample(worker, 'temporal_activity_execution_latency_count')).toBeGreaterThan(0);
    // Series before the first event: every known activity, outcome and error type at 0.
    expect(
      sample(worker, METRICS.activityFailures.name, { activity: 'shipOrder', error_type: 'ProviderUnavailableError' }),
    ).toBe(0);
    expect(sample(worker, METRICS.activityRuns.name, { activity: 'releaseInventory', outcome: 'timed_out' })).toBe(0);
    expect(sample(worker, METRICS.activityRuns.name, { activity: 'shipOrder', outcome: 'success' })).toBe(1);
    expect(sample(worker, METRICS.sideEffectClaims.name, { kind: 'shipOrder', how: 'lease_reclaimed' })).toBe(0);
    expect(sample(worker, 'temporal_workflow_completed')).toBe(1);
    // The completed order waited once for its packed report (the test warehouse reports after 200 ms): one
    // observation, well under a minute; the failed order never reached the wait.
    expect(sample(worker, `${METRICS.eventWait.name}_count`, { event: 'packed' })).toBe(1);
    expect(sample(worker, `${METRICS.eventWait.name}_bucket`, { event: 'packed', le: '60' })).toBe(1);
  });

  it('ties every activity log line to its order, workflow run, activity and attempt, without the email', () => {
    const lines = workerLines.filter((l) => l.orderId === okId);
    const completed = lines.find((l) => l.msg === 'activity completed' && l.activityType === 'reserveInventory');
    expect(completed).toMatchObject({
      level: 30,
      name: 'worker',
      orderId: okId,
      workflowId: `order-${okId}`,
      runId: expect.any(String),
      activityType: 'reserveInventory',
      attempt: 1,
      durationMs: expect.any(Number),
    });
    expect(completed).not.toHaveProperty('taskToken');
    const failure = workerLines.find((l) => l.orderId === failedId && l.msg === 'Activity failed');
    expect(failure).toMatchObject({ level: 40, activityType: 'reserveInventory', attempt: 1 });
    expect((failure?.err as { failureType?: string } | undefined)?.failureType).toBe('InsufficientStockError');
    expect(workerText.join('\n')).not.toContain('@example.com');
  });

  it('starts each workflow with its summary and details, and keeps its current details (user metadata)', async () => {
    const description = await stack.client.workflow.getHandle(`order-${okId}`).describe();
    expect(await description.staticSummary()).toBe(`Order ${okId.slice(0, 8)} · Observed · 1 line · 12.50 EUR`);
    const details = await description.staticDetails();
    expect(details).toContain('| MUG\\-WHT | 1 |'); // Markdown: the SKU's `-` escaped (workflows/display-text.ts)
    expect(details).toContain(`/orders/${okId})`);
    expect(details).not.toContain(EMAIL);
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.OrderSummary)).toBe(
      await description.staticSummary(),
    );
    // What `temporal workflow describe` and the UI read as the current details (the built-in metadata query).
    const metadata = await stack.client.workflow
      .getHandle(`order-${okId}`)
      .query<{ currentDetails?: string }>('__temporal_workflow_metadata');
    expect(metadata.currentDetails).toMatch(/^\*\*Completed\*\*: every step is done\./);
    expect(metadata.currentDetails).toContain('- [x] `shipOrder`: shipment of 1 item');
  });

  it('sets the pseudonymous CustomerId search attribute at workflow start', async () => {
    const expected = customerSearchId(EMAIL, stack.config.CUSTOMER_ID_SECRET);
    const description = await stack.client.workflow.getHandle(`order-${okId}`).describe();
    expect(description.typedSearchAttributes.get(SEARCH_ATTRIBUTES.CustomerId)).toBe(expected);
    expect(JSON.stringify(description.searchAttributes)).not.toContain(EMAIL);
    const count = await until('the visibility store to list the customer', async () => {
      const { count } = await stack.client.workflow.count(
        `CustomerId = "${expected}" AND TaskQueue = "${stack.config.TEMPORAL_TASK_QUEUE}"`,
      );
      return count === 2 ? count : undefined;
    });
    expect(count).toBe(2);
  });

  it('serves the page at / and keeps API 404s for unknown paths', async () => {
    const page = await stack.http.get('/').expect(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toContain('<script type="module" src="/app.js"></script>');
    await stack.http
      .get('/app.js')
      .expect(200)
      .expect('content-type', /javascript/);
    const missing = await stack.http.get('/no-such-page').expect(404);
    expect(missing.headers['content-type']).toMatch(PROBLEM_JSON);
  });

  it(`refuses a JSON body over ${JSON_BODY_LIMIT_BYTES} bytes with 413 and stores nothing`, async () => {
    const before = await stack.db.prisma.order.count();
    const padding = 'x'.repeat(JSON_BODY_LIMIT_BYTES);
    const res = await stack.http
      .post('/orders')
      .set('content-type', 'application/json')
      .send(JSON.stringify({ customer: { email: EMAIL, name: padding }, lines: [{ sku: 'MUG-WHT', quantity: 1 }] }))
      .expect(413);
    expect(res.headers['content-type']).toMatch(PROBLEM_JSON);
    expect(await stack.db.prisma.order.count()).toBe(before);
  });
});
