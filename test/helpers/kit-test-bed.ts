/**
 * Runs the step kit's activities (activities/index.ts `createActivities`) one by one under MockActivityEnvironment,
 * with fake providers derived from the provider definitions and a real PostgreSQL database, and with the inputs the
 * workflow would give them: each step's status and rank from the order's plan (`buildPlan`), and haltOrder's fence
 * (the plan's provider steps up to and including the pivot).
 */
import type { Info } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger } from '@temporalio/worker';
import { expect } from 'vitest';
import {
  createActivities,
  type CompensationActivity,
  type CompensationInput,
  type CompensationResult,
  type HaltOrderResult,
  type KitActivities,
  type OrderActivities,
  type StepActivity,
  type StepInput,
  type StepResult,
} from '../../activities/index.js';
import type { StepDefinition } from '../../activities/kit/define.js';
import { buildPlan } from '../../activities/catalogue/plan.js';
import type { ProviderDefinition } from '../../providers/kit/define.js';
import { pivotIndex, type OrderFacts, type OrderPlan, type PlannedStep } from '../../workflows/order-plan.js';
import { fakeProviders, type FakeProvider } from './fake-providers.js';
import type { TestDatabase } from './postgres.js';
import { SHIPPED_PROVIDERS, SHIPPED_STEPS } from './shipped-steps.js';

/** Order facts for plans built in tests (a plan's statuses and ranks do not depend on them). */
export const SAMPLE_FACTS: OrderFacts = {
  orderId: '00000000-0000-4000-8000-000000000001',
  customerEmail: 'ada@example.com',
  customerName: 'Ada Lovelace',
  currency: 'EUR',
  totalMinor: 1250,
  lines: [{ sku: 'MUG-WHT', quantity: 1 }],
};

/** The plan of the shipped steps (./shipped-steps.ts), as the API builds it for a new order. */
export const PLAN: OrderPlan = buildPlan(SHIPPED_STEPS, SAMPLE_FACTS);

/**
 * The planned step `name` of `plan`.
 * @throws Error when the plan has no such step.
 */
export function plannedStep(name: string, plan: OrderPlan = PLAN): PlannedStep {
  const step = plan.steps.find((s) => s.name === name);
  if (!step) throw new Error(`the plan has no step ${name}`);
  return step;
}

/** The input the workflow gives step `name` of the order: its status and rank from the plan. */
export function stepInput(name: string, orderId: string, plan: OrderPlan = PLAN): StepInput {
  const { status, rank } = plannedStep(name, plan);
  return { orderId, status, rank };
}

/** The steps haltOrder fences, as the workflow computes them: the plan's provider steps up to and including the pivot. */
export function fencedSteps(plan: OrderPlan = PLAN): string[] {
  return plan.steps
    .slice(0, pivotIndex(plan) + 1)
    .filter((s) => s.kind === 'provider')
    .map((s) => s.name);
}

/**
 * Activity info of attempt `attempt` of activity `activityId` in the order's workflow (`order-<orderId>`): what the
 * claim owner `<workflowId>/<activityId>#<attempt>` is made of.
 */
export function activityInfo(orderId: string, attempt = 1, activityId = '5', extra: Partial<Info> = {}): Partial<Info> {
  return {
    attempt,
    activityId,
    workflowExecution: { workflowId: `order-${orderId}`, runId: 'run-1' },
    ...extra,
  } as Partial<Info>;
}

/** A mock activity environment that logs only errors (the tests provoke failures on purpose). */
export function mockEnv(info: Partial<Info> = {}): MockActivityEnvironment {
  return new MockActivityEnvironment(info, { logger: new DefaultLogger('ERROR') });
}

/**
 * Awaits `p` and returns the ApplicationFailure it rejects with; fails the test when it resolves or rejects with
 * anything else.
 */
export async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

/** The activities over one database with fresh fake providers, and shortcuts that run them with plan inputs. */
export interface KitTestBed {
  acts: OrderActivities;
  /** The fake of every provider, by name. */
  fakes: Record<string, FakeProvider>;
  /** The plan the inputs come from (built from the test bed's steps). */
  plan: OrderPlan;
  /** Runs step `name` on the order with its planned status and rank. */
  step(name: string, orderId: string, info?: Partial<Info>): Promise<StepResult>;
  /** Runs compensation `name` on the order. */
  compensate(name: string, orderId: string, info?: Partial<Info>): Promise<CompensationResult>;
  /** Runs haltOrder on the order, fencing `steps` (default: the plan's provider steps up to the pivot). */
  halt(orderId: string, reason?: string, steps?: string[], info?: Partial<Info>): Promise<HaltOrderResult>;
  /** Runs one of the kit's own activities with `input`. */
  kit<K extends keyof KitActivities>(
    name: K,
    input: Parameters<KitActivities[K]>[0],
    info?: Partial<Info>,
  ): ReturnType<KitActivities[K]>;
}

/** Options of {@link kitTestBed}. */
export interface KitTestBedOptions {
  /** The step registry (default: the shipped steps, ./shipped-steps.ts). */
  steps?: readonly StepDefinition[];
  /** The providers to fake (default: the shipped providers). */
  providers?: readonly ProviderDefinition[];
  /** ActivitySettings.claimLeaseMs (default 60 000). */
  claimLeaseMs?: number;
}

/** Builds the activities of `options.steps` over `db` (its node-postgres client, as the worker wires it). */
export function kitTestBed(db: TestDatabase, options: KitTestBedOptions = {}): KitTestBed {
  const steps = options.steps ?? SHIPPED_STEPS;
  const { fakes, clients } = fakeProviders(options.providers ?? SHIPPED_PROVIDERS);
  const acts = createActivities(
    {
      db: db.sql,
      providers: clients,
      idempotencyRecords: { purgeExpired: async () => 0 },
      settings: { claimLeaseMs: options.claimLeaseMs ?? 60_000 },
    },
    steps,
  );
  const plan = buildPlan(steps, SAMPLE_FACTS);
  const activity = <F>(name: string): F => {
    const fn = acts[name];
    if (!fn) throw new Error(`no activity ${name}`);
    return fn as F;
  };
  return {
    acts,
    fakes,
    plan,
    step: (name, orderId, info = {}) => mockEnv(info).run(activity<StepActivity>(name), stepInput(name, orderId, plan)),
    compensate: (name, orderId, info = {}) =>
      mockEnv(info).run(activity<CompensationActivity>(name), { orderId } satisfies CompensationInput),
    halt: (orderId, reason = 'cancelled: test', fenced = fencedSteps(plan), info = {}) =>
      mockEnv(info).run(acts.haltOrder, { orderId, reason, steps: fenced }),
    kit: (name, input, info = {}) =>
      mockEnv(info).run(acts[name] as (arg: typeof input) => ReturnType<KitActivities[typeof name]>, input) as never,
  };
}
