/**
 * The conformance harness: a lane (a fresh database, a simulator server, real provider clients and the activities of
 * a step registry), orders placed as the API places them, and activities run as a worker runs them.
 *
 * Everything is derived from the registry a lane is opened with: the plan of each order (buildPlan), the providers
 * (PROVIDER_LIST and any other its steps call: one simulator server over HTTP, one client per provider), the
 * activities (createActivities). No step, provider, table or status is named here.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Info } from '@temporalio/activity';
import { ApplicationFailure, type RetryPolicy } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createActivities, type OrderActivities } from '../../activities/index.js';
import { readSideEffects, type SideEffectRow } from '../../activities/kit/claims.js';
import type { StepDefinition } from '../../activities/kit/define.js';
import { buildPlan } from '../../activities/catalogue/plan.js';
import type { CompensationResult, StepInput, StepResult } from '../../workflows/order-activities.contract.js';
import type { ActivityDeps } from '../../activities/ports.js';
import { envPrefix, type ProviderClient, type ProviderClients } from '../../providers/kit/define.js';
import { testProviderApiKeys } from '../../scripts/lib/stack-definition.js';
import { startSimulators, type RunningSimulators } from '../../simulators/shared/simulator-server.js';
import { RETRY_PROFILES } from '../../workflows/activity-options.js';
import { orderWorkflowId } from '../../workflows/order-fulfilment.contract.js';
import { StepPhase, type OrderPlan, type PlannedRetryProfile } from '../../workflows/order-plan.js';
import { insertOrder, seedTestCatalogue, TEST_CATALOGUE } from '../helpers/fixtures.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';
import { loadWorkerConfig } from '../../src/worker/worker-config.js';
import {
  laneClients,
  laneProviders,
  SILENT_LOGGER,
  type ChildJob,
  type ChildLane,
  type RegistrySource,
} from './child-job.js';
import { measureFootprint, readFootprintSchema, type Footprint, type FootprintSchema } from './footprint.js';

export { SILENT_LOGGER, type ChildJob, type RegistrySource };

/** The project's registry (activities/steps/index.ts, export `STEPS`). */
export const PROJECT_REGISTRY: RegistrySource = {
  module: fileURLToPath(new URL('../../activities/steps/index.ts', import.meta.url)),
  exportName: 'STEPS',
};

/** Lease of a `sending` claim in the lanes, ms: as in production, longer than any scenario, so no claim expires. */
export const CLAIM_LEASE_MS = 120_000;

/**
 * Per-request timeout of the provider clients, ms: the configuration's default, as in production (the slow faults
 * of the battery stay well below it, but for the one that plays a provider that never answers in time).
 */
export const PROVIDER_TIMEOUT_MS = 10_000;

/**
 * One lane of the battery: everything a step's scenarios run against, shared by nobody else, so footprints and
 * ledger counts measured in it are attributable to the scenario that runs (a lane runs one scenario at a time).
 */
export interface Lane {
  registry: readonly StepDefinition[];
  registrySource: RegistrySource;
  db: TestDatabase;
  /**
   * One real HTTP server simulating every provider of the lane (the registered ones and those only its registry
   * calls) under `/<name>`, with their test API keys.
   */
  sims: RunningSimulators;
  deps: ActivityDeps;
  activities: OrderActivities;
  /**
   * The activities of the registry with provider clients that give up after `timeoutMs` (for the scenario of a
   * provider that never answers in time), built when first asked.
   */
  impatient(timeoutMs: number): OrderActivities;
  /** Provider client calls made by this process, by provider name (each counted when the call starts). */
  calls: Map<string, number>;
  /** The environment of a child process that runs an activity of this lane (see fixtures/step-process.ts). */
  childEnv: NodeJS.ProcessEnv;
  schema: FootprintSchema;
  /** Children still running (killed at close). */
  children: Set<ChildProcess>;
  /** A child started in advance, loading the activities while the first scenarios run (see {@link startChild}). */
  spare?: Child;
  close(): Promise<void>;
}

/**
 * The configuration environment of a lane: the process environment without any provider URL (so every provider
 * resolves to `<SIMULATOR_URL>/<name>`), the simulator's URL, and each provider's test API key as
 * `<NAME>_PROVIDER_API_KEY`.
 */
function laneEnvironment(
  simulatorUrl: string,
  apiKeys: Record<string, string>,
  providers: readonly { name: string }[],
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const provider of providers) delete env[`${envPrefix(provider)}_PROVIDER_URL`];
  for (const [name, key] of Object.entries(apiKeys)) env[`${envPrefix({ name })}_PROVIDER_API_KEY`] = key;
  env.SIMULATOR_URL = simulatorUrl;
  env.PROVIDER_TIMEOUT_MS = String(PROVIDER_TIMEOUT_MS);
  env.CLAIM_LEASE_MS = String(CLAIM_LEASE_MS);
  return env;
}

/** Wraps every client method to count calls per provider into `calls`. */
function countingClients(clients: ProviderClients, calls: Map<string, number>): ProviderClients {
  return Object.fromEntries(
    Object.entries(clients).map(([provider, client]) => [
      provider,
      Object.fromEntries(
        Object.entries(client).map(([operation, call]) => [
          operation,
          (request: unknown, key: string) => {
            calls.set(provider, (calls.get(provider) ?? 0) + 1);
            return call(request, key);
          },
        ]),
      ) as ProviderClient,
    ]),
  );
}

/**
 * Opens a lane over `registry`: a fresh migrated database with the test catalogue, the simulator server (real HTTP,
 * each provider's test API key required), real clients from `loadWorkerConfig` over that server, and the activities of
 * `registry` (createActivities).
 */
export async function openLane(registry: readonly StepDefinition[], registrySource: RegistrySource): Promise<Lane> {
  const providers = laneProviders(registry);
  const apiKeys = testProviderApiKeys(providers);
  const [db, sims] = await Promise.all([createTestDatabase(), startSimulators(providers, { apiKeys })]);
  await seedTestCatalogue(db.prisma);
  const childEnv = laneEnvironment(sims.url, apiKeys, providers);
  const config = loadWorkerConfig(childEnv);
  const calls = new Map<string, number>();
  const deps: ActivityDeps = {
    db: db.sql,
    providers: countingClients(laneClients(registry, config, childEnv), calls),
    idempotencyRecords: { purgeExpired: async () => 0 },
    settings: { claimLeaseMs: CLAIM_LEASE_MS },
  };
  const impatient = new Map<number, OrderActivities>();
  const children = new Set<ChildProcess>();
  const lane: Lane = {
    registry,
    registrySource,
    db,
    sims,
    deps,
    activities: createActivities(deps, registry),
    impatient(timeoutMs) {
      if (!impatient.has(timeoutMs)) {
        const clients = countingClients(laneClients(registry, config, childEnv, timeoutMs), calls);
        impatient.set(timeoutMs, createActivities({ ...deps, providers: clients }, registry));
      }
      return impatient.get(timeoutMs)!;
    },
    calls,
    childEnv,
    schema: await readFootprintSchema(db.sql),
    children,
    async close() {
      for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await sims.close();
      await db.drop();
    },
  };
  lane.spare = spawnChild(lane);
  return lane;
}

/** The lane's current footprint (absolute; see ./footprint.ts). */
export function footprint(lane: Lane): Promise<Footprint> {
  return measureFootprint(lane.db.sql, lane.schema, lane.sims);
}

/** Total provider client calls of this process so far (every provider). */
export function totalCalls(lane: Lane): number {
  return [...lane.calls.values()].reduce((a, b) => a + b, 0);
}

/**
 * The lines of every conformance order: one unit of each of the two best-stocked products of the test catalogue
 * (two lines, so per-line logic runs twice; one unit, so a lane's orders never run out of stock).
 */
export const ORDER_LINES: Array<{ sku: string; quantity: number }> = Object.entries(TEST_CATALOGUE)
  .sort(([, a], [, b]) => b[2] - a[2])
  .slice(0, 2)
  .map(([sku]) => ({ sku, quantity: 1 }));

/** An order as the battery uses it: its id, its stored plan, and the run id of its (imaginary) workflow run. */
export interface PlacedOrder {
  orderId: string;
  plan: OrderPlan;
  runId: string;
}

/** The payment method of the battery's orders: a card order, so that every conditional (card) step is planned. */
export const BATTERY_PAYMENT_METHOD = 'pm_card_ok';

/**
 * Places an order as the API does: status `received` with its lines ({@link ORDER_LINES}), paid by card
 * ({@link BATTERY_PAYMENT_METHOD}: every step of the registry applies to it), and its plan, built from the lane's
 * registry with the order's facts, stored on the order.
 */
export async function placeOrder(lane: Lane): Promise<PlacedOrder> {
  const orderId = await insertOrder(lane.db.prisma, ORDER_LINES);
  const row = await lane.db.prisma.order.update({
    where: { id: orderId },
    data: { paymentMethod: BATTERY_PAYMENT_METHOD },
    include: { lines: { orderBy: { lineNo: 'asc' } } },
  });
  const plan = buildPlan(lane.registry, {
    orderId,
    customerEmail: row.customerEmail,
    customerName: row.customerName,
    currency: row.currency,
    totalMinor: row.totalMinor,
    lines: row.lines.map((l) => ({ sku: l.sku, quantity: l.quantity })),
    payment: { method: BATTERY_PAYMENT_METHOD },
  });
  await lane.db.prisma.order.update({ where: { id: orderId }, data: { plan: plan as object } });
  return { orderId, plan, runId: randomUUID() };
}

/** The order's stored status, rank and halt mark. */
export async function orderState(
  lane: Lane,
  orderId: string,
): Promise<{ status: string; rank: number; halted: boolean }> {
  const row = await lane.db.prisma.order.findUniqueOrThrow({ where: { id: orderId } });
  return { status: row.status, rank: row.statusStep, halted: row.haltedAt !== null };
}

/** The claim row of `key`, if any (read through the kit's own query). */
export async function claimOf(lane: Lane, key: string): Promise<SideEffectRow | undefined> {
  const [row] = await readSideEffects(lane.db.sql, [key]);
  return row;
}

/** Who runs an activity: its activity id within the order's workflow run, and its Temporal attempt (from 1). */
export interface Execution {
  activityId: string;
  attempt: number;
}

/** The retry policy of a profile (workflows/activity-options.ts). */
export function retryPolicyOf(profile: keyof typeof RETRY_PROFILES): RetryPolicy {
  const policy = RETRY_PROFILES[profile].retry;
  if (!policy) throw new Error(`retry profile ${profile} has no retry policy`);
  return policy;
}

/**
 * The activity info a worker would give an execution: the order's workflow (`order-<orderId>`, its run id), the
 * activity id and attempt, and the retry policy of the activity's profile (the kit reads the attempt and the policy
 * to choose a jittered next delay, and the workflow id, activity id and attempt to own claims).
 */
export function activityInfoOf(
  order: PlacedOrder,
  activityType: string,
  execution: Execution,
  profile: PlannedRetryProfile | 'compensation',
  isLocal = false,
): Partial<Info> {
  return {
    activityId: execution.activityId,
    activityType,
    attempt: execution.attempt,
    isLocal,
    workflowExecution: { workflowId: orderWorkflowId(order.orderId), runId: order.runId },
    retryPolicy: retryPolicyOf(profile),
  } as Partial<Info>;
}

/** Runs `fn(input)` as one activity execution under MockActivityEnvironment (heartbeats and cancellation mocked). */
export function runActivity<I, R>(fn: (input: I) => Promise<R>, input: I, info: Partial<Info>): Promise<R> {
  const env = new MockActivityEnvironment(info, { logger: SILENT_LOGGER });
  return env.run(fn, input);
}

/** The activity input of the plan's step at `index`: the order, and the status and rank the plan gives it. */
export function stepInput(order: PlacedOrder, index: number): StepInput {
  const planned = order.plan.steps[index]!;
  // An event step records the report that ended its wait: the battery reports it as the workflow would.
  const event = planned.event
    ? {
        event: {
          id: `conformance:${planned.event.name}:${order.orderId}`,
          receivedAt: '2026-12-02T12:00:00.000Z',
          by: 'conformance',
          report: { parcels: 1 },
        },
      }
    : {};
  return { orderId: order.orderId, status: planned.status, rank: planned.rank, ...event };
}

/** The natural activity id of the plan's step at `index` (the workflow numbers its activities from 1). */
export function naturalActivityId(index: number): string {
  return String(index + 1);
}

/**
 * Runs the plan's step at `index` as `execution` (default: its natural activity id, attempt 1) through the lane's
 * real activity (or `activities`'s, e.g. {@link Lane.impatient}'s).
 */
export function runStep(
  lane: Lane,
  order: PlacedOrder,
  index: number,
  execution?: Execution,
  activities: OrderActivities = lane.activities,
): Promise<StepResult> {
  const planned = order.plan.steps[index]!;
  const fn = activities[planned.name] as (input: StepInput) => Promise<StepResult>;
  if (!fn) throw new Error(`no activity ${planned.name} in the lane's registry`);
  const exec = execution ?? { activityId: naturalActivityId(index), attempt: 1 };
  return runActivity(
    fn,
    stepInput(order, index),
    activityInfoOf(order, planned.name, exec, planned.retry, planned.kind !== 'provider'),
  );
}

/** Runs the compensation of the plan's step at `index` as `execution` (compensation profile). */
export function runCompensation(
  lane: Lane,
  order: PlacedOrder,
  index: number,
  execution: Execution,
): Promise<CompensationResult> {
  const name = order.plan.steps[index]!.compensation!.name;
  const fn = lane.activities[name] as (input: { orderId: string }) => Promise<CompensationResult>;
  return runActivity(fn, { orderId: order.orderId }, activityInfoOf(order, name, execution, 'compensation'));
}

/**
 * Brings a freshly placed order to the state just before the plan's step at `index`: runs every earlier step once,
 * in order, through the real activities.
 * @throws Error naming the step when one of them fails (the battery cannot start from a broken state).
 */
export async function advanceTo(lane: Lane, order: PlacedOrder, index: number): Promise<void> {
  for (let i = 0; i < index; i++) {
    try {
      await runStep(lane, order, i);
    } catch (err) {
      throw new Error(
        `setup: ${order.plan.steps[i]!.name} (before the step under test) failed: ${describeError(err)}`,
        {
          cause: err,
        },
      );
    }
  }
}

/** The names of the steps the workflow's halt fence covers: the plan's provider steps up to and including the pivot. */
export function fencedSteps(order: PlacedOrder): string[] {
  const pivot = order.plan.steps.findIndex((s) => s.phase === StepPhase.Pivot);
  return order.plan.steps
    .slice(0, pivot + 1)
    .filter((s) => s.kind === 'provider')
    .map((s) => s.name);
}

/** Runs the kit's haltOrder for the order, fencing {@link fencedSteps}. */
export function haltOrder(lane: Lane, order: PlacedOrder, reason: string) {
  return runActivity(
    lane.activities.haltOrder,
    { orderId: order.orderId, reason, steps: fencedSteps(order) },
    activityInfoOf(order, 'haltOrder', { activityId: '900', attempt: 1 }, 'compensation'),
  );
}

/** One line describing an error (type and message for an ApplicationFailure). */
export function describeError(err: unknown): string {
  if (err instanceof ApplicationFailure) return `${err.type ?? 'ApplicationFailure'}: ${err.message}`;
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/**
 * The failure of an activity that must fail.
 * @throws Error when it succeeded, or failed with something that is not an ApplicationFailure.
 */
export async function failureOf(run: Promise<unknown>, what: string): Promise<ApplicationFailure> {
  let result: unknown;
  try {
    result = await run;
  } catch (err) {
    if (err instanceof ApplicationFailure) return err;
    throw new Error(`${what}: expected an ApplicationFailure, got ${describeError(err)}`, { cause: err });
  }
  throw new Error(`${what}: expected a failure, but it succeeded with ${JSON.stringify(result)}`);
}

/** What {@link settle} saw: the result of the attempt that succeeded, and the failures of the attempts before it. */
export interface Settled<R> {
  result: R;
  /** The retryable failures, in order. */
  failures: ApplicationFailure[];
  /** The attempt that succeeded. */
  attempt: number;
}

/**
 * Retries an activity execution as Temporal would: attempt after attempt (same activity id) while it fails with a
 * retryable ApplicationFailure, waiting `delayMs` between attempts (shorter than the profile's backoff: the battery
 * tests outcomes, not timing; the chosen delay is checked where it matters).
 * @param run one attempt.
 * @throws the first non-retryable failure or non-ApplicationFailure error, or an Error after `maxAttempts`.
 */
export async function settle<R>(
  run: (attempt: number) => Promise<R>,
  options: { firstAttempt?: number; maxAttempts?: number; delayMs?: number } = {},
): Promise<Settled<R>> {
  const { firstAttempt = 1, maxAttempts = 60, delayMs = 100 } = options;
  const failures: ApplicationFailure[] = [];
  for (let attempt = firstAttempt; attempt < firstAttempt + maxAttempts; attempt++) {
    try {
      return { result: await run(attempt), failures, attempt };
    } catch (err) {
      if (!(err instanceof ApplicationFailure) || err.nonRetryable) throw err;
      failures.push(err);
      await sleep(delayMs);
    }
  }
  throw new Error(
    `still failing after ${maxAttempts} attempts; last: ${failures.length ? describeError(failures.at(-1)) : 'none'}`,
  );
}

/**
 * A tripwire at the simulator: a fault queued for `key` that any request under the key would consume. Nothing else
 * consumes it, so it tells whether a request reached the provider.
 * @returns `reached()`: true when a request consumed it (the fault is removed either way).
 */
export async function armTripwire(
  sims: RunningSimulators,
  provider: string,
  key: string,
): Promise<{ reached(): Promise<boolean> }> {
  const sim = sims.provider(provider);
  const fault = sim.injectFault({ mode: 'unavailable', keyPrefix: key, times: 1 });
  return {
    async reached() {
      const res = await fetch(`${sim.url}/_sim/faults`);
      const { faults } = (await res.json()) as { faults: Array<{ id: string }> };
      sim.clearFaults();
      return !faults.some((f) => f.id === fault.id);
    },
  };
}

/** Removes every queued fault of the lane and waits (up to `timeoutMs`) until no request is in flight at it. */
export async function quiesce(lane: Lane, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (const sim of Object.values(lane.sims.providers)) sim.clearFaults();
  while (Object.values(lane.sims.providers).some((sim) => sim.inFlightKeys().length > 0)) {
    if (Date.now() > deadline) return;
    await sleep(50);
  }
}

/** A running child: its process, and its output so far. */
export interface Child {
  process: ChildProcess;
  output(): string;
  exited: Promise<void>;
}

/** Spawns `node --import tsx fixtures/step-process.ts` for the lane (it loads, prints `ready`, waits for a job). */
function spawnChild(lane: Lane): Child {
  const entry = fileURLToPath(new URL('./fixtures/step-process.ts', import.meta.url));
  const where: ChildLane = { registry: lane.registrySource, databaseUrl: lane.db.url };
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
    env: { ...lane.childEnv, CONFORMANCE_LANE: JSON.stringify(where) },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  lane.children.add(child);
  let output = '';
  child.stdout!.on('data', (chunk) => (output += String(chunk)));
  child.stderr!.on('data', (chunk) => (output += String(chunk)));
  child.stdin!.on('error', () => undefined);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => lane.children.delete(child));
  return { process: child, output: () => output, exited };
}

/**
 * Runs `job` in another process (`node --import tsx fixtures/step-process.ts`, with the lane's environment): one
 * activity execution, which the battery kills with SIGKILL. Uses the lane's spare child (started when the lane
 * opened) when there is one.
 * @throws Error when the child ends before it is ready.
 */
export async function startChild(lane: Lane, job: ChildJob): Promise<Child> {
  const child = lane.spare ?? spawnChild(lane);
  lane.spare = undefined;
  await untilChild(child, () => /^ready$/m.test(child.output()), 'the child to load the activities', 60_000);
  child.process.stdin!.write(`${JSON.stringify(job)}\n`);
  return child;
}

/**
 * Waits until `ready()` holds, polling every 20 ms.
 * @throws Error when the child exits first or after `timeoutMs` (with the child's output).
 */
export async function untilChild(child: Child, ready: () => boolean, what: string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ready()) {
    if (child.process.exitCode !== null || child.process.signalCode !== null) {
      throw new Error(`the child process ended before ${what}; its output:\n${child.output().trim()}`);
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; child output:\n${child.output()}`);
    await sleep(20);
  }
}

/** Kills the child with SIGKILL and waits for it to exit. */
export async function killChild(child: Child): Promise<void> {
  child.process.kill('SIGKILL');
  await child.exited;
}
