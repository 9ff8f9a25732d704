/**
 * Runs the accounting system simulator as a process.
 * Environment: `ACCOUNTING_SIMULATOR_PORT` (default 4020), `SIMULATOR_HOST` (default 127.0.0.1),
 * `ACCOUNTING_PROVIDER_API_KEY` (optional: the only bearer token accepted when set).
 */
import { readSimulatorSettings, runSimulatorProcess } from '../shared/run-simulator-process.js';
import { startAccountingSimulator } from './accounting-simulator.js';

await runSimulatorProcess(async () =>
  startAccountingSimulator(
    readSimulatorSettings({
      port: 'ACCOUNTING_SIMULATOR_PORT',
      defaultPort: 4020,
      apiKey: 'ACCOUNTING_PROVIDER_API_KEY',
    }),
  ),
);
