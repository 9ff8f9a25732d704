/**
 * How `npm run check:extending` (scripts/check-extending.ts) reads docs/extending.md: the marked blocks in document
 * order, each with its section (commands, files written by hand, patches), and the arguments of a `new:step`
 * command. That the examples apply to a copy and the whole suite holds with them is the check itself (a CI step).
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EXTENDING_DOC, newStepArguments, readExamples } from '../../scripts/check-extending.js';
import { repoRoot } from '../../scripts/lib/env.js';

describe('readExamples', () => {
  it('reads run, write and patch blocks in order, with their section; unmarked blocks are left alone', () => {
    const markdown = [
      '## First',
      '<!-- ci: run -->',
      '',
      '```bash',
      '# a comment',
      'npm run new:step -- a \\',
      '  --after b',
      '',
      'npm run docs:tables',
      '```',
      '```bash',
      'echo not marked',
      '```',
      '## Second',
      '<!-- ci: write providers/x.provider.ts -->',
      '```ts',
      'export const x = 1;',
      '```',
      '<!-- ci: patch -->',
      '```diff',
      '--- a/f',
      '+++ b/f',
      '```',
    ].join('\n');
    expect(readExamples(markdown)).toEqual([
      { section: 'First', kind: 'run', command: 'npm run new:step -- a --after b' },
      { section: 'First', kind: 'run', command: 'npm run docs:tables' },
      { section: 'Second', kind: 'write', path: 'providers/x.provider.ts', content: 'export const x = 1;\n' },
      { section: 'Second', kind: 'patch', diff: '--- a/f\n+++ b/f\n' },
    ]);
  });

  it('refuses a marker without a block', () => {
    expect(() => readExamples('<!-- ci: run -->\ntext')).toThrow(/not followed by a fenced block/);
  });

  it('reads the arguments of new:step, quoted ones whole', () => {
    expect(newStepArguments('npm run new:step -- payA --label "Payment authorized" --before x')).toEqual([
      'payA',
      '--label',
      'Payment authorized',
      '--before',
      'x',
    ]);
    expect(newStepArguments('npm run docs:tables')).toBeUndefined();
  });

  it('finds in docs/extending.md both examples: a step after the pivot, and a provider step placed first', async () => {
    const actions = readExamples(await readFile(path.join(repoRoot(), EXTENDING_DOC), 'utf8'));
    const scaffolds = actions.flatMap((a) => (a.kind === 'run' ? (newStepArguments(a.command) ?? []) : []));
    expect(scaffolds).toEqual(expect.arrayContaining(['--before', '--after', '--provider']));
    expect(
      actions.filter((a) => a.kind === 'patch').every((a) => a.kind === 'patch' && a.diff.startsWith('--- a/')),
    ).toBe(true);
    expect(actions.some((a) => a.kind === 'write')).toBe(true);
  });
});
