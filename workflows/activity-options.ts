/**
 * Named retry profiles for every activity call. Sandbox-safe.
 *
 * Each profile is finite (Temporal's default retry policy retries forever: we never rely on it) and its
 * schedule-to-close timeout leaves room for every attempt:
 *   scheduleToClose >= maximumAttempts x startToClose + sum of backoff intervals.
 * Permanent error types (workflows/errors.ts) are never retried.
 * See https://docs.temporal.io/encyclopedia/retry-policies and
 * https://docs.temporal.io/encyclopedia/detecting-activity-failures
 */
import type { ActivityOptions, LocalActivityOptions } from '@temporalio/workflow';
import { PERMANENT_ERROR_TYPES } from './errors.js';

const nonRetryableErrorTypes = [...PERMANENT_ERROR_TYPES];

/**
 * Database steps (reserve, invoice): fast, so short attempts, but enough of them
 * to ride out a database outage of about 5 minutes (a PostgreSQL restart or failover) instead of failing the
 * order: an unreachable database fails every attempt at once, so the backoff is what waits it out.
 * 12 attempts x 10 s + backoff 1+2+4+8+16+30x6 s = 120 + 211 = 331 s <= 360 s.
 */
export const databaseStep: ActivityOptions = {
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '6 minutes',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 12,
    nonRetryableErrorTypes,
  },
};

/**
 * The database steps (reserve, invoice) as local activities: the {@link databaseStep} budget, retried by the worker
 * itself. A backoff shorter than `localRetryThreshold` waits inside the workflow task (which the worker keeps
 * alive); a longer one becomes a timer in the history. See https://docs.temporal.io/local-activity
 */
export const localDatabaseStep: LocalActivityOptions = {
  startToCloseTimeout: databaseStep.startToCloseTimeout,
  scheduleToCloseTimeout: databaseStep.scheduleToCloseTimeout,
  retry: databaseStep.retry,
  localRetryThreshold: '10 seconds',
};

/**
 * Calls to external providers (every provider step, on its provider's task queue) over HTTP: longer attempts (the
 * client's own HTTP timeout is 10 s by default) and enough of them to ride out a provider outage of about 10 minutes
 * before the order is given up on. The activities heartbeat every second during the call, so a worker that
 * dies mid-call is noticed after the 10 s heartbeat timeout, not the 30 s start-to-close.
 * 15 attempts x 30 s + backoff 2+4+8+16+32+60x9 s = 450 + 602 = 1052 s <= 1200 s.
 */
export const providerCall: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  heartbeatTimeout: '10 seconds',
  scheduleToCloseTimeout: '20 minutes',
  retry: {
    initialInterval: '2 seconds',
    backoffCoefficient: 2,
    maximumInterval: '60 seconds',
    maximumAttempts: 15,
    nonRetryableErrorTypes,
  },
};

/**
 * The halt fence, compensations (release stock, void invoice) and the final `failed`/`cancelled` status: they
 * must succeed, so they outlast the forward steps' budget (a database outage that failed a step must not also
 * fail its compensation). Still finite.
 * 20 attempts x 10 s + backoff 1+2+4+8+16+32+60x13 s = 200 + 843 = 1043 s <= 1200 s.
 */
export const compensation: ActivityOptions = {
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '20 minutes',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '60 seconds',
    maximumAttempts: 20,
    nonRetryableErrorTypes,
  },
};

/**
 * The `attention_required` status write after the pivot: nothing compensates there, so it outlasts a long
 * database outage (the workflow waits for the operator either way).
 * 60 attempts x 10 s + backoff 1+2+4+8+16+32+60x54 s = 600 + 3303 = 3903 s <= 4200 s.
 */
export const attentionWrite: ActivityOptions = {
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '70 minutes',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '60 seconds',
    maximumAttempts: 60,
    nonRetryableErrorTypes,
  },
};

/**
 * Housekeeping batches in the database (the idempotency-record purge of the retention Schedule): one attempt may
 * delete up to 100 batches of rows, so attempts are long; the next scheduled run repeats the work anyway, so few.
 * 3 attempts x 60 s + backoff 5+10 s = 195 s <= 240 s.
 */
export const housekeeping: ActivityOptions = {
  startToCloseTimeout: '60 seconds',
  scheduleToCloseTimeout: '240 seconds',
  retry: {
    initialInterval: '5 seconds',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    maximumAttempts: 3,
    nonRetryableErrorTypes,
  },
};

/** All profiles by name, for documentation and tests. */
export const RETRY_PROFILES = {
  databaseStep,
  localDatabaseStep,
  providerCall,
  compensation,
  attentionWrite,
  housekeeping,
} as const;
