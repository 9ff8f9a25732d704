/**
 * Worker processes joining a test stack (test/faults/fixtures/worker-process.ts under tsx): the real activities and
 * workflow bundle on the stack's task queue and every provider's queue, in a child process a fault test can SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { PROVIDER_LIST } from '../../providers/index.js';
import { envPrefix } from '../../providers/kit/define.js';
import { serviceEnvironment } from '../../scripts/lib/stack-definition.js';
import type { TestStack } from './test-stack.js';

/**
 * The environment of a worker joining `stack`: its database, Temporal, task queue, simulator and provider keys
 * (every provider's URL derives from SIMULATOR_URL), without any provider variable of the test's own environment;
 * `extra` on top (default: PROVIDER_TIMEOUT_MS 20 s).
 */
export function workerEnvironment(stack: TestStack, extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !PROVIDER_LIST.some((p) => name.startsWith(`${envPrefix(p)}_`))),
  );
  return {
    ...inherited,
    ...serviceEnvironment({
      databaseUrl: stack.config.DATABASE_URL,
      temporalAddress: stack.config.TEMPORAL_ADDRESS,
      taskQueue: stack.config.TEMPORAL_TASK_QUEUE,
      simulatorUrl: stack.config.SIMULATOR_URL,
      providerApiKeys: Object.fromEntries(PROVIDER_LIST.map((p) => [p.name, stack.config.providers[p.name]!.apiKey])),
    }),
    PROVIDER_TIMEOUT_MS: '20000',
    ...extra,
  };
}

/**
 * Starts a worker process for `stack` and resolves once it printed `worker-ready` with the names of the providers
 * whose queues it serves (returned as `providers`, sorted and comma-separated).
 * @throws Error when the process exits before it is ready.
 */
export async function startWorkerProcess(
  stack: TestStack,
  extra?: NodeJS.ProcessEnv,
): Promise<{ child: ChildProcess; providers: string }> {
  const entry = fileURLToPath(new URL('../faults/fixtures/worker-process.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: workerEnvironment(stack, extra),
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  for await (const chunk of child.stdout!) {
    out += String(chunk);
    const ready = /worker-ready (\S*)/.exec(out);
    if (ready) return { child, providers: ready[1]! };
  }
  throw new Error(`the worker process exited before it was ready: ${out}`);
}
