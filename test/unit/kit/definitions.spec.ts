/**
 * The step kit's pure parts, without a database: the registry check (validateSteps: each rule can fail), the plan
 * an order runs (buildPlan), and the jittered delay of provider retries (jitteredDelayMs, rethrowProviderError).
 */
import { ApplicationFailure, type RetryPolicy } from '@temporalio/common';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  defineDatabaseStep,
  defineProviderCompensation,
  defineProviderStep,
  StepPhase,
  validateSteps,
  type StepDefinition,
} from '../../../activities/kit/define.js';
import { jitteredDelayMs, rethrowProviderError, type RetryTiming } from '../../../activities/kit/failures.js';
import { buildPlan, registryPlan } from '../../../activities/catalogue/plan.js';
import { STEPS } from '../../../activities/steps/index.js';
import { carrier } from '../../../providers/carrier.provider.js';
import { email } from '../../../providers/email.provider.js';
import { ProviderError } from '../../../providers/kit/errors.js';
import { ErrorType } from '../../../workflows/errors.js';
import { RANK_STEP } from '../../../workflows/order-plan.js';
import { SAMPLE_FACTS } from '../../helpers/kit-test-bed.js';

const noRun = async () => null;

/** A database step named `name` (status: its snake_case) in `phase`. */
function dbStep(name: string, phase: StepPhase = StepPhase.BeforePivot, extra: Partial<StepDefinition> = {}) {
  return {
    ...defineDatabaseStep({
      name,
      phase,
      status: snake(name),
      label: name,
      description: name,
      idempotency: 'recorded',
      run: noRun,
    }),
    ...extra,
  } as StepDefinition;
}

/** A provider step on the email provider named `name` in `phase` (default: the pivot). */
function emailStep(name: string, phase: StepPhase = StepPhase.Pivot, extra: Partial<StepDefinition> = {}) {
  return {
    ...defineProviderStep({
      name,
      phase,
      status: snake(name),
      label: name,
      description: name,
      provider: email,
      operation: 'send',
      key: (orderId) => `${name}:${orderId}`,
      request: async () => ({ to: 'ada@example.com', subject: 'Hi', text: 'Hello' }),
    }),
    ...extra,
  } as StepDefinition;
}

function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

const releaseStock = {
  kind: 'database' as const,
  name: 'releaseStock',
  description: 'undo',
  run: noRun,
};

/** The problems validateSteps reports for `steps` (one per line), or [] when it accepts them. */
function problemsOf(steps: readonly StepDefinition[]): string[] {
  try {
    validateSteps(steps);
    return [];
  } catch (err) {
    const lines = (err as Error).message.split('\n');
    expect(lines[0]).toBe('Invalid step registry:');
    return lines.slice(1).map((l) => l.trim());
  }
}

describe('validateSteps', () => {
  it('accepts the registry and a minimal valid one, returning them unchanged', () => {
    expect(validateSteps(STEPS)).toBe(STEPS);
    const steps = [dbStep('holdStock', StepPhase.BeforePivot, { compensation: releaseStock }), emailStep('notify')];
    expect(validateSteps(steps)).toBe(steps);
    expect(problemsOf(steps)).toEqual([]);
  });

  it('requires exactly one pivot', () => {
    expect(problemsOf([dbStep('holdStock')])).toEqual(['exactly one step must be the pivot (found 0)']);
    expect(problemsOf([emailStep('notify'), emailStep('notifyAgain')])).toContain(
      'exactly one step must be the pivot (found 2)',
    );
  });

  it('requires the pivot to be a provider step (the halt fence reads its claim)', () => {
    expect(problemsOf([dbStep('holdStock', StepPhase.Pivot)])).toEqual(['the pivot must be a provider step']);
  });

  it('requires camelCase activity names, for steps and compensations', () => {
    expect(problemsOf([dbStep('Hold-Stock', undefined, { status: 'held' }), emailStep('notify')])).toEqual([
      'step Hold-Stock: not a camelCase activity name',
    ]);
    expect(
      problemsOf([
        dbStep('holdStock', undefined, { compensation: { ...releaseStock, name: 'release_stock' } }),
        emailStep('notify'),
      ]),
    ).toEqual(['compensation release_stock: not a camelCase activity name']);
  });

  it('refuses a name taken by another step, a compensation or the kit', () => {
    expect(
      problemsOf([dbStep('holdStock'), dbStep('holdStock', undefined, { status: 'held_again' }), emailStep('notify')]),
    ).toEqual(['step holdStock: the name is taken']);
    expect(
      problemsOf([
        dbStep('holdStock', undefined, { compensation: { ...releaseStock, name: 'notify' } }),
        emailStep('notify'),
      ]),
    ).toEqual(['step notify: the name is taken']);
    for (const reserved of ['haltOrder', 'setOrderStatus', 'planOrder', 'purgeExpiredIdempotencyRecords']) {
      expect(problemsOf([dbStep(reserved, undefined, { status: 'other' }), emailStep('notify')])).toEqual([
        `step ${reserved}: the name is taken`,
      ]);
    }
  });

  it('requires snake_case statuses that no other step and no lifecycle status takes', () => {
    expect(problemsOf([dbStep('holdStock', undefined, { status: 'Held' }), emailStep('notify')])).toEqual([
      'step holdStock: status Held is not snake_case',
    ]);
    expect(problemsOf([dbStep('holdStock', undefined, { status: 'notify' }), emailStep('notify')])).toEqual([
      'step notify: status notify is taken',
    ]);
    for (const reserved of ['received', 'completed', 'attention_required', 'failed', 'cancelled', 'closed']) {
      expect(problemsOf([dbStep('holdStock', undefined, { status: reserved }), emailStep('notify')])).toEqual([
        `step holdStock: status ${reserved} is taken`,
      ]);
    }
  });

  it('requires the phases in order around the pivot', () => {
    expect(problemsOf([emailStep('notify'), dbStep('holdStock', StepPhase.BeforePivot)])).toEqual([
      'step holdStock is before-pivot but comes after the pivot',
    ]);
    expect(problemsOf([dbStep('packBox', StepPhase.AfterPivot), emailStep('notify')])).toEqual([
      'step packBox is after-pivot but comes before the pivot',
    ]);
  });

  it('allows a compensation only before the pivot', () => {
    const notice = defineProviderCompensation({
      name: 'sendNotice',
      description: 'undo',
      provider: email,
      operation: 'send',
      key: (orderId) => `notice:${orderId}`,
      request: async () => ({ to: 'ada@example.com', subject: 'Sorry', text: 'Cancelled' }),
    });
    expect(problemsOf([emailStep('notify', StepPhase.Pivot, { compensation: notice })])).toEqual([
      'step notify: only a before-pivot step has a compensation (nothing compensates past it)',
    ]);
    expect(
      problemsOf([emailStep('notify'), dbStep('packBox', StepPhase.AfterPivot, { compensation: releaseStock })]),
    ).toEqual(['step packBox: only a before-pivot step has a compensation (nothing compensates past it)']);
  });

  // The types enforce it for defineDatabaseStep; a registry assembled without them would plan a compensation activity
  // that createActivities never registers (it registers a provider compensation only on a provider step).
  it('refuses a provider compensation on a database step', () => {
    const notice = defineProviderCompensation({
      name: 'sendNotice',
      description: 'undo',
      provider: email,
      operation: 'send',
      key: (orderId) => `notice:${orderId}`,
      request: async () => ({ to: 'ada@example.com', subject: 'Sorry', text: 'Cancelled' }),
    });
    const untyped = dbStep('holdStock', StepPhase.BeforePivot, { compensation: notice } as Partial<StepDefinition>);
    expect(problemsOf([untyped, emailStep('notify')])).toHaveLength(1);
  });

  it("requires a provider step's operation to exist at its provider", () => {
    expect(problemsOf([emailStep('notify', StepPhase.Pivot, { operation: 'fax' } as Partial<StepDefinition>)])).toEqual(
      ['step notify: provider email has no operation fax'],
    );
  });

  it('names every problem at once', () => {
    expect(problemsOf([dbStep('Bad', StepPhase.AfterPivot, { status: 'completed' })])).toEqual([
      'exactly one step must be the pivot (found 0)',
      'step Bad: not a camelCase activity name',
      'step Bad: status completed is taken',
    ]);
  });
});

describe('buildPlan', () => {
  const steps = validateSteps([
    dbStep('holdStock', StepPhase.BeforePivot, { compensation: releaseStock }),
    emailStep('notify'),
    {
      ...defineProviderStep({
        name: 'shipParcel',
        phase: StepPhase.AfterPivot,
        status: 'parcel_shipped',
        label: 'Parcel shipped',
        description: 'ships',
        provider: carrier,
        operation: 'createShipment',
        retry: 'databaseStep',
        key: (orderId) => `parcel:${orderId}`,
        request: async () => ({ reference: 'r', recipient: { email: 'ada@example.com' }, items: [] }),
        summary: (order) => `  parcel\n of   ${order.lines.length}\tline(s)  `,
      }),
    } as StepDefinition,
  ]);

  it('ranks each step 10 x its position; the last step writes completed', () => {
    const plan = buildPlan(steps, SAMPLE_FACTS);
    expect(plan.steps.map((s) => [s.name, s.status, s.rank])).toEqual([
      ['holdStock', 'hold_stock', RANK_STEP],
      ['notify', 'notify', 2 * RANK_STEP],
      ['shipParcel', 'completed', 3 * RANK_STEP],
    ]);
    expect(RANK_STEP).toBe(10);
  });

  it('gives each step its kind, phase, provider and compensation, and the retry profile default of its kind', () => {
    const plan = buildPlan(steps, SAMPLE_FACTS);
    expect(
      plan.steps.map(({ name, kind, phase, retry, provider, compensation }) => ({
        name,
        kind,
        phase,
        retry,
        provider,
        compensation,
      })),
    ).toEqual([
      {
        name: 'holdStock',
        kind: 'database',
        phase: 'before-pivot',
        retry: 'localDatabaseStep',
        provider: undefined,
        compensation: { name: 'releaseStock' },
      },
      {
        name: 'notify',
        kind: 'provider',
        phase: 'pivot',
        retry: 'providerCall',
        provider: 'email',
        compensation: undefined,
      },
      // An explicit profile wins over the default.
      {
        name: 'shipParcel',
        kind: 'provider',
        phase: 'after-pivot',
        retry: 'databaseStep',
        provider: 'carrier',
        compensation: undefined,
      },
    ]);
    expect('provider' in plan.steps[0]!).toBe(false);
  });

  it("names a provider compensation's provider", () => {
    const notice = defineProviderCompensation({
      name: 'sendNotice',
      description: 'undo',
      provider: email,
      operation: 'send',
      key: (orderId) => `notice:${orderId}`,
      request: async () => ({ to: 'ada@example.com', subject: 'Sorry', text: 'Cancelled' }),
    });
    const plan = buildPlan(
      [emailStep('warn', StepPhase.BeforePivot, { compensation: notice }), emailStep('notify')],
      SAMPLE_FACTS,
    );
    expect(plan.steps[0]!.compensation).toEqual({ name: 'sendNotice', provider: 'email' });
  });

  it('summarises each step from the order (default: its label) on one line of at most 200 characters', () => {
    const plan = buildPlan(steps, {
      ...SAMPLE_FACTS,
      lines: [
        { sku: 'A', quantity: 1 },
        { sku: 'B', quantity: 2 },
      ],
    });
    expect(plan.steps.map((s) => s.summary)).toEqual(['holdStock', 'notify', 'parcel of 2 line(s)']);

    const long = (n: number) => [emailStep('notify', StepPhase.Pivot, { summary: () => 'x'.repeat(n) })];
    expect(buildPlan(long(200), SAMPLE_FACTS).steps[0]!.summary).toBe('x'.repeat(200));
    const cut = buildPlan(long(201), SAMPLE_FACTS).steps[0]!.summary;
    expect(cut).toHaveLength(200);
    expect(cut).toBe(`${'x'.repeat(199)}…`);
  });

  it("plans the registry: its steps in order, the pivot's statuses, completed last", () => {
    const card = { ...SAMPLE_FACTS, payment: { method: 'pm_card_secret_token' } };
    const plan = buildPlan(STEPS, card);
    expect(plan.steps.map((s) => s.name)).toEqual(STEPS.map((s) => s.name));
    expect(plan.steps.map((s) => s.status)).toEqual([...STEPS.slice(0, -1).map((s) => s.status), 'completed']);
    expect(plan.steps.map((s) => s.rank)).toEqual(STEPS.map((_, i) => (i + 1) * 10));
    // The summaries mask the customer's address (docs/operations.md) and the payment-method token.
    expect(JSON.stringify(plan)).not.toContain(SAMPLE_FACTS.customerEmail);
    expect(JSON.stringify(plan)).not.toContain('secret_token');
  });

  it('plans a conditional step only for the orders it applies to (an order on account has no card steps)', () => {
    const onAccount = buildPlan(STEPS, { ...SAMPLE_FACTS, payment: null });
    const unconditional = STEPS.filter((s) => !s.when);
    expect(onAccount.steps.map((s) => s.name)).toEqual(unconditional.map((s) => s.name));
    expect(onAccount.steps.map((s) => s.name)).not.toContain('authorizePayment');
    expect(onAccount.steps.map((s) => s.rank)).toEqual(unconditional.map((_, i) => (i + 1) * 10));
    expect(buildPlan(STEPS, SAMPLE_FACTS).steps).toEqual(onAccount.steps); // no `payment` at all: on account
    // The registry's plan (docs, orders stored without a plan) lists every step.
    expect(registryPlan(STEPS).steps.map((s) => s.name)).toEqual(STEPS.map((s) => s.name));
  });

  it('refuses a conditional pivot, and a registry whose plan without its conditional steps breaks the rules', () => {
    const pivot = STEPS.find((s) => s.phase === StepPhase.Pivot)!;
    expect(() => validateSteps(STEPS.map((s) => (s === pivot ? { ...s, when: () => true } : s)))).toThrow(
      /the pivot is never conditional/,
    );
  });
});

describe('jitteredDelayMs', () => {
  it('waits between half and all of the backoff of the attempt', () => {
    const policy: RetryPolicy = { initialInterval: '2 seconds', backoffCoefficient: 2, maximumInterval: '60 seconds' };
    expect(jitteredDelayMs(1, policy, 0)).toBe(1_000);
    expect(jitteredDelayMs(1, policy, 0.999_999)).toBe(2_000);
    expect(jitteredDelayMs(3, policy, 0.5)).toBe(6_000); // backoff 8 s: 4 s + half of 4 s
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 30 }),
        fc.double({ min: 0, max: 1, maxExcluded: true, noNaN: true }),
        (attempt, r) => {
          const backoff = Math.min(60_000, 2_000 * 2 ** (attempt - 1));
          const delay = jitteredDelayMs(attempt, policy, r);
          return delay >= backoff / 2 && delay <= backoff;
        },
      ),
    );
  });

  it('never exceeds maximumInterval, however late the attempt', () => {
    const policy = { initialInterval: 1_000, backoffCoefficient: 3, maximumInterval: 5_000 };
    expect(jitteredDelayMs(10, policy, 0.999_999)).toBe(5_000);
    expect(jitteredDelayMs(10, policy, 0)).toBe(2_500);
    expect(jitteredDelayMs(3, policy, 0)).toBe(2_500); // 9 s capped at 5 s
    expect(jitteredDelayMs(2, policy, 0)).toBe(1_500); // 3 s, under the cap
  });

  it("defaults to Temporal's policy: 1 s, coefficient 2, maximum 100 x the initial interval", () => {
    expect(jitteredDelayMs(1, undefined, 0)).toBe(500);
    expect(jitteredDelayMs(4, undefined, 0)).toBe(4_000);
    expect(jitteredDelayMs(50, undefined, 0.999_999)).toBe(100_000);
    expect(jitteredDelayMs(50, { initialInterval: '3 seconds' }, 0)).toBe(150_000);
  });

  it('spreads the retries of orders that failed at the same moment', () => {
    const delays = new Set(Array.from({ length: 50 }, () => jitteredDelayMs(2, undefined)));
    expect(delays.size).toBeGreaterThan(10);
  });
});

describe('rethrowProviderError', () => {
  const thrown = (err: unknown, timing?: RetryTiming): unknown => {
    try {
      rethrowProviderError(err, 'Email provider', timing);
    } catch (e) {
      return e;
    }
    throw new Error('did not throw');
  };

  it('maps the failure kinds to error types and retryability, with status and mayHaveActed as details', () => {
    const cases = [
      [new ProviderError('m', 'unauthorized', 401), ErrorType.Unauthorized, true, { status: 401, mayHaveActed: false }],
      [new ProviderError('m', 'rejected', 422), ErrorType.ProviderRejected, true, { status: 422, mayHaveActed: false }],
      [
        new ProviderError('m', 'unavailable', 503),
        ErrorType.ProviderUnavailable,
        false,
        { status: 503, mayHaveActed: false },
      ],
      [
        new ProviderError('m', 'unavailable', 502),
        ErrorType.ProviderUnavailable,
        false,
        { status: 502, mayHaveActed: true },
      ],
      [
        new ProviderError('m', 'conflict', 409),
        ErrorType.ProviderUnavailable,
        false,
        { status: 409, mayHaveActed: true },
      ],
    ] as const;
    for (const [err, type, nonRetryable, details] of cases) {
      const failure = thrown(err) as ApplicationFailure;
      expect(failure).toBeInstanceOf(ApplicationFailure);
      expect([failure.type, failure.nonRetryable, failure.details?.[0]]).toEqual([type, nonRetryable, details]);
      expect(failure.message).toBe('Email provider: m');
    }
  });

  it('sets a jittered next retry delay on transient failures only, from the attempt and retry policy', () => {
    const timing: RetryTiming = { attempt: 3, retryPolicy: { initialInterval: '2 seconds', backoffCoefficient: 2 } };
    const transient = thrown(new ProviderError('m', 'unavailable', 503), timing) as ApplicationFailure;
    expect(transient.nextRetryDelay).toBeGreaterThanOrEqual(4_000);
    expect(transient.nextRetryDelay).toBeLessThanOrEqual(8_000);
    expect((thrown(new ProviderError('m', 'unavailable', 503)) as ApplicationFailure).nextRetryDelay).toBeUndefined();
    expect(
      (thrown(new ProviderError('m', 'rejected', 422), timing) as ApplicationFailure).nextRetryDelay,
    ).toBeUndefined();
  });

  it('rethrows anything else unchanged', () => {
    const other = new TypeError('boom');
    expect(thrown(other)).toBe(other);
  });
});
