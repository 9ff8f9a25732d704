/**
 * Runs the email provider simulator as a process.
 * Environment: `EMAIL_SIMULATOR_PORT` (default 4010), `SIMULATOR_HOST` (default 127.0.0.1),
 * `EMAIL_PROVIDER_API_KEY` (optional: the only bearer token accepted when set).
 */
import { readSimulatorSettings, runSimulatorProcess } from '../shared/run-simulator-process.js';
import { startEmailSimulator } from './email-simulator.js';

await runSimulatorProcess(async () =>
  startEmailSimulator(
    readSimulatorSettings({ port: 'EMAIL_SIMULATOR_PORT', defaultPort: 4010, apiKey: 'EMAIL_PROVIDER_API_KEY' }),
  ),
);
