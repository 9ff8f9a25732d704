/**
 * Each provider's configuration variables, derived from its definition (providers/<name>.provider.ts), so a new
 * provider needs no edit here:
 * - `<NAME>_PROVIDER_URL`: its base URL. Development default: `<SIMULATOR_URL>/<name>` (the one simulator process
 *   serves every provider under its name; `SIMULATOR_URL` defaults to http://127.0.0.1:4010).
 * - `<NAME>_PROVIDER_API_KEY`: its bearer token. Development default: `dev-<name>-key` (what the simulator accepts).
 * - each of its settings (e.g. `EMAIL_FROM`), with its own default and schema.
 * Under `NODE_ENV=production` the URL, the key and the settings marked `requiredInProduction` have no default: a
 * worker that lacks one stops at start naming it (fail closed).
 *
 * Functions of the definitions they are given: the worker reads its providers' configuration with them
 * (src/worker/worker-config.ts, over the registry providers/index.ts), the docs tables list the variables. The API
 * loads neither this file nor any provider definition (eslint.config.js).
 */
import { z } from 'zod';
import { envPrefix, type ProviderDefinition } from '../../providers/kit/define.js';
import type { VariableProblem } from './config.js';

/** One provider's resolved configuration. */
export interface ProviderConfig {
  /** Base URL (no trailing slash needed). */
  url: string;
  /** Sent as `Authorization: Bearer <apiKey>`. */
  apiKey: string;
  /** The provider's settings by their names in its definition (e.g. `{ from: 'orders@shop.example' }`). */
  settings: Record<string, string>;
}

/** Every provider's configuration, by provider name. */
export type ProvidersConfig = Record<string, ProviderConfig>;

/** The variable names of one provider. */
export interface ProviderVariables {
  url: string;
  apiKey: string;
  /** Setting name → variable, e.g. `{ from: 'EMAIL_FROM' }`. */
  settings: Record<string, string>;
}

/** `{ url: 'EMAIL_PROVIDER_URL', apiKey: 'EMAIL_PROVIDER_API_KEY', settings: { from: 'EMAIL_FROM' } }`. */
export function providerVariables(provider: ProviderDefinition): ProviderVariables {
  const prefix = envPrefix(provider);
  return {
    url: `${prefix}_PROVIDER_URL`,
    apiKey: `${prefix}_PROVIDER_API_KEY`,
    settings: Object.fromEntries(Object.entries(provider.settings ?? {}).map(([name, s]) => [name, s.env])),
  };
}

/** The variables a production worker must set for `providers`: each URL and key, and the required settings. */
export function providerProductionRequired(providers: readonly ProviderDefinition[]): string[] {
  return providers.flatMap((provider) => {
    const vars = providerVariables(provider);
    const settings = Object.entries(provider.settings ?? {})
      .filter(([, s]) => s.requiredInProduction)
      .map(([, s]) => s.env);
    return [vars.url, vars.apiKey, ...settings];
  });
}

/** One documented variable of a provider (for the configuration table in docs/configuration.md). */
export interface ProviderVariableDoc {
  variable: string;
  provider: string;
  description: string;
  /** The development default, as text. */
  default: string;
  requiredInProduction: boolean;
}

/** Every provider variable with its description and default, in registry order. */
export function providerVariableDocs(providers: readonly ProviderDefinition[]): ProviderVariableDoc[] {
  return providers.flatMap((provider) => {
    const vars = providerVariables(provider);
    return [
      {
        variable: vars.url,
        provider: provider.name,
        description: `Base URL of the ${provider.title.toLowerCase()}.`,
        default: `\`$SIMULATOR_URL/${provider.name}\``,
        requiredInProduction: true,
      },
      {
        variable: vars.apiKey,
        provider: provider.name,
        description: `Bearer token for the ${provider.title.toLowerCase()}.`,
        default: `\`dev-${provider.name}-key\``,
        requiredInProduction: true,
      },
      ...Object.values(provider.settings ?? {}).map((s) => ({
        variable: s.env,
        provider: provider.name,
        description: s.description,
        default: `\`${s.default}\``,
        requiredInProduction: s.requiredInProduction,
      })),
    ];
  });
}

/**
 * Reads every provider's variables from `env`.
 * @param simulatorUrl the base of the development URLs (`SIMULATOR_URL`).
 * @param production under `NODE_ENV=production` nothing falls back to a development default (the caller reports
 *   the missing ones; here they come back empty).
 * @returns the configuration and the problems (invalid values), one per variable.
 */
export function readProvidersConfig(
  providers: readonly ProviderDefinition[],
  env: NodeJS.ProcessEnv,
  simulatorUrl: string,
  production: boolean,
): { config: ProvidersConfig; problems: VariableProblem[] } {
  const problems: VariableProblem[] = [];
  const config: ProvidersConfig = {};
  const read = (variable: string, fallback: string, schema: z.ZodType<string>): string => {
    const raw = env[variable]?.trim() ? env[variable]!.trim() : production ? '' : fallback;
    if (raw === '') return raw;
    const parsed = schema.safeParse(raw);
    if (!parsed.success) {
      problems.push({ variable, message: parsed.error.issues.map((i) => i.message).join('; ') });
      return raw;
    }
    return parsed.data;
  };
  for (const provider of providers) {
    const vars = providerVariables(provider);
    config[provider.name] = {
      url: read(vars.url, `${simulatorUrl.replace(/\/+$/, '')}/${provider.name}`, z.url()),
      apiKey: read(vars.apiKey, `dev-${provider.name}-key`, z.string().min(1)),
      settings: Object.fromEntries(
        Object.entries(provider.settings ?? {}).map(([name, s]) => [
          name,
          read(s.env, s.default, s.schema ?? z.string().min(1)),
        ]),
      ),
    };
  }
  return { config, problems };
}
