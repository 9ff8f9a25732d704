/**
 * Shared `main.ts` plumbing of the simulator processes: read host/port/api key from the environment,
 * start, log one line with the URL, and close cleanly on SIGTERM/SIGINT.
 */
import { z } from 'zod';
import type { RunningSimulator } from './idempotent-simulator.js';

/** Where and how a simulator process listens. */
export interface SimulatorProcessSettings {
  host: string;
  port: number;
  /** Bearer token to enforce; undefined accepts any bearer token. */
  apiKey?: string;
}

/** Names of the environment variables of one simulator. */
export interface SimulatorEnvNames {
  /** Variable holding the port, e.g. `EMAIL_SIMULATOR_PORT`. */
  port: string;
  /** Default port when the variable is unset. */
  defaultPort: number;
  /** Variable holding the API key to enforce, e.g. `EMAIL_PROVIDER_API_KEY`. */
  apiKey: string;
}

/**
 * Reads `SIMULATOR_HOST` (default `127.0.0.1`), the port variable and the optional API key variable.
 * @throws Error naming each invalid variable.
 */
export function readSimulatorSettings(
  names: SimulatorEnvNames,
  env: NodeJS.ProcessEnv = process.env,
): SimulatorProcessSettings {
  const schema = z.object({
    SIMULATOR_HOST: z.string().min(1).default('127.0.0.1'),
    [names.port]: z.coerce.number().int().min(0).max(65535).default(names.defaultPort),
    [names.apiKey]: z.string().min(1).optional(),
  });
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const data = parsed.data as Record<string, unknown>;
  const apiKey = data[names.apiKey] as string | undefined;
  return {
    host: data.SIMULATOR_HOST as string,
    port: data[names.port] as number,
    ...(apiKey === undefined ? {} : { apiKey }),
  };
}

/**
 * Starts a simulator as the process's main job: logs `<name> simulator listening on <url>` once, and on the
 * first SIGTERM or SIGINT closes the server and exits 0 (exit 1 if closing fails). Start-up errors are
 * printed and exit 1.
 */
export async function runSimulatorProcess(start: () => Promise<RunningSimulator>): Promise<void> {
  let sim: RunningSimulator;
  try {
    sim = await start();
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  }
  console.log(`${sim.name} simulator listening on ${sim.url}`);
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    sim.close().then(
      () => process.exit(0),
      (error: unknown) => {
        console.error(`${sim.name} simulator: error while closing on ${signal}:`, error);
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
}
