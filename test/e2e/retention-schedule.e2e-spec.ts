/**
 * E2E: retention by a Temporal Schedule on the real dev server. The worker's start-up step
 * (ensureRetentionSchedule) creates the Schedule, finds it unchanged the second time, updates it when the interval
 * changes; a triggered run executes `purgeIdempotencyRecords` on a real worker, whose activity deletes the expired
 * `Idempotency-Key` records through IdempotencyService.purgeExpired and keeps the others.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection, ScheduleOverlapPolicy } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { createActivities } from '../../activities/index.js';
import { loadConfig } from '../../src/config/config.js';
import { IdempotencyService } from '../../src/idempotency/idempotency.service.js';
import { createOrderWorkers, type OrderWorkers } from '../../src/worker/order-worker.js';
import { ensureRetentionSchedule } from '../../src/worker/retention-schedule.js';
import { PURGE_WORKFLOW_TYPE } from '../../workflows/idempotency-retention.contract.js';
import { fakeProviders } from '../helpers/fake-providers.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { testKeys } from '../helpers/api-keys.js';

const DAY_MS = 86_400_000;
const taskQueue = `retention-${randomUUID()}`;
const scheduleId = `purge-idempotency-records-test-${randomUUID()}`;
let db: TestDatabase;
let client: Client;
let connection: NativeConnection;
let workers: OrderWorkers;
let running: Promise<void>;

beforeAll(async () => {
  db = await createTestDatabase();
  const config = loadConfig({ DATABASE_URL: db.url, TEMPORAL_TASK_QUEUE: taskQueue });
  client = new Client({ connection: await Connection.connect({ address: inject('temporalAddress') }) });
  connection = await NativeConnection.connect({ address: inject('temporalAddress') });
  workers = await createOrderWorkers({
    connection,
    namespace: 'default',
    taskQueue,
    activities: createActivities({
      db: db.sql,
      providers: fakeProviders().clients,
      idempotencyRecords: new IdempotencyService(db.prisma, db.sql, config),
      settings: { claimLeaseMs: 60_000 },
    }),
  });
  running = workers.run();
});

afterAll(async () => {
  await client?.schedule
    .getHandle(scheduleId)
    .delete()
    .catch(() => undefined);
  workers?.shutdown();
  await running;
  await connection?.close();
  await client?.connection.close();
  await db?.drop();
});

describe('the retention Schedule', () => {
  it('is created once, left alone when unchanged, updated when the interval changes', async () => {
    const opts = { taskQueue, intervalMs: 600_000, scheduleId };
    expect(await ensureRetentionSchedule(client, opts)).toBe('created');
    expect(await ensureRetentionSchedule(client, opts)).toBe('unchanged');
    const described = await client.schedule.getHandle(scheduleId).describe();
    expect(described.spec.intervals?.map((i) => i.every)).toEqual([600_000]);
    expect(described.policies.overlap).toBe(ScheduleOverlapPolicy.SKIP);
    expect(described.action).toMatchObject({ type: 'startWorkflow', workflowType: PURGE_WORKFLOW_TYPE, taskQueue });

    expect(await ensureRetentionSchedule(client, { ...opts, intervalMs: 120_000 })).toBe('updated');
    const updated = await client.schedule.getHandle(scheduleId).describe();
    expect(updated.spec.intervals?.map((i) => i.every)).toEqual([120_000]);
    expect(await ensureRetentionSchedule(client, { ...opts, intervalMs: 120_000 })).toBe('unchanged');
  });

  it('a run purges the expired records and keeps the rest', async () => {
    const now = Date.now();
    const record = (key: string, expiresAt: number) => ({
      clientId: testKeys().shop.client,
      claimId: randomUUID(),
      key,
      fingerprint: 'f'.repeat(64),
      status: 'completed',
      responseStatus: 202,
      responseHeaders: {},
      responseBody: {},
      completedAt: new Date(now - 2 * DAY_MS),
      createdAt: new Date(now - 2 * DAY_MS),
      expiresAt: new Date(expiresAt),
    });
    await db.prisma.idempotencyRecord.createMany({
      data: [
        ...Array.from({ length: 25 }, (_, i) => record(`expired-${i}`, now - DAY_MS)),
        record('fresh', now + DAY_MS),
      ],
    });

    const handle = client.schedule.getHandle(scheduleId);
    await handle.trigger(ScheduleOverlapPolicy.ALLOW_ALL);
    const deadline = Date.now() + 30_000;
    let runId: string | undefined;
    while (!runId && Date.now() < deadline) {
      runId = (await handle.describe()).info.recentActions.at(-1)?.action.workflow.workflowId;
      if (!runId) await new Promise((r) => setTimeout(r, 200));
    }
    expect(runId).toBeDefined();
    const result = await client.workflow.getHandle(runId!).result();
    expect(result).toEqual({ deleted: 25, purgedBefore: expect.any(String) });
    expect(await db.prisma.idempotencyRecord.count()).toBe(1);
    expect(await db.prisma.idempotencyRecord.findFirst()).toMatchObject({ key: 'fresh' });
  });
});
