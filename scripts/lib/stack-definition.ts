/**
 * The stack that `npm start`, the bench, the scale-out run and the e2e helpers start: processes, ports, environments,
 * derived from the provider and step registries (a new provider or step changes nothing here).
 */
import type { StepDefinition } from '../../activities/kit/define.js';
import { STEPS } from '../../activities/steps/index.js';
import { PROVIDER_LIST } from '../../providers/index.js';
import { envPrefix, providerTaskQueue, type ProviderDefinition } from '../../providers/kit/define.js';

/** Default ports, each overridable by its {@link PORT_VARIABLES} variable (`workerMetrics`: 0 turns it off). */
export const DEFAULT_PORTS = {
  ...{ api: 3000, simulators: 4010, temporal: 7233, temporalUi: 8233 },
  ...{ workerMetrics: 9464, embeddedPostgres: 54329 },
} as const;
export type StackPort = keyof typeof DEFAULT_PORTS;
export const PORT_VARIABLES: Readonly<Record<StackPort, string>> = {
  ...{ api: 'PORT', simulators: 'SIMULATOR_PORT', temporal: 'TEMPORAL_PORT', temporalUi: 'TEMPORAL_UI_PORT' },
  ...{ workerMetrics: 'WORKER_METRICS_PORT', embeddedPostgres: 'EMBEDDED_PG_PORT' },
};

/** The stack's ports from `env`, else {@link DEFAULT_PORTS}. @throws Error naming a variable that is not a TCP port. */
export function stackPorts(env: NodeJS.ProcessEnv = process.env): Record<StackPort, number> {
  const read = (role: StackPort): number => {
    const raw = env[PORT_VARIABLES[role]]?.trim();
    if (!raw) return DEFAULT_PORTS[role];
    const value = Number(raw);
    if (!Number.isInteger(value) || value < (role === 'workerMetrics' ? 0 : 1) || value > 65535)
      throw new Error(`${PORT_VARIABLES[role]}=${raw} is not a TCP port`);
    return value;
  };
  const roles = Object.keys(DEFAULT_PORTS) as StackPort[];
  return Object.fromEntries(roles.map((role) => [role, read(role)])) as Record<StackPort, number>;
}

/** A built process: its entry (from the repository root) and the path whose 2xx says it is ready (HTTP ones). */
export type StackProcess = { name: 'simulators' | 'worker' | 'api'; entry: string; readyPath?: string };

/** The built processes of the stack, in start order. */
export const STACK_PROCESSES = {
  simulators: { name: 'simulators', entry: 'dist/simulators/main.js', readyPath: '/_sim/health' },
  worker: { name: 'worker', entry: 'dist/src/worker.js' },
  api: { name: 'api', entry: 'dist/src/main.js', readyPath: '/health' },
} as const satisfies Record<string, StackProcess>;

/** `npm start`'s embedded database on `port` (user and password `postgres`, database `order_fulfilment`). */
export const embeddedDatabaseUrl = (port: number): string =>
  `postgresql://postgres:postgres@127.0.0.1:${port}/order_fulfilment`;

/** `http://<host>:<port>`: the base URL of a local process. */
export const localUrl = (port: number, host = '127.0.0.1'): string => `http://${host}:${port}`;

/** A provider's base URL on the simulator process: `<simulatorUrl>/<name>` (its `<NAME>_PROVIDER_URL` default). */
export const simulatedProviderUrl = (simulatorUrl: string, provider: string): string =>
  `${simulatorUrl.replace(/\/+$/, '')}/${encodeURIComponent(provider)}`;

/** A provider's ledger on the simulator process: `<simulatorUrl>/<name>/_sim/ledger`. */
export const providerLedgerUrl = (simulatorUrl: string, provider: string): string =>
  `${simulatedProviderUrl(simulatorUrl, provider)}/_sim/ledger`;

const bearerKeys = (prefix: string) => (providers: readonly ProviderDefinition[]) =>
  Object.fromEntries(providers.map((p) => [p.name, `${prefix}-${p.name}-key`])) as Record<string, string>;
/** Bearer tokens by provider name: `dev-<name>-key`, what `npm start`'s simulators accept. */
export const devProviderApiKeys = bearerKeys('dev');
/** Bearer tokens by provider name for tests: `test-<name>-key`. */
export const testProviderApiKeys = bearerKeys('test');

/** `<NAME>_PROVIDER_API_KEY`: the variable of a provider's bearer token. */
const keyVariable = (p: { name: string }): string => `${envPrefix(p)}_PROVIDER_API_KEY`;
const apiKeyVariables = (keys: Readonly<Record<string, string>> = {}): Record<string, string> =>
  Object.fromEntries(Object.entries(keys).map(([name, key]) => [keyVariable({ name }), key]));

/** The bearer tokens set in `env` (`<NAME>_PROVIDER_API_KEY`), by provider name; unset ones are left out. */
export function providerApiKeysFromEnv(env: NodeJS.ProcessEnv, providers = PROVIDER_LIST): Record<string, string> {
  const keys = providers.map((p) => [p.name, env[keyVariable(p)]?.trim()]);
  return Object.fromEntries(keys.filter(([, key]) => key));
}

/** `env` without any `<NAME>_PROVIDER_URL` or `<NAME>_PROVIDER_API_KEY`: for launchers that run their own simulators. */
export function withoutProviderVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const drop = new Set(PROVIDER_LIST.flatMap((p) => [`${envPrefix(p)}_PROVIDER_URL`, keyVariable(p)]));
  return Object.fromEntries(Object.entries(env).filter(([name]) => !drop.has(name)));
}

/** The API's and the worker's environment (src/config/config.ts): database, Temporal, simulators, provider keys. */
export function serviceEnvironment(opts: {
  databaseUrl: string;
  temporalAddress: string;
  taskQueue?: string;
  simulatorUrl: string;
  providerApiKeys?: Readonly<Record<string, string>>;
}): Record<string, string> {
  return {
    ...{ DATABASE_URL: opts.databaseUrl, TEMPORAL_ADDRESS: opts.temporalAddress },
    ...(opts.taskQueue ? { TEMPORAL_TASK_QUEUE: opts.taskQueue } : {}),
    ...{ SIMULATOR_URL: opts.simulatorUrl, ...apiKeyVariables(opts.providerApiKeys) },
  };
}

/** The simulators' environment: port, accepted tokens, and `callback` (our API and a `warehouse`-scoped key). */
export function simulatorEnvironment(opts: {
  port: number;
  host?: string;
  providerApiKeys?: Readonly<Record<string, string>>;
  callback?: { url: string; apiKey: string };
}): Record<string, string> {
  const { port, host, callback } = opts;
  return {
    ...{ SIMULATOR_PORT: String(port), ...(host ? { SIMULATOR_HOST: host } : {}) },
    ...apiKeyVariables(opts.providerApiKeys),
    ...(callback ? { SIMULATOR_CALLBACK_URL: callback.url, SIMULATOR_CALLBACK_API_KEY: callback.apiKey } : {}),
  };
}

/** The providers a step or a compensation of `steps` calls, in registry order. */
function calledProviders(steps: readonly StepDefinition[] = STEPS): ProviderDefinition[] {
  const called = new Set(
    steps.flatMap((s) => [
      ...(s.kind === 'provider' ? [s.provider.name] : []),
      ...(s.compensation?.kind === 'provider' ? [s.compensation.provider.name] : []),
    ]),
  );
  return PROVIDER_LIST.filter((p) => called.has(p.name));
}

/** The providers of the steps without a `when` condition: those the ledger checks require every order's key at. */
export const providersEveryOrderCalls = (steps = STEPS): ProviderDefinition[] =>
  calledProviders(steps.filter((s) => !s.when));

/** The task queues a worker polls: `taskQueue` (workflows too) and `<taskQueue>.<provider>` of each called provider. */
export function workerTaskQueues(taskQueue: string): Array<{ name: string; workflows: boolean }> {
  const providers = calledProviders().map((p) => ({ name: providerTaskQueue(taskQueue, p.name), workflows: false }));
  return [{ name: taskQueue, workflows: true }, ...providers];
}
