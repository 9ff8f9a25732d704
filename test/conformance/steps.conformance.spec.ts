/**
 * The conformance suite (issue 15): every step of the registry (activities/steps/index.ts, `STEPS`), and each
 * step's compensation, runs through the at-least-once battery (./battery.ts) against a real PostgreSQL database, the
 * real simulator server over HTTP and the real provider clients, the activities running under
 * MockActivityEnvironment as a worker would run them. A step added to the registry gets the battery with no edit
 * here; a step that breaks a property fails this suite.
 *
 * Each step has a lane of its own (a fresh database and simulator server: ./harness.ts), so the footprints and
 * ledger counts a scenario measures are its own. Lanes run at the same time; within a lane scenarios run one after
 * another (the later ones compare with the first's footprint). The battery starts in `beforeAll` without waiting;
 * each test waits for its scenario's outcome, so results come in as the lanes progress.
 *
 * `CONFORMANCE_STEPS=<name>,<name>` runs the battery of those steps only (e.g. the step you are writing).
 */
import { afterAll, beforeAll, describe, it } from 'vitest';
import { STEPS } from '../../activities/steps/index.js';
import { runBattery, scenariosFor, type ScenarioOutcome } from './battery.js';
import { openLane, PROJECT_REGISTRY, type Lane } from './harness.js';

/** A scenario's outcome, awaited by its test. */
interface Pending {
  promise: Promise<ScenarioOutcome>;
  resolve(outcome: ScenarioOutcome): void;
  reject(error: unknown): void;
}

function pending(): Pending {
  let resolve!: (outcome: ScenarioOutcome) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<ScenarioOutcome>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A lane that fails to open rejects every scenario of its step; a test not run (filtered) must not leak that.
  promise.catch(() => undefined);
  return { promise, resolve, reject };
}

/** The steps whose battery runs: every step of the registry, or those `CONFORMANCE_STEPS` names. */
const only = process.env.CONFORMANCE_STEPS?.split(',').map((s) => s.trim());
const UNDER_TEST = only ? STEPS.filter((s) => only.includes(s.name)) : STEPS;
if (only && UNDER_TEST.length !== only.length) {
  throw new Error(`CONFORMANCE_STEPS names a step the registry lacks: ${only.join(', ')}`);
}

/** `<step>/<scenario>` → its outcome, created while the tests are collected. */
const outcomes = new Map<string, Pending>();
for (const step of UNDER_TEST) {
  for (const scenario of scenariosFor(step, STEPS)) outcomes.set(`${step.name}/${scenario.id}`, pending());
}

let battery: Promise<unknown> = Promise.resolve();

beforeAll(() => {
  battery = Promise.all(
    UNDER_TEST.map(async (step) => {
      let lane: Lane | undefined;
      try {
        lane = await openLane(STEPS, PROJECT_REGISTRY);
        await runBattery(lane, step, (outcome) => outcomes.get(`${step.name}/${outcome.scenario}`)!.resolve(outcome));
      } catch (err) {
        for (const scenario of scenariosFor(step, STEPS)) outcomes.get(`${step.name}/${scenario.id}`)!.reject(err);
      } finally {
        await lane?.close();
      }
    }),
  );
});

afterAll(async () => {
  await battery;
});

for (const step of UNDER_TEST) {
  describe(`${step.name} (${step.kind} step, ${step.phase})`, () => {
    for (const scenario of scenariosFor(step, STEPS)) {
      const title = scenario.id.startsWith('compensation')
        ? `${step.compensation!.name}: ${scenario.title}`
        : scenario.title;
      it(
        title,
        async () => {
          const outcome = await outcomes.get(`${step.name}/${scenario.id}`)!.promise;
          if (outcome.error !== undefined) throw outcome.error;
          // What the scenario tells the author, in the test output (e.g. how long a provider that never answers
          // keeps an order from a person).
          if (outcome.note) (outcome.note.warning ? console.warn : console.log)(outcome.note.text);
        },
        120_000,
      );
    }
  });
}
