/**
 * `npm run smoke:cluster`: checks a running stack on a real Temporal cluster (`npm run start:cluster`) the way
 * issue 10 defines "done": the frontend reports PostgreSQL persistence (not the dev server's SQLite), a POSTed
 * order completes, and the Web UI finds its workflow by OrderId (through the UI server's own HTTP API, the one
 * its search box calls). Prints one line per check; exits 1 on the first failure.
 *
 * Env: API_URL, TEMPORAL_ADDRESS, TEMPORAL_UI_URL (default: the stack definition's ports on 127.0.0.1, i.e. PORT,
 * TEMPORAL_PORT and TEMPORAL_UI_PORT or 3000, 7233 and 8233: scripts/lib/stack-definition.ts), API_KEY (default: the
 * first client key of `.data/api-keys.json`, which `npm start` writes), TEMPORAL_NAMESPACE (default).
 */
import { randomUUID } from 'node:crypto';
import { Connection } from '@temporalio/client';
import { apiKeyFor } from './lib/api-keys-file.js';
import { errorMessage } from './lib/env.js';
import { localUrl, stackPorts } from './lib/stack-definition.js';

const PORTS = stackPorts();
const API = (process.env.API_URL?.trim() || localUrl(PORTS.api)).replace(/\/+$/, '');
const ADDRESS = process.env.TEMPORAL_ADDRESS?.trim() || `127.0.0.1:${PORTS.temporal}`;
const UI = (process.env.TEMPORAL_UI_URL?.trim() || localUrl(PORTS.temporalUi)).replace(/\/+$/, '');
const NAMESPACE = process.env.TEMPORAL_NAMESPACE?.trim() || 'default';

async function json<T>(res: Response): Promise<T> {
  if (!res.ok) throw new Error(`${res.url} answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as T;
}

async function until<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function main(): Promise<void> {
  const connection = await Connection.connect({ address: ADDRESS });
  try {
    const info = await connection.workflowService.getClusterInfo({});
    console.log(
      `cluster: Temporal Server ${info.serverVersion}, persistence ${info.persistenceStore}, visibility ${info.visibilityStore}`,
    );
    if (info.persistenceStore === 'sqlite') throw new Error(`${ADDRESS} is a dev server (sqlite), not a cluster`);
  } finally {
    await connection.close();
  }

  const auth = { authorization: `Bearer ${await apiKeyFor('orders:write')}` };
  const inventory = await json<Array<{ sku: string; available: number }>>(
    await fetch(`${API}/inventory`, { headers: auth }),
  );
  const product = inventory.find((p) => p.available > 0);
  if (!product) throw new Error('no product in stock (is the seed loaded?)');
  const started = Date.now();
  const created = await json<{ id: string }>(
    await fetch(`${API}/orders`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json', 'idempotency-key': randomUUID() },
      body: JSON.stringify({
        customer: { email: 'smoke@example.com', name: 'Smoke' },
        lines: [{ sku: product.sku, quantity: 1 }],
      }),
    }),
  );
  const order = await until('order completed', 60_000, async () => {
    const o = await json<{ status: string; temporalUiUrl: string }>(
      await fetch(`${API}/orders/${created.id}`, { headers: auth }),
    );
    if (o.status === 'failed') throw new Error(`order ${created.id} failed`);
    return o.status === 'completed' ? o : undefined;
  });
  console.log(`order ${created.id}: completed in ${Date.now() - started} ms`);

  const query = new URLSearchParams({ query: `OrderId = "${created.id}"` });
  const found = await until('the UI finds the workflow by OrderId', 30_000, async () => {
    const res = await json<{ executions?: Array<{ execution: { workflowId: string }; status: string }> }>(
      await fetch(`${UI}/api/v1/namespaces/${encodeURIComponent(NAMESPACE)}/workflows?${query}`),
    );
    const executions = res.executions ?? [];
    return executions.length > 0 && executions.every((e) => e.status === 'WORKFLOW_EXECUTION_STATUS_COMPLETED')
      ? executions
      : undefined;
  });
  if (found.length !== 1) throw new Error(`the UI found ${found.length} workflows for OrderId ${created.id}`);
  const page = await fetch(order.temporalUiUrl);
  await page.body?.cancel();
  if (!page.ok) throw new Error(`${order.temporalUiUrl} answered ${page.status}`);
  console.log(
    `UI: OrderId = "${created.id}" finds ${found[0]!.execution.workflowId} (COMPLETED); ${order.temporalUiUrl} answers ${page.status}`,
  );
}

main().catch((error: unknown) => {
  console.error(`smoke check failed: ${errorMessage(error)}`);
  process.exit(1);
});
