/**
 * `npm run docs:tables [-- --check]`: regenerates the generated tables (scripts/lib/docs-tables.ts) and embedme's files
 * shown by reference; `--check` writes nothing and exits 1 when a document is stale.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { execa } from 'execa';
import { docPath, EMBED_FILES, GENERATED_FILES, renderDocument, renderSections } from './lib/docs-tables.js';
import { repoRoot } from './lib/env.js';

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
const embedArgs = ['--source-root', '.', '--silent', ...(check ? ['--verify'] : []), ...EMBED_FILES];
const embed = await execa('embedme', embedArgs, { cwd: repoRoot(), preferLocal: true, reject: false, all: true });
if (embed.exitCode !== 0) {
  console.error(`${EMBED_FILES.join(', ')}: the files shown by reference are out of date: run \`npm run docs:tables\``);
  console.error(embed.all);
  stale++;
} else {
  console.log(`${EMBED_FILES.join(', ')}: files shown by reference are ${check ? 'up to date' : 'embedded'}`);
}
if (stale > 0) process.exit(1);
