/**
 * Every named retry profile (workflows/activity-options.ts) must be finite and leave room for all its attempts:
 * scheduleToClose >= maximumAttempts x startToClose + the sum of the backoff intervals between attempts
 * (initialInterval x backoffCoefficient^n, capped at maximumInterval). See
 * https://docs.temporal.io/encyclopedia/retry-policies
 */
import { msToNumber } from '@temporalio/common/lib/time.js';
import { describe, expect, it } from 'vitest';
import type { ActivityOptions } from '@temporalio/workflow';
import { PERMANENT_ERROR_TYPES } from '../../workflows/errors.js';
import { RETRY_PROFILES } from '../../workflows/activity-options.js';

/** The worst case of a profile in ms: every attempt uses its whole start-to-close, plus every backoff. */
export function worstCaseMs(profile: ActivityOptions): number {
  const retry = profile.retry!;
  const attempts = retry.maximumAttempts!;
  const start = msToNumber(profile.startToCloseTimeout!);
  const initial = msToNumber(retry.initialInterval ?? '1 second');
  const max = msToNumber(retry.maximumInterval ?? initial * 100);
  const coefficient = retry.backoffCoefficient ?? 2;
  let backoff = 0;
  for (let n = 0; n < attempts - 1; n++) backoff += Math.min(initial * coefficient ** n, max);
  return attempts * start + backoff;
}

describe('retry profiles', () => {
  it.each(Object.entries(RETRY_PROFILES))('%s is finite and its schedule-to-close fits every attempt', (_, p) => {
    expect(p.retry?.maximumAttempts).toBeGreaterThan(0);
    expect(Number.isFinite(p.retry!.maximumAttempts)).toBe(true);
    expect(p.scheduleToCloseTimeout).toBeDefined();
    expect(msToNumber(p.scheduleToCloseTimeout!)).toBeGreaterThanOrEqual(worstCaseMs(p));
    expect(p.retry?.nonRetryableErrorTypes).toEqual(expect.arrayContaining([...PERMANENT_ERROR_TYPES]));
  });

  it('provider calls heartbeat, so a dead worker is noticed well before start-to-close', () => {
    const p = RETRY_PROFILES.providerCall;
    expect(msToNumber(p.heartbeatTimeout!)).toBeLessThan(msToNumber(p.startToCloseTimeout!));
  });

  it('the arithmetic catches a profile without room (the check can fail)', () => {
    const tight: ActivityOptions = {
      startToCloseTimeout: '10 seconds',
      scheduleToCloseTimeout: '60 seconds',
      retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
    };
    expect(worstCaseMs(tight)).toBe(50_000 + 15_000);
    expect(msToNumber(tight.scheduleToCloseTimeout!)).toBeLessThan(worstCaseMs(tight));
  });
});
