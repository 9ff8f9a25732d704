/**
 * `npm run tools -- ensure <temporal|cluster|promtool>`: finds, downloads or builds the tool, progress on stderr, its
 * paths on stdout (CI exports them).
 */
import { runMain } from './lib/env.js';
import { ensurePromtool } from './lib/observability-check.js';
import { ensureTemporalCli } from './lib/temporal-cli.js';
import { ensureClusterBinaries } from './lib/temporal-cluster.js';

const log = (line: string): void => void process.stderr.write(`${line}\n`);
const [command, ...rest] = process.argv.slice(2).filter((a) => a !== '--');

async function main(): Promise<number> {
  const ensure: Record<string, () => Promise<string[]>> = {
    temporal: async () => [await ensureTemporalCli({ log })],
    promtool: async () => [await ensurePromtool(log)],
    cluster: async () => Object.values(await ensureClusterBinaries(log)),
  };
  if (command !== 'ensure' || !rest[0] || !ensure[rest[0]]) {
    log('usage: tsx scripts/tools.ts ensure <temporal|cluster|promtool>');
    return 1;
  }
  process.stdout.write(`${(await ensure[rest[0]]()).join('\n')}\n`);
  return 0;
}

runMain(main, '');
