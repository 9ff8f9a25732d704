/**
 * Configuration fails closed in production (issue 7, input 11): with NODE_ENV=production the variables that name a
 * host or hold a credential have no default, and each missing one is named. Development keeps every default.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, PRODUCTION_REQUIRED } from '../../src/config/config.js';

/** A complete production environment for both roles. */
const production = (): NodeJS.ProcessEnv => ({
  NODE_ENV: 'production',
  DATABASE_URL: 'postgresql://app@db.internal:5432/orders',
  TEMPORAL_ADDRESS: 'orders.a1b2c.tmprl.cloud:7233',
  TEMPORAL_UI_URL: 'https://cloud.temporal.io',
  EMAIL_PROVIDER_URL: 'https://api.mail.example',
  EMAIL_PROVIDER_API_KEY: 'live-email',
  EMAIL_FROM: 'orders@shop.example.org',
  ACCOUNTING_PROVIDER_URL: 'https://api.books.example',
  ACCOUNTING_PROVIDER_API_KEY: 'live-books',
  CARRIER_PROVIDER_URL: 'https://api.carrier.example',
  CARRIER_PROVIDER_API_KEY: 'live-carrier',
  CUSTOMER_ID_SECRET: 'a-production-secret-of-32-chars!!',
});

function configError(env: NodeJS.ProcessEnv, role?: 'api' | 'worker'): ConfigError {
  try {
    loadConfig(env, role);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return err as ConfigError;
  }
  throw new Error('loadConfig did not throw');
}

describe('loadConfig', () => {
  it('development: every variable has a default (the local stack)', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      DATABASE_URL: 'postgresql://postgres@127.0.0.1:5432/order_fulfilment',
      TEMPORAL_ADDRESS: '127.0.0.1:7233',
      EMAIL_PROVIDER_API_KEY: 'dev-email-key',
      API_DOCS: true,
      IDEMPOTENCY_PURGE_INTERVAL_MS: 600_000,
    });
  });

  it('production with everything set: no defaults needed, docs off by default', () => {
    const config = loadConfig(production());
    expect(config.EMAIL_PROVIDER_API_KEY).toBe('live-email');
    expect(config.API_DOCS).toBe(false);
    expect(loadConfig({ ...production(), API_DOCS: 'true' }).API_DOCS).toBe(true);
  });

  it.each(PRODUCTION_REQUIRED.worker)('production worker without %s refuses, naming it', (name) => {
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
    expect([...err.variables].sort()).toEqual([...PRODUCTION_REQUIRED.worker].sort());
    expect(err.message.split('\n')).toHaveLength(PRODUCTION_REQUIRED.worker.length + 1);
  });

  it('the API does not need provider keys, the worker does not need the UI URL', () => {
    const env = production();
    delete env.EMAIL_PROVIDER_API_KEY;
    expect(() => loadConfig(env, 'api')).not.toThrow();
    const worker = production();
    delete worker.TEMPORAL_UI_URL;
    expect(() => loadConfig(worker, 'worker')).not.toThrow();
  });

  it('an invalid TEMPORAL_TLS is named', () => {
    expect(configError({ TEMPORAL_TLS: 'maybe' }).variables).toEqual(['TEMPORAL_TLS']);
  });
});
