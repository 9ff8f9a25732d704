/**
 * What the battery's child process (fixtures/step-process.ts) and the test process share. Imports nothing that
 * needs vitest, so the child can load it.
 */
import type { Info } from '@temporalio/activity';
import type { Logger } from '@temporalio/common';
import type { StepDefinition } from '../../activities/kit/define.js';
import type { StepInput } from '../../workflows/order-activities.contract.js';
import { PROVIDER_LIST } from '../../providers/index.js';
import { createProviderClient } from '../../providers/kit/client.js';
import { envPrefix, type ProviderClients, type ProviderDefinition } from '../../providers/kit/define.js';
import { createProviderClients } from '../../src/worker/provider-clients.js';
import type { WorkerConfig } from '../../src/worker/worker-config.js';

/** Where a child process finds the registry of a lane: a module (absolute path) and the name of its export. */
export interface RegistrySource {
  module: string;
  exportName: string;
}

/** Where a child process runs (fixtures/step-process.ts reads it from `CONFORMANCE_LANE` at start). */
export interface ChildLane {
  registry: RegistrySource;
  databaseUrl: string;
}

/** What a child process runs (one JSON line on its stdin, once it printed `ready`). */
export interface ChildJob {
  /** The activity's name (a step of the registry). */
  activity: string;
  input: StepInput;
  info: Partial<Info>;
  /**
   * True: the child's database port holds every transaction open after the step's work, prints `before-commit`
   * and waits (to be killed before COMMIT). False: a normal run.
   */
  hangBeforeCommit: boolean;
}

/** A logger that drops everything: the battery provokes failures on purpose. */
export const SILENT_LOGGER: Logger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};

/**
 * Every provider a lane serves: the registered ones (providers/index.ts), and any other provider the registry's steps
 * or compensations call (a test fixture's), in that order.
 */
export function laneProviders(registry: readonly StepDefinition[]): ProviderDefinition[] {
  const providers = new Map(PROVIDER_LIST.map((p) => [p.name, p]));
  for (const step of registry) {
    if (step.kind === 'provider' && !providers.has(step.provider.name))
      providers.set(step.provider.name, step.provider);
    const compensation = step.compensation;
    if (compensation?.kind === 'provider' && !providers.has(compensation.provider.name)) {
      providers.set(compensation.provider.name, compensation.provider);
    }
  }
  return [...providers.values()];
}

/**
 * The provider clients of a lane, as the worker builds them from `config` (createProviderClients), plus a client of
 * each provider only the registry names, at `<SIMULATOR_URL>/<name>` with `<NAME>_PROVIDER_API_KEY` of `env` and
 * `timeoutMs` (default the configuration's `PROVIDER_TIMEOUT_MS`).
 */
export function laneClients(
  registry: readonly StepDefinition[],
  config: WorkerConfig,
  env: NodeJS.ProcessEnv,
  timeoutMs = config.PROVIDER_TIMEOUT_MS,
): ProviderClients {
  const clients = { ...createProviderClients({ ...config, PROVIDER_TIMEOUT_MS: timeoutMs }) };
  for (const provider of laneProviders(registry)) {
    if (clients[provider.name]) continue;
    clients[provider.name] = createProviderClient(provider, {
      baseUrl: `${env.SIMULATOR_URL}/${provider.name}`,
      apiKey: env[`${envPrefix(provider)}_PROVIDER_API_KEY`] ?? '',
      timeoutMs,
      settings: Object.fromEntries(Object.entries(provider.settings ?? {}).map(([n, s]) => [n, s.default])),
    });
  }
  return clients;
}
