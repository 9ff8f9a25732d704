/**
 * `npm start` builds through the same cached script as `npm run build` (wireit: a build is skipped while no input
 * changed, so a start right after a build does not rebuild, issue 25), and that script's inputs cover every folder the
 * build compiles (tsconfig.build.json's include), so a change anywhere in them triggers a build.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../../scripts/lib/env.js';

const root = repoRoot();
const pkg = JSON.parse(readFileSync(`${root}/package.json`, 'utf8')) as {
  scripts: Record<string, string>;
  wireit: Record<string, { command: string; files: string[]; output: string[]; clean?: unknown }>;
};

describe('the build cache', () => {
  it('npm start and start:cluster run the cached build, not a build of their own', () => {
    expect(pkg.scripts.build).toBe('wireit');
    expect(pkg.scripts.start).toMatch(/^npm run build && /);
    expect(pkg.scripts['start:cluster']).toMatch(/^npm run build && /);
    expect(pkg.wireit.build!.command).toContain('tsc -p tsconfig.build.json');
  });

  it("hashes every folder tsconfig.build.json compiles, the generated client's schema and the lock file", () => {
    const config = JSON.parse(readFileSync(`${root}/tsconfig.build.json`, 'utf8')) as { include: string[] };
    const files = pkg.wireit.build!.files;
    for (const folder of config.include) expect(files).toContain(`${folder}/**`);
    expect(files).toEqual(expect.arrayContaining(['package-lock.json', 'tsconfig.json', 'tsconfig.build.json']));
    expect(pkg.wireit.build!.output).toContain('dist/**');
    expect(pkg.wireit.build!.clean).toBe(false); // tsc rebuilds only what changed
  });
});
