/**
 * The floor's worker process: a bare Temporal Worker with default options (unless BENCH_WORKER_OPTIONS says
 * otherwise) over the no-op floor workflows, on BENCH_TASK_QUEUE of TEMPORAL_ADDRESS.
 * Env: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE (default), BENCH_TASK_QUEUE, BENCH_WORKER_OPTIONS (JSON of extra
 * WorkerOptions, e.g. `{"maxConcurrentWorkflowTaskPolls":8}`). SIGTERM: shutdown, exit 0.
 */
import { fileURLToPath } from 'node:url';
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

process.on('SIGTERM', () => worker.shutdown());
process.on('SIGINT', () => worker.shutdown());
await worker.run();
await connection.close();
process.exit(0);
