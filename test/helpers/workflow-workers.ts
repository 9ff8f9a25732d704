/**
 * The order workers of a workflow test on the shared dev server (the global setup's `temporalAddress`): a worker
 * connection, a client, and the workers of `createOrderWorkers` on `taskQueue` with scripted activities, running
 * until `close()`.
 */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { inject } from 'vitest';
import { createOrderWorkers, type OrderWorkers } from '../../src/worker/order-worker.js';

/** Running workers, the connection they poll on (for more workers of the test) and a client. */
export interface WorkflowWorkers {
  connection: NativeConnection;
  client: Client;
  workers: OrderWorkers;
  /** Shuts the workers down, waits for them, and closes both connections. */
  close(): Promise<void>;
}

/**
 * Starts the order workers on `taskQueue`, namespace `default`.
 * @param activities as `createOrderWorkers` takes them (one record, or grouped by task queue).
 */
export async function startWorkflowWorkers(
  taskQueue: string,
  activities: Parameters<typeof createOrderWorkers>[0]['activities'],
): Promise<WorkflowWorkers> {
  const address = inject('temporalAddress');
  const connection = await NativeConnection.connect({ address });
  const client = new Client({ connection: await Connection.connect({ address }) });
  const workers = await createOrderWorkers({ connection, namespace: 'default', taskQueue, activities });
  const running = workers.run();
  return {
    connection,
    client,
    workers,
    async close() {
      workers.shutdown();
      await running;
      await connection.close();
      await client.connection.close();
    },
  };
}
