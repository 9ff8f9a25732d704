/**
 * The HTTP client of every registered provider (providers/index.ts), configured from its variables
 * (src/worker/worker-config.ts) and `PROVIDER_TIMEOUT_MS`: the worker's only (the API calls no provider).
 */
import { PROVIDER_LIST } from '../../providers/index.js';
import { createProviderClient } from '../../providers/kit/client.js';
import type { ProviderClients } from '../../providers/kit/define.js';
import type { WorkerConfig } from './worker-config.js';

/**
 * One client per provider, by name.
 * @throws Error when the configuration lacks a provider (it was loaded before the provider was registered).
 */
export function createProviderClients(
  config: Pick<WorkerConfig, 'providers' | 'PROVIDER_TIMEOUT_MS'>,
): ProviderClients {
  return Object.fromEntries(
    PROVIDER_LIST.map((provider) => {
      const settings = config.providers[provider.name];
      if (!settings) throw new Error(`no configuration for provider ${provider.name}`);
      return [
        provider.name,
        createProviderClient(provider, {
          baseUrl: settings.url,
          apiKey: settings.apiKey,
          timeoutMs: config.PROVIDER_TIMEOUT_MS,
          settings: settings.settings,
        }),
      ];
    }),
  );
}
