/**
 * Runs the carrier simulator as a process.
 * Environment: `CARRIER_SIMULATOR_PORT` (default 4030), `SIMULATOR_HOST` (default 127.0.0.1),
 * `CARRIER_PROVIDER_API_KEY` (optional: the only bearer token accepted when set).
 */
import { readSimulatorSettings, runSimulatorProcess } from '../shared/run-simulator-process.js';
import { startCarrierSimulator } from './carrier-simulator.js';

await runSimulatorProcess(async () =>
  startCarrierSimulator(
    readSimulatorSettings({ port: 'CARRIER_SIMULATOR_PORT', defaultPort: 4030, apiKey: 'CARRIER_PROVIDER_API_KEY' }),
  ),
);
