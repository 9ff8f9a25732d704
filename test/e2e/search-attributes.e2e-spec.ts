/**
 * Search-attribute registration against a real Temporal server (the shared test server: the dev server, or
 * the PostgreSQL-backed cluster when TEMPORAL_ADDRESS points at one), starting from an empty namespace: a
 * namespace this suite registers, so nothing was registered with `--search-attribute` beforehand (on SQL
 * visibility the mapping is per namespace). The failing input of issue 10: without registration, a start
 * that sets OrderId fails with INVALID_ARGUMENT "no mapping defined for search attribute OrderId".
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ensureSearchAttributes, projectSearchAttributes } from '../../src/worker/order-worker.js';
import { ORDER_WORKFLOW_TYPE, OrderStatus, SEARCH_ATTRIBUTES } from '../../workflows/order-fulfilment.contract.js';

let connection: Connection;
const namespaces: string[] = [];

/** Registers a fresh namespace and waits until the frontend serves it (a cluster's namespace cache lags ~10 s). */
async function freshNamespace(): Promise<string> {
  const namespace = `sa-test-${randomUUID().slice(0, 8)}`;
  await connection.workflowService.registerNamespace({
    namespace,
    workflowExecutionRetentionPeriod: msToTs('1 day'),
  });
  namespaces.push(namespace);
  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await connection.workflowService.countWorkflowExecutions({ namespace, query: '' });
      return namespace;
    } catch (error) {
      if ((error as { code?: number }).code !== 5 /* NOT_FOUND */ || Date.now() > deadline) throw error;
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

function startOrderWorkflow(namespace: string, orderId = randomUUID()) {
  // Start only: no worker polls this task queue; the workflow is terminated afterwards.
  return new Client({ connection, namespace }).workflow.start(ORDER_WORKFLOW_TYPE, {
    taskQueue: `sa-test-${randomUUID()}`,
    workflowId: `order-${orderId}`,
    args: [{ orderId }],
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.OrderId, value: orderId },
      { key: SEARCH_ATTRIBUTES.OrderStatus, value: OrderStatus.Received },
    ],
  });
}

beforeAll(async () => {
  connection = await Connection.connect({ address: inject('temporalAddress') });
});

afterAll(async () => {
  for (const namespace of namespaces) {
    // Best effort: the cluster keeps its namespaces in PostgreSQL across CI runs.
    await connection.operatorService.deleteNamespace({ namespace }).catch(() => undefined);
  }
  await connection?.close();
});

describe('ensureSearchAttributes on a real server', () => {
  it('registers every contract attribute in an empty namespace, waits until starts accept them, and is idempotent', async () => {
    const namespace = await freshNamespace();
    const before = await connection.operatorService.listSearchAttributes({ namespace });
    expect(Object.keys(before.customAttributes ?? {})).not.toContain('OrderId');
    // The failing input: a start that sets the attributes before they are registered.
    const refused = await startOrderWorkflow(namespace).catch((error: unknown) => error);
    expect(String((refused as { cause?: Error }).cause?.message)).toMatch(
      /INVALID_ARGUMENT: Namespace .* has no mapping defined for search attribute (OrderId|OrderStatus)/,
    );

    const added = await ensureSearchAttributes(connection, namespace);
    expect(added.sort()).toEqual(
      projectSearchAttributes()
        .map((a) => a.name)
        .sort(),
    );

    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    for (const attribute of projectSearchAttributes()) {
      expect(listed.customAttributes?.[attribute.name]).toBe(2 /* INDEXED_VALUE_TYPE_KEYWORD */);
    }
    const orderId = randomUUID();
    const handle = await startOrderWorkflow(namespace, orderId);
    await handle.terminate('search-attribute test');

    // Found by OrderId, the way the Web UI searches (visibility may lag a moment behind the start).
    const client = new Client({ connection, namespace });
    const deadline = Date.now() + 30_000;
    let found = 0;
    while (found === 0 && Date.now() < deadline) {
      found = (await client.workflow.count(`OrderId = "${orderId}"`)).count;
      if (found === 0) await new Promise((r) => setTimeout(r, 250));
    }
    expect(found).toBe(1);

    expect(await ensureSearchAttributes(connection, namespace)).toEqual([]);
  });

  it('lets two workers starting at once both succeed', async () => {
    const namespace = await freshNamespace();
    const [a, b] = await Promise.all([
      ensureSearchAttributes(connection, namespace),
      ensureSearchAttributes(connection, namespace),
    ]);
    expect(new Set([...a, ...b])).toEqual(new Set(projectSearchAttributes().map((x) => x.name)));
    const handle = await startOrderWorkflow(namespace);
    await handle.terminate('search-attribute test');
  });
});
