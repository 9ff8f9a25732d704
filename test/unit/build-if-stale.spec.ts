import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { missingEntryPoints, sourceDirs, sourceFingerprint } from '../../scripts/lib/build-if-stale.js';
import { STACK_ENTRY_POINTS } from '../../scripts/lib/stack-definition.js';

describe('sourceFingerprint (npm start builds only when it changes)', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'fingerprint-'));
  afterAll(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(path.join(root, 'src'));
  mkdirSync(path.join(root, 'prisma', 'generated'), { recursive: true });
  writeFileSync(path.join(root, 'src', 'a.ts'), 'export const a = 1;\n');
  writeFileSync(path.join(root, 'tsconfig.json'), '{}\n');

  it('is stable when nothing changed, ignores the generated client, and changes with a source', () => {
    const first = sourceFingerprint(root);
    expect(sourceFingerprint(root)).toBe(first);
    writeFileSync(path.join(root, 'prisma', 'generated', 'client.ts'), 'x');
    expect(sourceFingerprint(root)).toBe(first);
    writeFileSync(path.join(root, 'src', 'a.ts'), 'export const a = 2;\n'); // same size, new mtime
    utimesSync(path.join(root, 'src', 'a.ts'), new Date(), new Date(Date.now() + 5_000));
    expect(sourceFingerprint(root)).not.toBe(first);
    const second = sourceFingerprint(root);
    writeFileSync(path.join(root, 'src', 'b.ts'), '');
    expect(sourceFingerprint(root)).not.toBe(second);
  });

  it('ignores a rewrite with the same bytes (npm install rewrites package-lock.json every time)', () => {
    writeFileSync(path.join(root, 'package-lock.json'), '{"lockfileVersion":3}\n');
    const before = sourceFingerprint(root);
    writeFileSync(path.join(root, 'package-lock.json'), '{"lockfileVersion":3}\n');
    utimesSync(path.join(root, 'package-lock.json'), new Date(), new Date(Date.now() + 60_000));
    expect(sourceFingerprint(root)).toBe(before);
    writeFileSync(path.join(root, 'package-lock.json'), '{"lockfileVersion":2}\n'); // same size, other bytes
    expect(sourceFingerprint(root)).not.toBe(before);
  });
});

describe('what npm start checks before it starts', () => {
  it('waits for the build of every process of the stack definition (STACK_ENTRY_POINTS)', () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'entries-'));
    try {
      expect(missingEntryPoints(root)).toEqual(STACK_ENTRY_POINTS);
      expect(STACK_ENTRY_POINTS).toContain('dist/simulators/main.js');
      for (const entry of STACK_ENTRY_POINTS) {
        mkdirSync(path.dirname(path.join(root, entry)), { recursive: true });
        writeFileSync(path.join(root, entry), '');
      }
      expect(missingEntryPoints(root)).toEqual([]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });

  it("hashes the folders of tsconfig.build.json's include (a new source folder needs no edit)", () => {
    const root = mkdtempSync(path.join(os.tmpdir(), 'include-'));
    try {
      writeFileSync(
        path.join(root, 'tsconfig.build.json'),
        '{\n  // comments are allowed\n  "include": ["src", "./providers/**/*", "scripts/*.ts"]\n}\n',
      );
      expect(sourceDirs(root)).toEqual(['src', 'providers', 'scripts']);
      mkdirSync(path.join(root, 'providers'));
      writeFileSync(path.join(root, 'providers', 'a.provider.ts'), 'export {};\n');
      const before = sourceFingerprint(root);
      writeFileSync(path.join(root, 'providers', 'b.provider.ts'), 'export {};\n');
      expect(sourceFingerprint(root)).not.toBe(before);
      expect(sourceDirs(process.cwd())).toEqual(expect.arrayContaining(['src', 'providers', 'simulators']));
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
