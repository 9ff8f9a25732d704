/**
 * CI check: bundles `workflows/` exactly as the Worker does and fails if the bundle pulls in a module
 * the workflow sandbox cannot load (Node built-ins, Nest, Prisma...). The SDK's bundler rejects
 * disallowed modules; we also refuse any `ignoreModules` escape hatch and print the bundle size.
 * See https://docs.temporal.io/develop/typescript/core-application#workflow-bundling
 * Exit code: 0 when the bundle builds, 1 otherwise.
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
