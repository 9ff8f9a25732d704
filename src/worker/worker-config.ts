/**
 * The worker's configuration: the process configuration (src/config/config.ts, role `worker`) and every registered
 * provider's URL, key and settings (providers/index.ts, read by src/config/provider-config.ts). The worker's only:
 * the API calls no provider, so it loads no provider definition (their simulators included) to read its
 * configuration (eslint.config.js).
 *
 * Under `NODE_ENV=production` a worker without a provider's URL, key or required setting stops at start naming it,
 * in the same ConfigError as the other variables ({@link WORKER_PRODUCTION_REQUIRED}).
 */
import { PROVIDER_LIST } from '../../providers/index.js';
import {
  addProblem,
  type AppConfig,
  checkConfig,
  DEFAULT_SIMULATOR_URL,
  PRODUCTION_REQUIRED,
  validConfig,
} from '../config/config.js';
import { providerProductionRequired, type ProvidersConfig, readProvidersConfig } from '../config/provider-config.js';

/** The worker's configuration: {@link AppConfig} and `providers`, every provider's URL, key and settings by name. */
export type WorkerConfig = AppConfig & { providers: ProvidersConfig };

/** Every provider's URL, key and settings marked `requiredInProduction`. */
const PROVIDERS_REQUIRED = providerProductionRequired(PROVIDER_LIST);

/**
 * Variables without a default for a production worker: the configuration's ({@link PRODUCTION_REQUIRED}`.worker`)
 * and every provider's URL, key and settings marked `requiredInProduction`.
 */
export const WORKER_PRODUCTION_REQUIRED: readonly string[] = [...PRODUCTION_REQUIRED.worker, ...PROVIDERS_REQUIRED];

/**
 * Parses the worker's configuration from `env`: what `loadConfig(env, 'worker')` reads, and the providers'.
 * @throws ConfigError listing every missing or invalid variable, the providers' among them, e.g.
 *   `EMAIL_PROVIDER_API_KEY: required when NODE_ENV=production (no development default)`.
 */
export function loadWorkerConfig(env: NodeJS.ProcessEnv = process.env): WorkerConfig {
  const check = checkConfig(env, 'worker', PROVIDERS_REQUIRED);
  const providers = readProvidersConfig(
    PROVIDER_LIST,
    env,
    check.config?.SIMULATOR_URL ?? DEFAULT_SIMULATOR_URL,
    check.production,
  );
  for (const problem of providers.problems) addProblem(check.problems, problem);
  return { ...validConfig(check), providers: providers.config };
}
