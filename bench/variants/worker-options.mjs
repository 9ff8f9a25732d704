/**
 * Preload (`node --import bench/variants/worker-options.mjs dist/src/worker.js`) for lever experiments: merges
 * BENCH_WORKER_OPTIONS (JSON of WorkerOptions, e.g. `{"maxConcurrentWorkflowTaskPolls":8}`) into every
 * `Worker.create` call of the unchanged product worker. Bench only; the product reads no such variable.
 */
import workerPkg from '@temporalio/worker';

const overrides = JSON.parse(process.env.BENCH_WORKER_OPTIONS ?? '{}');
const { Worker } = workerPkg;
const create = Worker.create.bind(Worker);
Worker.create = (options) => create({ ...options, ...overrides });
process.stderr.write(`bench: worker options overridden with ${JSON.stringify(overrides)}\n`);
