/**
 * `npm run promtool`: Prometheus' promtool, found or built from the Go module proxy (scripts/lib/promtool.ts).
 *
 *   npm run promtool -- --ensure                                  # find or build it; print its path (CI)
 *   npm run promtool -- test rules observability/prometheus/alerts.test.yml
 *   npm run promtool -- check rules observability/prometheus/alerts.yml
 *
 * Any other arguments are passed to promtool as they are. Environment: PROMTOOL_PATH (an existing binary; no
 * build). Exit codes: promtool's own, 0 after a successful --ensure, 1 when there is no promtool and no Go
 * toolchain to build one.
 */
import { ensurePromtool, runPromtool } from './lib/promtool.js';

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  const log = (line: string): void => {
    process.stderr.write(`${line}\n`);
  };
  const promtool = await ensurePromtool(log);
  if (args.length === 1 && args[0] === '--ensure') {
    process.stdout.write(`${promtool}\n`);
    return 0;
  }
  const { exitCode, output } = await runPromtool(promtool, args);
  if (output) process.stdout.write(output.endsWith('\n') ? output : `${output}\n`);
  return exitCode;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  },
);
