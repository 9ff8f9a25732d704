/**
 * The worker process: a Nest application context (no HTTP server) → `createActivities(deps)` (one activity per step
 * and compensation of the step registry) → Temporal Workers polling the order task queue and, for each provider,
 * its own task queue `<task queue>.<provider>` under the provider's limits.
 *
 * Before polling it makes sure the namespace has the workflow contract's search attributes
 * (`ensureSearchAttributes`: registers missing ones on any cluster and waits until they are usable); where they
 * are missing and the namespace does not let it add them (Temporal Cloud), it logs one error naming them and
 * how to add them, and exits 1.
 *
 * Observability: JSON log lines (pino; `LOG_LEVEL`, `LOG_FORMAT`) for the worker and the Temporal SDK, every activity
 * line with orderId, workflowId, runId, activityType and attempt; Prometheus metrics (the SDK's `temporal_*` and the
 * service's `order_fulfilment_*`) on `WORKER_METRICS_PORT` (src/worker/worker-observability.ts).
 *
 * At start it also creates (or updates) the retention Schedule `purge-idempotency-records`
 * (src/worker/retention-schedule.ts); the workflow it starts runs on this worker's task queue.
 *
 * SIGTERM/SIGINT: `worker.shutdown()` (stop polling, let running activities finish within the grace
 * time), then close the Nest context (Prisma pool) and exit 0. A second signal exits at once.
 * Env: see src/config/config.ts and src/worker/worker-config.ts (TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE, TEMPORAL_API_KEY or
 * TEMPORAL_TLS_CERT/KEY for Temporal Cloud, DATABASE_URL,
 * `<NAME>_PROVIDER_URL` and `<NAME>_PROVIDER_API_KEY` of each provider, ...). With NODE_ENV=production a missing
 * provider URL or key, or a missing DATABASE_URL, stops it at start (exit 1) naming the variables.

 */
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, type LogLevel } from '@temporalio/worker';
import { pino } from 'pino';
import { createActivities } from '../activities/index.js';
import type { ActivityDeps } from '../activities/ports.js';
import { type AppConfig, ConfigError } from './config/config.js';
import { describeConnectionOptions, temporalConnectionOptions } from './config/temporal-connection.js';
import { baseLoggerOptions } from './logging/logging.js';
import { createOrderWorkers, ensureSearchAttributes } from './worker/order-worker.js';
import { loadWorkerConfig } from './worker/worker-config.js';
import { ensureRetentionSchedule } from './worker/retention-schedule.js';
import { recordEventWaits, recordSideEffectClaims, workerMetricsOptions } from './worker/worker-observability.js';
import { ACTIVITY_DEPS, WorkerModule } from './worker.module.js';

const temporalLevels: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** The SDK logger's level for a pino `LOG_LEVEL` (the SDK has no `fatal`/`silent`). */
function sdkLogLevel(level: AppConfig['LOG_LEVEL']): LogLevel {
  if (level === 'trace' || level === 'debug' || level === 'info' || level === 'warn')
    return level.toUpperCase() as LogLevel;
  return 'ERROR';
}

async function main(): Promise<void> {
  // Configuration first, outside Nest: a missing variable is one readable message and exit 1.
  const config = loadWorkerConfig(process.env);
  const connectionOptions = temporalConnectionOptions(config);
  const app = await NestFactory.createApplicationContext(WorkerModule.forRoot(config), {
    logger: ['error', 'warn'],
    abortOnError: false,
  });
  const logger = pino(baseLoggerOptions(config, 'worker'));
  Runtime.install({
    logger: new DefaultLogger(sdkLogLevel(config.LOG_LEVEL), (entry) => {
      const { error, ...meta } = entry.meta ?? {};
      logger[temporalLevels[entry.level]]({ ...meta, ...(error === undefined ? {} : { err: error }) }, entry.message);
    }),
    telemetryOptions: config.WORKER_METRICS_PORT
      ? { metrics: workerMetricsOptions(config.WORKER_METRICS_PORT, process.env.HOST || undefined) }
      : undefined,
  });
  recordSideEffectClaims(Runtime.instance().metricMeter);
  recordEventWaits(Runtime.instance().metricMeter);

  const connection = await NativeConnection.connect(connectionOptions);
  // Without its search attributes every workflow start fails (INVALID_ARGUMENT): stop here with one clear error.
  let registered: string[];
  try {
    registered = await ensureSearchAttributes(connection, config.TEMPORAL_NAMESPACE);
  } catch (err) {
    logger.fatal({ namespace: config.TEMPORAL_NAMESPACE }, err instanceof Error ? err.message : String(err));
    await connection.close().catch(() => undefined);
    await app.close();
    process.exit(1);
  }
  if (registered.length) logger.info({ registered }, 'registered search attributes');
  const schedule = await ensureRetentionSchedule(new Client({ connection, namespace: config.TEMPORAL_NAMESPACE }), {
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    intervalMs: config.IDEMPOTENCY_PURGE_INTERVAL_MS,
  });
  logger.info(
    { schedule, intervalMs: config.IDEMPOTENCY_PURGE_INTERVAL_MS },
    'retention schedule purge-idempotency-records in place',
  );

  const deps = app.get<ActivityDeps>(ACTIVITY_DEPS);
  const worker = await createOrderWorkers({
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: config.TEMPORAL_TASK_QUEUE,
    activities: createActivities(deps),
  });

  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, 'second signal: exiting now');
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down: draining the worker');
    worker.shutdown();
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  logger.info(
    {
      ...describeConnectionOptions(connectionOptions),
      namespace: config.TEMPORAL_NAMESPACE,
      taskQueue: config.TEMPORAL_TASK_QUEUE,
      providerTaskQueues: Object.keys(worker.providers).map((p) => `${config.TEMPORAL_TASK_QUEUE}.${p}`),
      metrics: config.WORKER_METRICS_PORT ? `http://127.0.0.1:${config.WORKER_METRICS_PORT}/metrics` : 'disabled',
    },
    'worker running',
  );
  try {
    await worker.run();
  } finally {
    await connection.close();
    await app.close();
    logger.info('worker stopped');
  }
}

main().catch((err: unknown) => {
  // A configuration error is the operator's to fix: its message names every variable; no stack trace.
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
