/**
 * describeFailure: the text an order's failure reason and an operator's "why" are made of, for each failure kind
 * at the end of an activity's failure chain.
 */
import { ActivityFailure, ApplicationFailure, CancelledFailure, RetryState, TimeoutFailure } from '@temporalio/common';
import { TimeoutType } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { describeFailure } from '../../workflows/failure-wording.js';

const activityFailure = (cause: Error) =>
  new ActivityFailure('activity failed', 'sendOrderConfirmation', '3', RetryState.CANCEL_REQUESTED, undefined, cause);

describe('describeFailure', () => {
  it('names the application failure type and its message', () => {
    const cause = ApplicationFailure.nonRetryable('carrier 422', 'ProviderRejectedError');
    expect(describeFailure(activityFailure(cause))).toBe('ProviderRejectedError: carrier 422');
  });

  it('names the timeout type', () => {
    const cause = new TimeoutFailure('timed out', undefined, TimeoutType.HEARTBEAT);
    expect(describeFailure(activityFailure(cause))).toMatch(/^TimeoutFailure: activity .+ timeout$/);
  });

  it('says an attempt was cancelled when the cancelled failure has no message (it read "CancelledFailure: ")', () => {
    expect(describeFailure(activityFailure(new CancelledFailure('')))).toBe(
      'CancelledFailure: the attempt was cancelled',
    );
    expect(describeFailure(activityFailure(new CancelledFailure('stopped by the operator')))).toBe(
      'CancelledFailure: stopped by the operator',
    );
  });
});
