/**
 * The simulator process: every provider of providers/index.ts, each under `/<name>` on one port, with its ledger,
 * faults and reset API at `/<name>/_sim` (simulators/shared/idempotent-simulator.ts, served by
 * simulators/shared/simulator-server.ts). A new provider needs no edit here, in a launcher, in docker-compose.yml or
 * in the Dockerfile.
 *
 * Environment: `SIMULATOR_PORT` (default 4010), `SIMULATOR_HOST` (default 127.0.0.1), and per provider
 * `<NAME>_PROVIDER_API_KEY` (optional: the only bearer token that provider accepts when set); a provider's simulation
 * reads its own settings from the environment too (e.g. the warehouse's `WAREHOUSE_PACK_DELAY_MS`).
 * Logs one line `simulators listening on <url> (<names>)`; SIGTERM or SIGINT closes the server and exits 0.
 */
import { z } from 'zod';
import { PROVIDER_LIST } from '../providers/index.js';
import { envPrefix } from '../providers/kit/define.js';
import { startSimulators } from './shared/simulator-server.js';

const settings = z
  .object({
    SIMULATOR_HOST: z.string().min(1).default('127.0.0.1'),
    SIMULATOR_PORT: z.coerce.number().int().min(0).max(65535).default(4010),
  })
  .safeParse(process.env);
if (!settings.success) {
  console.error(
    `Invalid configuration:\n${settings.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`).join('\n')}`,
  );
  process.exit(1);
}

const apiKeys = Object.fromEntries(
  PROVIDER_LIST.map((p) => [p.name, process.env[`${envPrefix(p)}_PROVIDER_API_KEY`]?.trim() || undefined]),
);
let sims;
try {
  sims = await startSimulators(PROVIDER_LIST, {
    host: settings.data.SIMULATOR_HOST,
    port: settings.data.SIMULATOR_PORT,
    apiKeys,
    settings: process.env,
  });
} catch (error) {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
}
console.log(`simulators listening on ${sims.url} (${PROVIDER_LIST.map((p) => `/${p.name}`).join(', ')})`);
let stopping = false;
const stop = (signal: NodeJS.Signals): void => {
  if (stopping) return;
  stopping = true;
  sims.close().then(
    () => process.exit(0),
    (error: unknown) => {
      console.error(`simulators: error while closing on ${signal}:`, error);
      process.exit(1);
    },
  );
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
