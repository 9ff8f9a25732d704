/** Per-test-file setup: keep the Temporal Core SDK and workers quiet unless something goes wrong. */
import { DefaultLogger, Runtime } from '@temporalio/worker';

try {
  Runtime.install({ logger: new DefaultLogger('WARN') });
} catch {
  // Already installed in this process.
}
