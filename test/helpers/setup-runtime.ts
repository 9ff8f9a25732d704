/** Per-test-file setup: keep the Temporal Core SDK and workers quiet: tests provoke activity failures on purpose, and the SDK logs each at WARN. */
import { DefaultLogger, Runtime } from '@temporalio/worker';

try {
  Runtime.install({ logger: new DefaultLogger('ERROR') });
} catch {
  // Already installed in this process.
}
