/**
 * The floor's worker process: a bare Temporal Worker with default options (unless BENCH_WORKER_OPTIONS says
 * otherwise) over the no-op floor workflows, on BENCH_TASK_QUEUE of TEMPORAL_ADDRESS.
 *
 * With an IPC channel it can also be the starter (eager workflow start needs the client and the worker in one
 * process, on one NativeConnection): `{ type: 'start', workflowType, ids, eager, concurrency }` starts those
 * workflows and answers `{ type: 'started', latencies, eagerly }`.
 * Env: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (default), BENCH_TASK_QUEUE, BENCH_WORKER_OPTIONS (JSON of extra
 * WorkerOptions, e.g. `{"maxConcurrentWorkflowTaskPolls":8}`). SIGTERM: shutdown, exit 0.
 */
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { NativeConnection, Runtime, Worker, DefaultLogger } from '@temporalio/worker';
import { floorActivities } from './activities.js';

const address = process.env.TEMPORAL_ADDRESS ?? '127.0.0.1:7233';
const namespace = process.env.TEMPORAL_NAMESPACE ?? 'default';
const taskQueue = process.env.BENCH_TASK_QUEUE ?? 'bench-floor';
const overrides = JSON.parse(process.env.BENCH_WORKER_OPTIONS ?? '{}') as Record<string, unknown>;

Runtime.install({ logger: new DefaultLogger('WARN') });
const connection = await NativeConnection.connect({ address });
const worker = await Worker.create({
  connection,
  namespace,
  taskQueue,
  workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
  activities: floorActivities,
  ...overrides,
});

interface StartCommand {
  type: 'start';
  workflowType: string;
  ids: string[];
  eager: boolean;
  concurrency: number;
}

if (process.send) {
  const client = new Client({ connection, namespace });
  process.on('message', (message: StartCommand) => {
    if (message?.type !== 'start') return;
    void (async () => {
      const latencies: number[] = [];
      let eagerly = 0;
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(message.concurrency, message.ids.length) }, async () => {
          while (next < message.ids.length) {
            const id = message.ids[next++]!;
            const t = performance.now();
            const handle = await client.workflow.start(message.workflowType, {
              taskQueue,
              workflowId: id,
              requestEagerStart: message.eager,
            });
            latencies.push(performance.now() - t);
            if ((handle as { eagerlyStarted?: boolean }).eagerlyStarted) eagerly++;
          }
        }),
      );
      process.send!({ type: 'started', latencies, eagerly });
    })().catch((err: unknown) => process.send!({ type: 'error', message: String(err) }));
  });
}

process.on('SIGTERM', () => worker.shutdown());
process.on('SIGINT', () => worker.shutdown());
await worker.run();
await connection.close();
process.exit(0);
