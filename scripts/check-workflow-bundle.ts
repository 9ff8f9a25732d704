/**
 * CI check: bundles `workflows/` as the Worker does (no `ignoreModules`) and fails when it pulls in a module the
 * sandbox cannot load. Exit 0 when it builds.
 */
import { bundleWorkflowCode } from '@temporalio/worker';
import { workflowsPath } from '../src/worker/order-worker.js';

const started = Date.now();
try {
  const { code } = await bundleWorkflowCode({ workflowsPath: workflowsPath(), ignoreModules: [] });
  const forbidden = ['@nestjs/', '@prisma/', 'prisma/generated', 'node:fs', 'node:net', 'node:child_process'];
  const leaked = forbidden.filter((m) => code.includes(`"${m}`) || code.includes(`'${m}`));
  if (leaked.length) throw new Error(`workflow bundle references forbidden modules: ${leaked.join(', ')}`);
  console.log(`workflow bundle OK: ${(code.length / 1024).toFixed(0)} KiB in ${Date.now() - started} ms`);
} catch (err) {
  console.error('workflow bundle FAILED:', err instanceof Error ? err.message : err);
  process.exit(1);
}
