/**
 * The step catalogue (activities/catalogue/) and the worker's registry (activities/steps/index.ts) cannot drift: one
 * definition per entry, in the catalogue's order, each spreading its entry unchanged (`sameEntry`), no step file
 * without an entry; and the plan the API builds from the catalogue is the plan the worker builds from the
 * definitions, for every kind of order.
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  buildPlan,
  registryPlan,
  sameEntry,
  stepFileName,
  STEP_CATALOGUE,
  validateCatalogue,
} from '../../activities/catalogue/index.js';
import { STEPS } from '../../activities/index.js';
import { shipOrder } from '../../activities/steps/ship-order.step.js';
import { SAMPLE_FACTS } from '../helpers/kit-test-bed.js';

describe('the step catalogue', () => {
  it('has one definition per entry, in its order, each equal to its entry', () => {
    expect(STEPS.map((s) => s.name)).toEqual(STEP_CATALOGUE.map((e) => e.name));
    STEPS.forEach((step, i) => expect(sameEntry(step, STEP_CATALOGUE[i]!)).toEqual([]));
  });

  it('has an entry for every step file', () => {
    const files = readdirSync(path.resolve(import.meta.dirname, '../../activities/steps')).filter((f) =>
      f.endsWith('.step.ts'),
    );
    expect(files.sort()).toEqual(STEP_CATALOGUE.map((e) => stepFileName(e.name)).sort());
  });

  it('names every member in which a definition differs from its entry', () => {
    const entry = STEP_CATALOGUE.find((e) => e.name === 'shipOrder')!;
    expect(sameEntry({ ...shipOrder, label: 'Sent' }, entry)).toEqual(['label']);
    expect(sameEntry({ ...shipOrder, key: (id: string) => `shipment:${id}` }, entry)).toEqual(['key']);
    const pick = STEP_CATALOGUE.find((e) => e.name === 'requestPick')!;
    if (pick.kind !== 'provider' || !pick.compensation) throw new Error('requestPick has a compensation');
    const renamed = { ...pick, compensation: { ...pick.compensation, name: 'dropPick' } };
    expect(sameEntry(renamed, pick)).toEqual(['compensation.name']);
  });

  it('holds by the registry rules', () => {
    expect(() => validateCatalogue(STEP_CATALOGUE)).not.toThrow();
    expect(() => validateCatalogue(STEP_CATALOGUE.filter((e) => e.phase !== 'pivot'))).toThrow(/exactly one step/);
  });

  it('plans every order as the definitions do (the API and the worker build the same plan)', () => {
    for (const payment of [null, { method: 'pm_card_ok' }, undefined]) {
      const facts = { ...SAMPLE_FACTS, payment };
      const events = { packed: { timeoutMs: 60_000, marginMs: 1_000 } };
      expect(buildPlan(STEP_CATALOGUE, facts, { events })).toEqual(buildPlan(STEPS, facts, { events }));
    }
    expect(registryPlan(STEP_CATALOGUE)).toEqual(registryPlan(STEPS));
  });
});
