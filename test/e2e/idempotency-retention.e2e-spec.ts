/**
 * E2E at the service level (real PostgreSQL, no HTTP): the retention and completion rules of IdempotencyService
 * with a controlled clock (issue 7, item 10).
 * - `expires_at` counts from completion; a `processing` record is never purged, however long its request runs.
 * - A completion writes only into the record its own claim inserted: a late first request cannot overwrite the
 *   record of a retry that claimed the key after the first record was removed.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import {
  type IdempotencyClaim,
  IdempotencyService,
  type StoredResponse,
} from '../../src/idempotency/idempotency.service.js';
import { testKeys } from '../helpers/api-keys.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

/** The minimum retention, ms. */
const RETENTION_MS = 60_000;

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

/** A clock the test moves by hand. */
function manualClock(start = new Date('2026-12-01T10:00:00.000Z')) {
  let now = start.getTime();
  return {
    now: () => new Date(now),
    advance(ms: number) {
      now += ms;
    },
  };
}

/** A service with the minimum retention and the given clock. */
function service(clock: () => Date): IdempotencyService {
  const config = loadConfig({ IDEMPOTENCY_RETENTION_MS: String(RETENTION_MS) });
  return new IdempotencyService(db.prisma, db.sql, config, clock);
}

const response = (resourceId: string): StoredResponse => ({
  status: 202,
  headers: { Location: `/things/${resourceId}` },
  body: { id: resourceId },
});

/**
 * A request whose handler claims the key in its own committed transaction and then waits until `finish()` (a
 * slow workflow start, say) before answering with `response(resourceId)`.
 */
function slowRequest(svc: IdempotencyService, key: string, resourceId: string) {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  let claimed!: () => void;
  const hasClaimed = new Promise<void>((resolve) => (claimed = resolve));
  let performed = 0;
  const outcome = svc.execute(
    { clientId: testKeys().shop.client, key, fingerprint: 'f'.repeat(64) },
    {
      perform: async (claim: IdempotencyClaim) => {
        performed++;
        await db.prisma.$transaction((tx) => claim(tx, resourceId));
        claimed();
        await released;
        return response(resourceId);
      },
      recover: async (id) => response(id),
    },
  );
  return { outcome, hasClaimed, finish: () => release(), performed: () => performed };
}

const record = (key: string) =>
  db.prisma.idempotencyRecord.findUnique({ where: { clientId_key: { clientId: testKeys().shop.client, key } } });

describe('retention counts from completion', () => {
  it('a record still processing after the retention is not purged; a retry gets the first request, not a second', async () => {
    const clock = manualClock();
    const svc = service(clock.now);
    const key = randomUUID();
    const first = slowRequest(svc, key, 'res-first');
    await first.hasClaimed;
    expect(await record(key)).toMatchObject({ status: 'processing', expiresAt: null });

    // Still in flight 10 minutes later (10 × the retention): the purge leaves it alone.
    clock.advance(10 * RETENTION_MS);
    expect(await svc.purgeExpired(clock.now())).toBe(0);
    expect(await record(key)).toMatchObject({ status: 'processing', resourceId: 'res-first' });

    // A retry now finds the (stale) record and answers from the first request's resource: no second resource.
    const retry = slowRequest(svc, key, 'res-second');
    const retried = await retry.outcome;
    expect(retry.performed()).toBe(0);
    expect(retried).toEqual({ replayed: true, response: response('res-first') });

    first.finish();
    expect(await first.outcome).toEqual({ replayed: false, response: response('res-first') });
    const done = await record(key);
    expect(done).toMatchObject({ status: 'completed', resourceId: 'res-first' });
    expect(done!.responseHeaders).toEqual({ Location: '/things/res-first' });
  });

  it('expires_at = completed_at + retention: kept until then, purged after', async () => {
    const clock = manualClock();
    const svc = service(clock.now);
    const key = randomUUID();
    const request = slowRequest(svc, key, 'res-retained');
    await request.hasClaimed;
    clock.advance(45_000);
    request.finish();
    await request.outcome;
    const completedAt = clock.now();
    const row = await record(key);
    expect(row).toMatchObject({ status: 'completed', completedAt });
    expect(row!.expiresAt).toEqual(new Date(completedAt.getTime() + RETENTION_MS));

    // 59 s after completion (104 s after the claim): still replayed, not purged.
    clock.advance(RETENTION_MS - 1_000);
    expect(await svc.purgeExpired(clock.now())).toBe(0);
    const again = slowRequest(svc, key, 'res-other');
    expect(await again.outcome).toEqual({ replayed: true, response: response('res-retained') });

    clock.advance(2_000);
    expect(await svc.purgeExpired(clock.now())).toBe(1);
    expect(await record(key)).toBeNull();
  });
});

describe('a completion writes only into the record it claimed', () => {
  it("a late first request does not overwrite the record of a retry that claimed the key after the first's was removed", async () => {
    const clock = manualClock();
    const svc = service(clock.now);
    const key = randomUUID();
    const first = slowRequest(svc, key, 'res-first');
    await first.hasClaimed;
    const firstClaim = (await record(key))!.claimId;

    // The first record disappears while its request still runs (what the old purge did after 60 s).
    await db.prisma.idempotencyRecord.delete({
      where: { clientId_key: { clientId: testKeys().shop.client, key } },
    });
    const retry = slowRequest(svc, key, 'res-retry');
    await retry.hasClaimed;
    const retryClaim = (await record(key))!.claimId;
    expect(retryClaim).not.toBe(firstClaim);

    // The first request completes while the retry is still processing: the retry's record is untouched.
    first.finish();
    expect(await first.outcome).toEqual({ replayed: false, response: response('res-first') });
    expect(await record(key)).toMatchObject({ status: 'processing', claimId: retryClaim, resourceId: 'res-retry' });

    retry.finish();
    expect(await retry.outcome).toEqual({ replayed: false, response: response('res-retry') });
    const done = await record(key);
    expect(done).toMatchObject({ status: 'completed', claimId: retryClaim });
    expect(done!.responseHeaders).toEqual({ Location: '/things/res-retry' });

    // Replays point at the retry's resource.
    const replay = slowRequest(svc, key, 'res-third');
    expect(await replay.outcome).toEqual({ replayed: true, response: response('res-retry') });
  });
});
