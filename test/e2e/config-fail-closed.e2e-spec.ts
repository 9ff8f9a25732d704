/**
 * The production processes refuse to start on a missing variable (issue 7, input 11): the API without
 * DATABASE_URL, the worker without EMAIL_PROVIDER_API_KEY and CARRIER_PROVIDER_URL. Each is the real entry point
 * (`src/main.ts`, `src/worker.ts`) run by Node with tsx; neither gets as far as a connection. The provider variables
 * come from the provider registry, as the configuration derives them.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { PROVIDER_LIST } from '../../providers/index.js';
import { PRODUCTION_REQUIRED } from '../../src/config/config.js';
import { providerVariables } from '../../src/config/provider-config.js';
import { WORKER_PRODUCTION_REQUIRED } from '../../src/worker/worker-config.js';

/** Every provider's variables: its URL, key and settings (e.g. EMAIL_FROM). */
const PROVIDER_VARIABLES = PROVIDER_LIST.map(providerVariables);

/** Every variable the processes read, so the test's own environment cannot fill a gap. */
const ALL_VARIABLES = [
  ...new Set([
    ...PRODUCTION_REQUIRED.api,
    ...WORKER_PRODUCTION_REQUIRED,
    ...PROVIDER_VARIABLES.flatMap((v) => [v.url, v.apiKey, ...Object.values(v.settings)]),
    'SIMULATOR_URL',
  ]),
];

/** Production values of the provider settings that need a specific format (others get their default). */
const SETTING_VALUES: Record<string, string> = { EMAIL_FROM: 'orders@example.org' };

const complete: Record<string, string> = {
  DATABASE_URL: 'postgresql://app@127.0.0.1:1/never',
  TEMPORAL_ADDRESS: '127.0.0.1:1',
  TEMPORAL_UI_URL: 'https://temporal.example',
  CUSTOMER_ID_SECRET: 'a-production-secret-of-32-chars!!',
  ...Object.fromEntries(
    PROVIDER_LIST.flatMap((provider) => {
      const vars = providerVariables(provider);
      return [
        [vars.url, `https://${provider.name}.example`],
        [vars.apiKey, `live-${provider.name}`],
        ...Object.values(provider.settings ?? {}).map((s) => [s.env, SETTING_VALUES[s.env] ?? s.default]),
      ];
    }),
  ),
};

/** Runs `node --import tsx <entry>` with NODE_ENV=production and `env`; resolves with its exit code and stderr. */
function run(entry: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string; ms: number }> {
  const base = { ...process.env };
  for (const name of ALL_VARIABLES) delete base[name];
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', entry], {
      env: { ...base, ...env, NODE_ENV: 'production', LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr, ms: Date.now() - started });
    });
  });
}

describe('NODE_ENV=production fails closed', () => {
  it('the API without DATABASE_URL exits 1 naming DATABASE_URL', async () => {
    const { DATABASE_URL: _omit, ...env } = complete;
    const { code, stderr } = await run('src/main.ts', env);
    expect(code).toBe(1);
    expect(stderr).toContain('Invalid configuration (NODE_ENV=production)');
    expect(stderr).toContain('DATABASE_URL: required when NODE_ENV=production');
    expect(stderr).not.toMatch(/\n\s+at /); // a message, not a stack trace
  });

  it('the worker without EMAIL_PROVIDER_API_KEY (and CARRIER_PROVIDER_URL) exits 1 naming both', async () => {
    expect(complete).toHaveProperty('EMAIL_PROVIDER_API_KEY');
    expect(complete).toHaveProperty('CARRIER_PROVIDER_URL');
    const { EMAIL_PROVIDER_API_KEY: _a, CARRIER_PROVIDER_URL: _b, ...env } = complete;
    const { code, stderr } = await run('src/worker.ts', env);
    expect(code).toBe(1);
    expect(stderr).toContain('EMAIL_PROVIDER_API_KEY: required when NODE_ENV=production');
    expect(stderr).toContain('CARRIER_PROVIDER_URL: required when NODE_ENV=production');
    expect(stderr).not.toContain('DATABASE_URL');
  });
});
