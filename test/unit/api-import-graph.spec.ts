/**
 * The API process never loads the worker's runtime (issue #22, item 4): it reads steps from the catalogue
 * (activities/catalogue/), and no step code (activities/steps/), no step kit (activities/kit/: SQL), no activities
 * (activities/index.ts), no provider client (providers/kit/client.ts, http.ts), no provider definition (the registry
 * providers/index.ts, providers/<name>.provider.ts: their configuration is the worker's, src/worker/worker-config.ts)
 * and no simulator (simulators/). Proved on the import graph as it runs: a fresh process imports the API's root
 * module (src/app.module.ts) and its entry's bootstrap (src/bootstrap.ts) under a module hook that records every file
 * it loads. The same for the worker's modules, which must load the step code: the check sees what it claims to see.
 * eslint.config.js holds the import rule.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const dir = mkdtempSync(path.join(tmpdir(), 'import-graph-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The worker's runtime, by path under the checkout: what the API must not load. */
const WORKER_RUNTIME = [
  /^activities\/steps\//,
  /^activities\/kit\//,
  /^activities\/index\.ts$/,
  /^activities\/retention\.activities\.ts$/,
  /^providers\/kit\/(client|http)\.ts$/,
  /^providers\/index\.ts$/,
  /^providers\/[^/]+\.provider\.ts$/,
  /^simulators\//,
];

/** The project's files (paths under the checkout) a fresh process loads when it imports `modules`. */
function loadedFiles(name: string, modules: string[]): string[] {
  const record = path.join(dir, `${name}.txt`);
  const imports = modules.map((m) => `await import(${JSON.stringify(pathToFileURL(path.join(ROOT, m)).href)});`);
  execFileSync(
    process.execPath,
    [
      '--import',
      'tsx',
      '--import',
      pathToFileURL(path.join(ROOT, 'test/helpers/record-loaded-modules.mjs')).href,
      '--input-type=module',
      '--eval',
      `${imports.join('\n')}\nprocess.exit(0);`,
    ],
    { cwd: ROOT, env: { ...process.env, RECORD_LOADED_MODULES: record }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  return [
    ...new Set(
      readFileSync(record, 'utf8')
        .split('\n')
        .filter((url) => url.startsWith('file:'))
        .map((url) =>
          path
            .relative(ROOT, fileURLToPath(url.split('?')[0]!))
            .split(path.sep)
            .join('/'),
        )
        .filter((file) => !file.startsWith('..') && !file.startsWith('node_modules/')),
    ),
  ].sort();
}

describe('the API import graph', () => {
  it('loads the catalogue and no step code, kit, activities, provider client or definition, or simulator', () => {
    const files = loadedFiles('api', ['src/app.module.ts', 'src/bootstrap.ts']);
    expect(files).toContain('src/orders/orders.service.ts');
    expect(files).toContain('activities/catalogue/steps.ts');
    expect(files.filter((f) => WORKER_RUNTIME.some((r) => r.test(f)))).toEqual([]);
  }, 120_000);

  it('sees the step code where it is loaded: the worker', () => {
    // src/worker.ts runs the worker when imported: its modules instead.
    const files = loadedFiles('worker', ['src/worker.module.ts', 'src/worker/order-worker.ts']);
    expect(files).toContain('activities/steps/ship-order.step.ts');
    expect(files).toContain('providers/kit/client.ts');
    expect(files).toContain('providers/email.provider.ts');
    expect(files).toContain('src/worker/worker-config.ts');
  }, 120_000);
});
