/**
 * The one definition of the stack that `npm start` (scripts/stack.ts), the bench (bench/lib/env.ts), the scale-out
 * run (scripts/scale-out.ts) and the e2e helpers (test/helpers/test-stack.ts) all start from: which processes run,
 * from which entry point, on which default port, how each is known to be ready, and the environment each gets. The
 * providers come from providers/index.ts, so a new provider changes nothing here or in any launcher.
 */
import { PROVIDER_LIST } from '../../providers/index.js';
import { envPrefix, type ProviderDefinition } from '../../providers/kit/define.js';

/** Default ports of the local stack (each overridable by its environment variable). */
export const DEFAULT_PORTS = {
  /** The API (`PORT`). */
  api: 3000,
  /** The one simulator process, every provider under `/<name>` (`SIMULATOR_PORT`). */
  simulators: 4010,
  /** The Temporal frontend, gRPC (`TEMPORAL_PORT`). */
  temporal: 7233,
  /** The Temporal Web UI (`TEMPORAL_UI_PORT`). */
  temporalUi: 8233,
  /** The worker's Prometheus endpoint (`WORKER_METRICS_PORT`). */
  workerMetrics: 9464,
  /** The embedded PostgreSQL of `npm start` (`EMBEDDED_PG_PORT`). */
  embeddedPostgres: 54329,
} as const;

/** A port of the local stack, by its role. */
export type StackPort = keyof typeof DEFAULT_PORTS;

/** The environment variable that overrides each default port. */
export const PORT_VARIABLES: Readonly<Record<StackPort, string>> = {
  api: 'PORT',
  simulators: 'SIMULATOR_PORT',
  temporal: 'TEMPORAL_PORT',
  temporalUi: 'TEMPORAL_UI_PORT',
  workerMetrics: 'WORKER_METRICS_PORT',
  embeddedPostgres: 'EMBEDDED_PG_PORT',
};

/**
 * The ports of the local stack: each {@link DEFAULT_PORTS} entry unless its {@link PORT_VARIABLES} variable is set
 * (`WORKER_METRICS_PORT=0` turns the worker's endpoint off, as the worker reads it).
 * @throws Error naming the variable when a value is not a TCP port.
 */
export function stackPorts(env: NodeJS.ProcessEnv = process.env): Record<StackPort, number> {
  const read = (role: StackPort): number => {
    const name = PORT_VARIABLES[role];
    const raw = env[name]?.trim();
    if (!raw) return DEFAULT_PORTS[role];
    const value = Number(raw);
    const min = role === 'workerMetrics' ? 0 : 1;
    if (!Number.isInteger(value) || value < min || value > 65535) throw new Error(`${name}=${raw} is not a TCP port`);
    return value;
  };
  return Object.fromEntries(Object.keys(DEFAULT_PORTS).map((role) => [role, read(role as StackPort)])) as Record<
    StackPort,
    number
  >;
}

/** A process of the stack that runs from the build (`dist/`). */
export interface StackProcess {
  /** Its name in logs, e.g. `simulators`. */
  name: 'simulators' | 'worker' | 'api';
  /** Entry point, relative to the repository root. */
  entry: string;
  /** The port it listens on (its role in {@link DEFAULT_PORTS}), for HTTP processes. */
  port?: StackPort;
  /** The path whose 2xx says it is ready (HTTP processes), under its base URL. */
  readyPath?: string;
  /** `pollers`: ready once it polls every task queue it serves (the worker; scripts/lib/stack-processes.ts). */
  readyWhen?: 'pollers';
}

/** The built processes of the stack, in start order. */
export const STACK_PROCESSES = {
  simulators: { name: 'simulators', entry: 'dist/simulators/main.js', port: 'simulators', readyPath: '/_sim/health' },
  worker: { name: 'worker', entry: 'dist/src/worker.js', readyWhen: 'pollers' },
  api: { name: 'api', entry: 'dist/src/main.js', port: 'api', readyPath: '/health' },
} as const satisfies Record<string, StackProcess>;

/** Every `.js` entry point the stack runs (what `npm start` checks the build of). */
export const STACK_ENTRY_POINTS: readonly string[] = Object.values(STACK_PROCESSES).map((p) => p.entry);

/** `http://<host>:<port>`: the base URL of a local process (the simulators' is `SIMULATOR_URL`). */
export function localUrl(port: number, host = '127.0.0.1'): string {
  return `http://${host}:${port}`;
}

/** A provider's base URL on the simulator process: `<simulatorUrl>/<name>` (what its `<NAME>_PROVIDER_URL` defaults to). */
export function simulatedProviderUrl(simulatorUrl: string, provider: string): string {
  return `${simulatorUrl.replace(/\/+$/, '')}/${encodeURIComponent(provider)}`;
}

/** A provider's ledger on the simulator process: `<simulatorUrl>/<name>/_sim/ledger`. */
export function providerLedgerUrl(simulatorUrl: string, provider: string): string {
  return `${simulatedProviderUrl(simulatorUrl, provider)}/_sim/ledger`;
}

/** Bearer tokens of the providers by name: `dev-<name>-key`, what `npm start`'s simulators accept. */
export function devProviderApiKeys(providers: readonly ProviderDefinition[]): Record<string, string> {
  return Object.fromEntries(providers.map((p) => [p.name, `dev-${p.name}-key`]));
}

/** Bearer tokens of the providers by name for tests: `test-<name>-key`. */
export function testProviderApiKeys(providers: readonly ProviderDefinition[]): Record<string, string> {
  return Object.fromEntries(providers.map((p) => [p.name, `test-${p.name}-key`]));
}

/** The bearer tokens set in `env` (`<NAME>_PROVIDER_API_KEY`), by provider name; unset ones are left out. */
export function providerApiKeysFromEnv(
  env: NodeJS.ProcessEnv,
  providers: readonly ProviderDefinition[] = PROVIDER_LIST,
): Record<string, string> {
  return Object.fromEntries(
    providers.flatMap((p) => {
      const key = env[`${envPrefix(p)}_PROVIDER_API_KEY`]?.trim();
      return key ? [[p.name, key]] : [];
    }),
  );
}

/**
 * `env` without any provider's own URL and key (`<NAME>_PROVIDER_URL`, `<NAME>_PROVIDER_API_KEY`), for a launcher
 * whose services must reach its own simulators (the bench, the scale-out run), whatever the caller's shell exports.
 */
export function withoutProviderVariables(
  env: NodeJS.ProcessEnv,
  providers: readonly ProviderDefinition[] = PROVIDER_LIST,
): NodeJS.ProcessEnv {
  const drop = new Set(providers.flatMap((p) => [`${envPrefix(p)}_PROVIDER_URL`, `${envPrefix(p)}_PROVIDER_API_KEY`]));
  return Object.fromEntries(Object.entries(env).filter(([name]) => !drop.has(name)));
}

/** `{ EMAIL_PROVIDER_API_KEY: ..., ... }` for the given keys by provider name. */
function apiKeyVariables(keys: Readonly<Record<string, string>> | undefined): Record<string, string> {
  if (!keys) return {};
  return Object.fromEntries(
    Object.entries(keys).map(([name, key]) => [`${envPrefix({ name })}_PROVIDER_API_KEY`, key]),
  );
}

/** Where the services of one stack find each other. */
export interface ServiceEnvironmentOptions {
  databaseUrl: string;
  /** host:port of the Temporal frontend. */
  temporalAddress: string;
  /** The order task queue (default: the service's own default, `order-fulfilment`). */
  taskQueue?: string;
  /** Base URL of the simulator process; each provider's URL is `<simulatorUrl>/<name>`. */
  simulatorUrl: string;
  /** The bearer token of each provider (what its simulator accepts), by provider name. */
  providerApiKeys?: Readonly<Record<string, string>>;
  /** Base URL of the Temporal Web UI, for the API's links. */
  temporalUiUrl?: string;
}

/**
 * The environment of the API and the worker of one stack (src/config/config.ts reads it): the database, Temporal,
 * the task queue and the providers (every `<NAME>_PROVIDER_URL` derives from `SIMULATOR_URL`).
 */
export function serviceEnvironment(opts: ServiceEnvironmentOptions): Record<string, string> {
  return {
    DATABASE_URL: opts.databaseUrl,
    TEMPORAL_ADDRESS: opts.temporalAddress,
    ...(opts.taskQueue ? { TEMPORAL_TASK_QUEUE: opts.taskQueue } : {}),
    SIMULATOR_URL: opts.simulatorUrl,
    ...apiKeyVariables(opts.providerApiKeys),
    ...(opts.temporalUiUrl ? { TEMPORAL_UI_URL: opts.temporalUiUrl } : {}),
  };
}

/** The environment of the simulator process: its port and each provider's accepted bearer token. */
export function simulatorEnvironment(opts: {
  port: number;
  host?: string;
  providerApiKeys?: Readonly<Record<string, string>>;
}): Record<string, string> {
  return {
    SIMULATOR_PORT: String(opts.port),
    ...(opts.host ? { SIMULATOR_HOST: opts.host } : {}),
    ...apiKeyVariables(opts.providerApiKeys),
  };
}
