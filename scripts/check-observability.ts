/**
 * `npm run check:observability`: checks observability/ (the Prometheus rules and their unit tests, the scrape
 * config, the Grafana dashboards and their datasource) with promtool and against a running stack's metrics; see
 * scripts/lib/observability-check.ts for what each check does.
 *
 *   npm run check:observability                                   # the local stack's default ports
 *   npm run check:observability -- --api-url http://127.0.0.1:3000 --worker-url http://127.0.0.1:9464
 *   npm run check:observability -- --worker-url http://127.0.0.1:9464 --worker-url http://127.0.0.1:9465
 *
 * A URL without a path means its `/metrics`. Several `--worker-url`s are read together (a metric served by any
 * worker counts). Place an order first on a fresh stack: histograms have no series before their first
 * observation. promtool is found or built (scripts/lib/promtool.ts; PROMTOOL_PATH). Prints the promtool steps, a
 * table of every metric name the rules and dashboards read and where it was found, and every problem. Exit codes:
 * 0 when everything passed, 1 on any problem (or when a scrape cannot be read).
 */
import { parseArgs } from 'node:util';
import { errorMessage, repoRoot } from './lib/env.js';
import { formatReport, runObservabilityCheck } from './lib/observability-check.js';
import { ensurePromtool } from './lib/promtool.js';
import { localUrl, stackPorts } from './lib/stack-definition.js';

const USAGE = `Usage: tsx scripts/check-observability.ts [--api-url URL] [--worker-url URL]...

Checks observability/ with promtool and against the live metrics of a running stack.
  --api-url URL      the API (default http://127.0.0.1:$PORT, 3000); /metrics is added to a URL without a path
  --worker-url URL   a worker's metrics endpoint (default http://127.0.0.1:$WORKER_METRICS_PORT, 9464); repeatable
  -h, --help         this text`;

/** `url`'s `/metrics` when it has no path. */
function metricsUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.pathname === '/' || parsed.pathname === '') parsed.pathname = '/metrics';
  return parsed.toString();
}

/**
 * The Prometheus text exposition at `url` (10 s at most).
 * @throws Error naming the URL when it cannot be read or does not answer 200.
 */
async function scrape(url: string): Promise<string> {
  let res: Response;
  try {
    res = await fetch(url, { signal: AbortSignal.timeout(10_000), headers: { accept: 'text/plain' } });
  } catch (error) {
    throw new Error(`cannot scrape ${url}: ${errorMessage(error)} (is the stack running?)`);
  }
  if (!res.ok) throw new Error(`${url} answered ${res.status}`);
  return res.text();
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      'api-url': { type: 'string' },
      'worker-url': { type: 'string', multiple: true },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
    allowPositionals: false,
  });
  if (values.help) {
    console.log(USAGE);
    return 0;
  }
  const started = Date.now();
  const ports = stackPorts();
  const apiUrl = metricsUrl(values['api-url'] ?? localUrl(ports.api));
  const workerUrls = (values['worker-url'] ?? [localUrl(ports.workerMetrics)]).map(metricsUrl);
  const promtool = await ensurePromtool((line) => process.stderr.write(`${line}\n`));
  const [api, ...workers] = await Promise.all([scrape(apiUrl), ...workerUrls.map(scrape)]);
  console.log(`scraped ${apiUrl} and ${workerUrls.join(', ')}; promtool ${promtool}`);
  const report = await runObservabilityCheck({
    promtool,
    root: repoRoot(),
    scrapes: { api: api!, worker: workers.join('\n') },
  });
  console.log(formatReport(report));
  console.log(`(${((Date.now() - started) / 1000).toFixed(1)} s)`);
  return report.problems.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
