/**
 * The worker's activity interceptor and claim counter (src/worker/worker-observability.ts) under
 * MockActivityEnvironment with a recording metric meter and logger: what each attempt records (duration by outcome,
 * the attempt that succeeded, failures by type and retryability), the log attributes every activity line gets, and
 * the claim decisions reported by activities/kit/claims.ts. No database or server needed.
 */
import type { Info } from '@temporalio/activity';
import { log, sleep } from '@temporalio/activity';
import {
  ApplicationFailure,
  type LogLevel,
  type LogMetadata,
  type Logger,
  type MetricCounter,
  type MetricGauge,
  type MetricHistogram,
  type MetricMeter,
  type MetricTags,
  type MetricUpDownCounter,
} from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { claimSideEffect, type DbOrTx } from '../../activities/kit/claims.js';
import { ErrorType } from '../../workflows/errors.js';
import { ActivityOutcome, METRICS } from '../../src/metrics/metric-definitions.js';
import {
  activityObservability,
  claimHow,
  recordSideEffectClaims,
  workerMetricsOptions,
} from '../../src/worker/worker-observability.js';

interface Recorded {
  metric: string;
  value: number;
  tags: MetricTags;
}

/** A MetricMeter that records every observation. */
class RecordingMeter implements MetricMeter {
  readonly records: Recorded[] = [];
  private instrument(name: string) {
    return {
      name,
      unit: undefined,
      description: undefined,
      kind: 'counter' as const,
      valueType: 'int' as const,
      add: (value: number, tags: MetricTags = {}) => this.records.push({ metric: name, value, tags }),
      record: (value: number, tags: MetricTags = {}) => this.records.push({ metric: name, value, tags }),
      set: (value: number, tags: MetricTags = {}) => this.records.push({ metric: name, value, tags }),
      withTags: () => this.instrument(name),
    };
  }
  createCounter(name: string): MetricCounter {
    return this.instrument(name) as unknown as MetricCounter;
  }
  createHistogram(name: string): MetricHistogram {
    return this.instrument(name) as unknown as MetricHistogram;
  }
  createGauge(name: string): MetricGauge {
    return this.instrument(name) as unknown as MetricGauge;
  }
  createUpDownCounter(name: string): MetricUpDownCounter {
    return this.instrument(name) as unknown as MetricUpDownCounter;
  }
  withTags(): MetricMeter {
    return this;
  }
  /** The observations of `metric`, without the zero adds that only make a series exist. */
  of(metric: string): Recorded[] {
    return this.records.filter((r) => r.metric === metric && !(r.value === 0 && this.isCounter(r)));
  }
  /** The zero adds of `metric`: the series it exposes before anything happened. */
  zeros(metric: string): MetricTags[] {
    return this.records.filter((r) => r.metric === metric && r.value === 0).map((r) => r.tags);
  }
  private isCounter(r: Recorded): boolean {
    return r.metric.endsWith('_total');
  }
}

/** A Logger that keeps every entry. */
class RecordingLogger implements Logger {
  readonly entries: Array<{ level: LogLevel; message: string; meta: LogMetadata }> = [];
  log(level: LogLevel, message: string, meta: LogMetadata = {}): void {
    this.entries.push({ level, message, meta });
  }
  trace(message: string, meta?: LogMetadata) {
    this.log('TRACE', message, meta);
  }
  debug(message: string, meta?: LogMetadata) {
    this.log('DEBUG', message, meta);
  }
  info(message: string, meta?: LogMetadata) {
    this.log('INFO', message, meta);
  }
  warn(message: string, meta?: LogMetadata) {
    this.log('WARN', message, meta);
  }
  error(message: string, meta?: LogMetadata) {
    this.log('ERROR', message, meta);
  }
}

const ORDER_ID = '3b0c7b70-9f57-4b52-8d0e-6f1c1f0c2a11';

function activityInfo(overrides: Partial<Info> = {}): Partial<Info> {
  return {
    activityType: 'sendOrderConfirmation',
    activityId: '3',
    attempt: 1,
    startToCloseTimeoutMs: 30_000,
    workflowExecution: { workflowId: `order-${ORDER_ID}`, runId: 'run-42' },
    retryPolicy: { maximumAttempts: 15, nonRetryableErrorTypes: [ErrorType.ProviderRejected] },
    ...overrides,
  } as Partial<Info>;
}

function environment(overrides: Partial<Info> = {}) {
  const meter = new RecordingMeter();
  const logger = new RecordingLogger();
  const env = new MockActivityEnvironment(activityInfo(overrides), {
    interceptors: [activityObservability(meter)],
    logger,
  });
  return { meter, logger, env };
}

describe('activity interceptor', () => {
  it('exposes every known activity with every outcome and known error type at 0 before any attempt', () => {
    const meter = new RecordingMeter();
    activityObservability(meter, ['reserveInventory', 'sendOrderConfirmation']);
    const executions = meter.zeros(METRICS.activityRuns.name);
    expect(executions).toContainEqual({ activity: 'sendOrderConfirmation', outcome: 'timed_out' });
    expect(executions).toHaveLength(2 * Object.values(ActivityOutcome).length);
    const failures = meter.zeros(METRICS.activityFailures.name);
    expect(failures).toContainEqual({
      activity: 'reserveInventory',
      error_type: 'ProviderUnavailableError',
      retryable: 'true',
    });
    expect(failures).toContainEqual({
      activity: 'reserveInventory',
      error_type: 'ValidationError',
      retryable: 'false',
    });
    expect(meter.of(METRICS.activityRuns.name)).toEqual([]);
  });

  it('records the duration and the attempt of a success, and logs one line with the order and run ids', async () => {
    const { meter, logger, env } = environment({ attempt: 3 });
    const result = await env.run(
      async (input: { orderId: string }) => {
        log.info('working', { step: 'x' });
        return `done ${input.orderId}`;
      },
      { orderId: ORDER_ID },
    );
    expect(result).toBe(`done ${ORDER_ID}`);

    const [duration] = meter.of(METRICS.activityDuration.name);
    expect(duration?.tags).toEqual({ activity: 'sendOrderConfirmation', outcome: 'success' });
    expect(duration?.value).toBeGreaterThanOrEqual(0);
    expect(duration?.value).toBeLessThan(5);
    expect(meter.of(METRICS.activityAttempts.name)).toEqual([
      { metric: METRICS.activityAttempts.name, value: 3, tags: { activity: 'sendOrderConfirmation' } },
    ]);
    expect(meter.of(METRICS.activityFailures.name)).toEqual([]);

    const own = logger.entries.find((e) => e.message === 'working');
    const completed = logger.entries.find((e) => e.message === 'activity completed');
    for (const entry of [own, completed]) {
      expect(entry?.meta).toMatchObject({
        orderId: ORDER_ID,
        workflowId: `order-${ORDER_ID}`,
        runId: 'run-42',
        activityType: 'sendOrderConfirmation',
        attempt: 3,
      });
      expect(entry?.meta).not.toHaveProperty('taskToken');
    }
    expect(completed?.level).toBe('INFO');
    expect(completed?.meta.durationMs).toEqual(expect.any(Number));
  });

  it('counts a retryable failure with its type, and no successful attempt', async () => {
    const { meter, env } = environment({ attempt: 2 });
    const failing = async (_input: { orderId: string }) => {
      throw ApplicationFailure.retryable('provider down', ErrorType.ProviderUnavailable);
    };
    await expect(env.run(failing, { orderId: ORDER_ID })).rejects.toThrow('provider down');
    expect(meter.of(METRICS.activityFailures.name)).toEqual([
      {
        metric: METRICS.activityFailures.name,
        value: 1,
        tags: { activity: 'sendOrderConfirmation', error_type: ErrorType.ProviderUnavailable, retryable: 'true' },
      },
    ]);
    expect(meter.of(METRICS.activityDuration.name)[0]?.tags.outcome).toBe('failure');
    expect(meter.of(METRICS.activityAttempts.name)).toEqual([]);
  });

  it.each([
    ['a non-retryable ApplicationFailure', ApplicationFailure.nonRetryable('no', ErrorType.Validation), {}],
    [
      'a type the retry policy lists as non-retryable',
      ApplicationFailure.create({ type: ErrorType.ProviderRejected }),
      {},
    ],
    ['a failure on the last allowed attempt', new TypeError('boom'), { attempt: 15 }],
  ])('marks %s as not retryable', async (_name, error, overrides) => {
    const { meter, env } = environment(overrides);
    await expect(
      env.run(
        async (_input: { orderId: string }) => {
          throw error;
        },
        { orderId: ORDER_ID },
      ),
    ).rejects.toBe(error);
    expect(meter.of(METRICS.activityFailures.name)[0]?.tags.retryable).toBe('false');
  });

  it('names a plain error by its class', async () => {
    const { meter, env } = environment();
    await expect(
      env.run(async () => {
        throw new TypeError('bad');
      }),
    ).rejects.toThrow('bad');
    expect(meter.of(METRICS.activityFailures.name)[0]?.tags).toMatchObject({
      error_type: 'TypeError',
      retryable: 'true',
    });
  });

  it('records a cancelled attempt as cancelled, not as a failure', async () => {
    const { meter, env } = environment();
    const running = env.run(() => sleep(5_000)); // the SDK's sleep ends with CancelledFailure on cancel
    env.cancel();
    await expect(running).rejects.toThrow();
    expect(meter.of(METRICS.activityDuration.name)[0]?.tags.outcome).toBe('cancelled');
    expect(meter.of(METRICS.activityFailures.name)).toEqual([]);
  });

  it('records an attempt that returned after its start-to-close timeout as timed out', async () => {
    const { meter, env } = environment({ startToCloseTimeoutMs: 10 });
    await env.run(async () => new Promise((resolve) => setTimeout(resolve, 40)));
    expect(meter.of(METRICS.activityDuration.name)[0]?.tags.outcome).toBe('timed_out');
    expect(meter.of(METRICS.activityFailures.name)[0]?.tags.error_type).toBe('TimeoutFailure');
    expect(meter.of(METRICS.activityAttempts.name)).toEqual([]);
  });
});

describe('side-effect claim counter', () => {
  let remove: (() => void) | undefined;
  afterEach(() => remove?.());

  it('maps every claim decision to its label', () => {
    expect(
      [
        { state: 'owned', how: 'new', attempts: 1, prior: 'none' },
        { state: 'owned', how: 'after-failure', attempts: 2, prior: 'failed' },
        { state: 'owned', how: 'retry-takeover', attempts: 2, prior: 'sending' },
        { state: 'owned', how: 'lease-expired', attempts: 2, prior: 'sending' },
        { state: 'done', providerId: 'msg_1' },
        { state: 'cancelled' },
        { state: 'in-progress' },
      ].map((o) => claimHow(o as Parameters<typeof claimHow>[0])),
    ).toEqual(['new', 'after_failure', 'retry_takeover', 'lease_reclaimed', 'done', 'cancelled', 'in_progress']);
  });

  it('counts what claimSideEffect decides, through the claim module hook', async () => {
    const meter = new RecordingMeter();
    remove = recordSideEffectClaims(meter);
    // A database stand-in: the first insert wins; afterwards the row is `sent`.
    let inserted = false;
    const db = {
      $executeRaw: async () => {
        if (inserted) return 0;
        inserted = true;
        return 1;
      },
      $queryRaw: async () => [{ status: 'sent', owner: 'x#1', provider_id: 'msg_1', attempts: 1, expired: false }],
    } as unknown as DbOrTx;
    const owner = { execution: 'order-1/3', attempt: 1 };
    await claimSideEffect(db, { key: 'order-confirmation:1', kind: 'email', owner, leaseMs: 60_000 });
    await claimSideEffect(db, { key: 'order-confirmation:1', kind: 'email', owner, leaseMs: 60_000 });
    expect(meter.zeros(METRICS.sideEffectClaims.name)).toContainEqual({
      kind: 'sendOrderConfirmation',
      how: 'lease_reclaimed',
    });
    expect(meter.of(METRICS.sideEffectClaims.name).map((r) => r.tags)).toEqual([
      { kind: 'email', how: 'new' },
      { kind: 'email', how: 'done' },
    ]);
  });
});

describe('worker metrics exporter', () => {
  it('serves Prometheus on the port with the service histograms bucketed in their own units', () => {
    const options = workerMetricsOptions(9464);
    expect(options).toMatchObject({ metricPrefix: 'temporal_', prometheus: { bindAddress: '0.0.0.0:9464' } });
    const buckets = 'prometheus' in options ? options.prometheus.histogramBucketOverrides : undefined;
    expect(buckets?.[METRICS.activityAttempts.name]?.[0]).toBe(1);
    expect(buckets?.[METRICS.activityDuration.name]).toContain(30);
  });
});
