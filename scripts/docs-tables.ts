/**
 * `npm run docs:tables`: regenerates the README's tables that restate code (retry profiles, limits, metrics; see
 * scripts/lib/docs-tables.ts). `--check` changes nothing and exits 1 when the README is out of date.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { README_PATH, renderReadme } from './lib/docs-tables.js';

const check = process.argv.includes('--check');
const current = await readFile(README_PATH, 'utf8');
const next = await renderReadme(current);
if (next === current) {
  console.log('README.md tables are up to date');
} else if (check) {
  console.error('README.md tables are out of date: run `npm run docs:tables`');
  process.exit(1);
} else {
  await writeFile(README_PATH, next);
  console.log('README.md tables regenerated');
}
