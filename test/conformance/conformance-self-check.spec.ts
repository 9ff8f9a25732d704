/**
 * The conformance battery discriminates: the same battery functions the suite runs on the registry
 * (./steps.conformance.spec.ts) report the properties a deliberately broken step breaks
 * (./fixtures/broken-steps.ts), while they pass what it keeps; and they pass correct new steps added to the
 * registry the way issue 15 describes (./fixtures/extended-steps.ts), with no edit to the battery; and steps of a
 * payments provider whose operations depend on each other (./fixtures/payment-steps.ts): an authorization placed
 * first whose compensation voids it by the id of its answer, and a capture after the pivot that reads that answer.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StepDefinition } from '../../activities/kit/define.js';
import { attentionNote, runBattery, type ScenarioId, type ScenarioOutcome } from './battery.js';
import { BROKEN_STEPS, bumpStockUnguarded, sendWithFreshKey } from './fixtures/broken-steps.js';
import { selfCheckPoints, EXTENDED_STEPS, selfCheckNotice } from './fixtures/extended-steps.js';
import { PAYMENT_STEPS } from './fixtures/payment-steps.js';
import { authorizeTestPayment, captureTestPayment } from '../helpers/test-payments.js';
import { openLane, type Lane, type RegistrySource } from './harness.js';

/** A registry of the fixtures, as a child process loads it. */
function fixtureRegistry(file: string, exportName: string): RegistrySource {
  return { module: fileURLToPath(new URL(`./fixtures/${file}`, import.meta.url)), exportName };
}

const RUNS: Array<{ step: StepDefinition; registry: readonly StepDefinition[]; source: RegistrySource }> = [
  { step: bumpStockUnguarded, registry: BROKEN_STEPS, source: fixtureRegistry('broken-steps.ts', 'BROKEN_STEPS') },
  { step: sendWithFreshKey, registry: BROKEN_STEPS, source: fixtureRegistry('broken-steps.ts', 'BROKEN_STEPS') },
  {
    step: selfCheckNotice,
    registry: EXTENDED_STEPS,
    source: fixtureRegistry('extended-steps.ts', 'EXTENDED_STEPS'),
  },
  {
    step: selfCheckPoints,
    registry: EXTENDED_STEPS,
    source: fixtureRegistry('extended-steps.ts', 'EXTENDED_STEPS'),
  },
  {
    step: authorizeTestPayment,
    registry: PAYMENT_STEPS,
    source: fixtureRegistry('payment-steps.ts', 'PAYMENT_STEPS'),
  },
  {
    step: captureTestPayment,
    registry: PAYMENT_STEPS,
    source: fixtureRegistry('payment-steps.ts', 'PAYMENT_STEPS'),
  },
];

const outcomes = new Map<string, ScenarioOutcome[]>();
const lanes: Lane[] = [];

beforeAll(async () => {
  await Promise.all(
    RUNS.map(async ({ step, registry, source }) => {
      const lane = await openLane(registry, source);
      lanes.push(lane);
      outcomes.set(step.name, await runBattery(lane, step));
    }),
  );
}, 180_000);

afterAll(async () => {
  await Promise.all(lanes.map((lane) => lane.close()));
});

/** The scenarios of `step` that failed, with the message of each failure. */
function failures(step: string): Map<ScenarioId, string> {
  return new Map(
    outcomes
      .get(step)!
      .filter((o) => o.error !== undefined)
      .map((o) => [o.scenario, o.error instanceof Error ? o.error.message : String(o.error)]),
  );
}

describe('conformance self-check', () => {
  it('reports a database step whose "idempotent by nature" re-run increments a counter again', () => {
    const failed = failures(bumpStockUnguarded.name);
    // Every re-run of the committed step adds stock again: a sum in the footprint doubles.
    for (const scenario of ['twice', 'concurrent', 'answer-lost'] as const) {
      expect(failed.get(scenario), scenario).toMatch(/footprint differs/);
    }
    // A single run, a refused run and a run killed before COMMIT are fine: the battery does not fail everything.
    for (const scenario of ['once', 'closed', 'killed'] as const)
      expect(failed.get(scenario), scenario).toBeUndefined();
  });

  it('reports a provider step whose idempotency key is a fresh random id per attempt', () => {
    const failed = failures(sendWithFreshKey.name);
    // No effect is ever found under the step's key: the key is not a function of the work.
    expect(failed.get('once')).toMatch(/effects at the provider under the step's key/);
    // Each retry sends under a new key: the provider acts again, the footprint (its ledger count) doubles.
    for (const scenario of ['twice', 'concurrent'] as const) {
      expect(failed.get(scenario), scenario).toMatch(/footprint differs|another provider id/);
    }
    // The faults aimed at the step's key never meet its calls, and a killed call is never found in flight.
    for (const scenario of ['answer-lost', 'unavailable', 'rejected', 'killed'] as const) {
      expect(failed.get(scenario), scenario).toBeDefined();
    }
    // Refusing a closed order does not depend on the key.
    expect(failed.get('closed')).toBeUndefined();
  });

  it('passes a correct provider step inserted after the first after-pivot step', () => {
    expect(Object.fromEntries(failures(selfCheckNotice.name))).toEqual({});
  });

  // The last step writes the final status. A database step that is idempotent by nature re-runs its transaction on
  // a retry; the kit's status write refuses a final order, so the retry of the step that made the order final is
  // refused (OrderClosedError) instead of returning the same result: `twice`, `concurrent` and `answer-lost` fail
  // until the kit lets a step re-run on the status it wrote itself (activities/kit/run.ts, runDatabaseStep).
  it('passes a correct database step, idempotent by nature, appended after the last step', () => {
    expect(Object.fromEntries(failures(selfCheckPoints.name))).toEqual({});
  });

  it('passes a provider step placed first whose compensation voids by the id of its answer (ctx.forward)', () => {
    expect(Object.fromEntries(failures(authorizeTestPayment.name))).toEqual({});
    // Its compensation ran against the provider, and the never-answers scenario reported the profile's figure.
    const scenarios = outcomes.get(authorizeTestPayment.name)!.map((o) => o.scenario);
    expect(scenarios).toEqual(expect.arrayContaining(['compensation-once', 'never-answers']));
  });

  it("passes a provider step after the pivot whose request reads an earlier step's answer (ctx.answers)", () => {
    expect(Object.fromEntries(failures(captureTestPayment.name))).toEqual({});
  });

  it('tells how long a provider that never answers keeps an order from a person, and warns above the bound', () => {
    const note = outcomes.get(captureTestPayment.name)!.find((o) => o.scenario === 'never-answers')!.note!;
    // providerCall: 15 attempts of 10 s and 2+4+8+16+32+60×9 s of backoff, of which the kit's jitter waits half to all.
    expect(note.text).toContain('attention_required after 7.5 min to 12.5 min (retry profile providerCall');
    expect(note.warning).toBe(false);
    // A profile that keeps retrying longer than the bound is reported as a warning.
    const long = attentionNote('slowStep', 'compensation', 10_000);
    expect(long.warning).toBe(true);
    expect(long.text).toMatch(/^WARNING slowStep: .* after 10\.4 min to 17\.4 min .* above the 15\.0 min bound/);
  });
});
