/**
 * `npm run check:observability -- [--api-url URL] [--worker-url URL]...` (default: the local stack's `/metrics`):
 * scripts/lib/observability-check.ts against a live stack. Exit 1 on any problem.
 */
import { parseArgs } from 'node:util';
import { errorMessage, repoRoot } from './lib/env.js';
import { ensurePromtool, formatReport, runObservabilityCheck } from './lib/observability-check.js';
import { localUrl, stackPorts } from './lib/stack-definition.js';

const options = { 'api-url': { type: 'string' }, 'worker-url': { type: 'string', multiple: true } } as const;
const { values } = parseArgs({ options });
const ports = stackPorts();

async function scrape(url: string): Promise<string> {
  const target = new URL(url);
  if (target.pathname === '/') target.pathname = '/metrics';
  const res = await fetch(target, { signal: AbortSignal.timeout(10_000) }).catch((error: unknown) => {
    throw new Error(`cannot scrape ${target}: ${errorMessage(error)} (is the stack running?)`);
  });
  if (!res.ok) throw new Error(`${target} answered ${res.status}`);
  return res.text();
}

try {
  const promtool = await ensurePromtool((line) => process.stderr.write(`${line}\n`));
  const api = await scrape(values['api-url'] ?? localUrl(ports.api));
  const workers = await Promise.all((values['worker-url'] ?? [localUrl(ports.workerMetrics)]).map(scrape));
  const report = await runObservabilityCheck({ promtool, root: repoRoot(), scrapes: { api, worker: workers } });
  console.log(formatReport(report));
  process.exit(report.problems.length === 0 ? 0 : 1);
} catch (error) {
  console.error(errorMessage(error));
  process.exit(1);
}
