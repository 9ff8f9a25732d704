/**
 * Configuration fails closed in production (issue 7, input 11): with NODE_ENV=production the variables that name a
 * host or hold a credential have no default, and each missing one is named. Development keeps every default. The
 * provider variables are derived from the provider registry (`<NAME>_PROVIDER_URL`, `<NAME>_PROVIDER_API_KEY`, the
 * settings such as `EMAIL_FROM`), so this spec builds its environments from PROVIDER_LIST too. The worker reads them
 * (loadWorkerConfig, src/worker/worker-config.ts) on top of loadConfig; the API's loadConfig reads none.
 */
import { describe, expect, it } from 'vitest';
import { PROVIDER_LIST } from '../../providers/index.js';
import { ConfigError, loadConfig, PRODUCTION_REQUIRED } from '../../src/config/config.js';
import { providerVariables } from '../../src/config/provider-config.js';
import { loadWorkerConfig, WORKER_PRODUCTION_REQUIRED } from '../../src/worker/worker-config.js';

/** Production values of the provider settings that need a specific format (others get their default). */
const SETTING_VALUES: Record<string, string> = { EMAIL_FROM: 'orders@shop.example.org' };

/** Every provider's production variables: its URL, key and settings. */
function providerEnvironment(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    PROVIDER_LIST.flatMap((provider) => {
      const vars = providerVariables(provider);
      return [
        [vars.url, `https://${provider.name}.provider.example/api`],
        [vars.apiKey, `live-${provider.name}`],
        ...Object.entries(provider.settings ?? {}).map(([, s]) => [s.env, SETTING_VALUES[s.env] ?? s.default]),
      ];
    }),
  );
}

/** A complete production environment for both roles. */
const production = (): NodeJS.ProcessEnv => ({
  NODE_ENV: 'production',
  DATABASE_URL: 'postgresql://app@db.internal:5432/orders',
  TEMPORAL_ADDRESS: 'orders.a1b2c.tmprl.cloud:7233',
  TEMPORAL_UI_URL: 'https://cloud.temporal.io',
  CUSTOMER_ID_SECRET: 'a-production-secret-of-32-chars!!',
  ...providerEnvironment(),
});

/** The error of the API's loadConfig (`api`, or unset: `all`), or of the worker's loadWorkerConfig (`worker`). */
function configError(env: NodeJS.ProcessEnv, role?: 'api' | 'worker'): ConfigError {
  try {
    if (role === 'worker') loadWorkerConfig(env);
    else loadConfig(env, role);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('loadConfig did not throw');
}

describe('loadConfig and loadWorkerConfig', () => {
  it('development: every variable has a default (the local stack)', () => {
    const config = loadWorkerConfig({});
    expect(config).toMatchObject({
      DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/order_fulfilment',
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      SIMULATOR_URL: 'http://127.0.0.1:4010',
      API_DOCS: true,
      IDEMPOTENCY_PURGE_INTERVAL_MS: 600_000,
    });
    expect(config.providers.email!.url).toBe('http://127.0.0.1:4010/email');
    expect(config.providers.email!.apiKey).toBe('dev-email-key');
    expect(config.providers.email!.settings).toEqual({ from: 'orders@shop.example' });
  });

  it('development: every registered provider is served by the one simulator under its name, with its dev key', () => {
    const config = loadWorkerConfig({});
    expect(Object.keys(config.providers)).toEqual(PROVIDER_LIST.map((p) => p.name));
    for (const provider of PROVIDER_LIST) {
      expect(config.providers[provider.name]).toEqual({
        url: `http://127.0.0.1:4010/${provider.name}`,
        apiKey: `dev-${provider.name}-key`,
        settings: Object.fromEntries(Object.entries(provider.settings ?? {}).map(([name, s]) => [name, s.default])),
      });
    }
  });

  it("SIMULATOR_URL moves every provider's URL; a provider's own URL still wins", () => {
    const moved = loadWorkerConfig({ SIMULATOR_URL: 'http://sims.internal:9000/' });
    for (const provider of PROVIDER_LIST) {
      expect(moved.providers[provider.name]!.url).toBe(`http://sims.internal:9000/${provider.name}`);
    }
    const [first, ...rest] = PROVIDER_LIST;
    const own = loadWorkerConfig({
      SIMULATOR_URL: 'http://sims.internal:9000',
      [providerVariables(first!).url]: 'https://real.example/v2',
    });
    expect(own.providers[first!.name]!.url).toBe('https://real.example/v2');
    for (const provider of rest) {
      expect(own.providers[provider.name]!.url).toBe(`http://sims.internal:9000/${provider.name}`);
    }
  });

  it('production with everything set: the providers as configured, docs off by default', () => {
    const env = production();
    const config = loadWorkerConfig(env);
    for (const provider of PROVIDER_LIST) {
      const vars = providerVariables(provider);
      expect(config.providers[provider.name]).toEqual({
        url: env[vars.url],
        apiKey: env[vars.apiKey],
        settings: Object.fromEntries(Object.entries(vars.settings).map(([name, variable]) => [name, env[variable]])),
      });
    }
    expect(config.providers.email!.settings.from).toBe('orders@shop.example.org');
    expect(config.API_DOCS).toBe(false);
    expect(loadConfig({ ...production(), API_DOCS: 'true' }).API_DOCS).toBe(true);
  });

  it("a production worker needs every provider's URL and key and the sender address; the API needs none", () => {
    for (const provider of PROVIDER_LIST) {
      const vars = providerVariables(provider);
      expect(WORKER_PRODUCTION_REQUIRED).toEqual(expect.arrayContaining([vars.url, vars.apiKey]));
      expect(PRODUCTION_REQUIRED.api).not.toContain(vars.url);
      expect(PRODUCTION_REQUIRED.api).not.toContain(vars.apiKey);
    }
    expect(WORKER_PRODUCTION_REQUIRED).toContain('EMAIL_FROM');
    expect(WORKER_PRODUCTION_REQUIRED).toEqual(expect.arrayContaining([...PRODUCTION_REQUIRED.worker]));
    expect(PRODUCTION_REQUIRED.worker).toEqual(['DATABASE_URL', 'TEMPORAL_ADDRESS']);
    expect(new Set(WORKER_PRODUCTION_REQUIRED).size).toBe(WORKER_PRODUCTION_REQUIRED.length);
  });

  it('loadConfig reads no provider variable: the API neither needs nor checks them', () => {
    expect(loadConfig({})).not.toHaveProperty('providers');
    expect(() => loadConfig({ EMAIL_FROM: 'orders at shop', EMAIL_PROVIDER_URL: 'not a url' })).not.toThrow();
    const env = production();
    for (const name of WORKER_PRODUCTION_REQUIRED) if (!PRODUCTION_REQUIRED.worker.includes(name)) delete env[name];
    expect(() => loadConfig(env, 'worker')).not.toThrow();
    expect(() => loadConfig(env)).not.toThrow();
  });

  it.each(WORKER_PRODUCTION_REQUIRED)('production worker without %s refuses, naming it', (name) => {
    const env = production();
    delete env[name];
    const err = configError(env, 'worker');
    expect(err.variables).toEqual([name]);
    expect(err.message).toContain(`${name}: required when NODE_ENV=production`);
  });

  it.each(PRODUCTION_REQUIRED.api)('production API without %s refuses, naming it', (name) => {
    const env = production();
    env[name] = ' ';
    expect(configError(env, 'api').variables).toEqual([name]);
  });

  it('names every missing variable at once', () => {
    const err = configError({ NODE_ENV: 'production' }, 'worker');
    expect([...err.variables].sort()).toEqual([...WORKER_PRODUCTION_REQUIRED].sort());
    expect(err.message.split('\n')).toHaveLength(WORKER_PRODUCTION_REQUIRED.length + 1);
  });

  it('production never falls back to the simulator for a provider', () => {
    const env = production();
    const vars = providerVariables(PROVIDER_LIST[0]!);
    delete env[vars.url];
    env.SIMULATOR_URL = 'http://127.0.0.1:4010';
    expect(configError(env, 'worker').variables).toEqual([vars.url]);
  });

  it('the API does not need provider keys, the worker does not need the UI URL', () => {
    const env = production();
    for (const provider of PROVIDER_LIST) delete env[providerVariables(provider).apiKey];
    expect(() => loadConfig(env, 'api')).not.toThrow();
    const worker = production();
    delete worker.TEMPORAL_UI_URL;
    expect(() => loadWorkerConfig(worker)).not.toThrow();
  });

  it('an invalid TEMPORAL_TLS is named', () => {
    expect(configError({ TEMPORAL_TLS: 'maybe' }).variables).toEqual(['TEMPORAL_TLS']);
  });

  it.each(PROVIDER_LIST.map((p) => [providerVariables(p).url]))('an invalid %s is named', (variable) => {
    const err = configError({ [variable]: 'not a url' }, 'worker');
    expect(err.variables).toEqual([variable]);
    expect(err.message).toContain(`${variable}: `);
    expect(configError({ ...production(), [variable]: 'not a url' }, 'worker').variables).toEqual([variable]);
  });

  it('an invalid setting is named (EMAIL_FROM must be an address)', () => {
    expect(configError({ EMAIL_FROM: 'orders at shop' }, 'worker').variables).toEqual(['EMAIL_FROM']);
  });

  it('development: a blank provider variable falls back to its default', () => {
    const config = loadWorkerConfig({ EMAIL_PROVIDER_API_KEY: '  ', EMAIL_PROVIDER_URL: '' });
    expect([config.providers.email!.apiKey, config.providers.email!.url]).toEqual([
      'dev-email-key',
      'http://127.0.0.1:4010/email',
    ]);
  });
});
