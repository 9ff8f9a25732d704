/**
 * `npm run docs:tables`: regenerates the documentation tables that restate code (retry profiles in
 * docs/guarantees.md, limits in docs/api.md, metrics in docs/operations.md; see scripts/lib/docs-tables.ts), in
 * every document that holds one. `--check` changes nothing and exits 1 when a document is out of date.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { docPath, GENERATED_FILES, renderDocument, renderSections } from './lib/docs-tables.js';

const check = process.argv.includes('--check');
const sections = await renderSections();
let stale = 0;
for (const file of GENERATED_FILES) {
  const current = await readFile(docPath(file), 'utf8');
  const next = await renderDocument(file, current, sections);
  if (next === current) {
    console.log(`${file}: tables are up to date`);
  } else if (check) {
    console.error(`${file}: tables are out of date: run \`npm run docs:tables\``);
    stale++;
  } else {
    await writeFile(docPath(file), next);
    console.log(`${file}: tables regenerated`);
  }
}
if (stale > 0) process.exit(1);
