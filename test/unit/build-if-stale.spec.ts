import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sourceFingerprint } from '../../scripts/lib/build-if-stale.js';

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
