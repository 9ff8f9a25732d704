/**
 * `npm start`'s build step: runs `npm run build` (prisma generate + tsc) only when a source changed since the last
 * successful build. "Changed" = the paths and contents of every file tsc and prisma generate read (the folders
 * tsconfig.build.json includes, prisma/schema.prisma among them, the tsconfigs, prisma.config.ts, package.json and
 * package-lock.json) hash differently from the stamp written to dist/.build-stamp after that build, or an entry point
 * the stack runs (STACK_ENTRY_POINTS of ./stack-definition.ts) is missing from dist/. Contents, not modification
 * times: `npm install` rewrites package-lock.json (same bytes, new mtime) on every run, so the README's
 * `npm install && npm start` would otherwise rebuild every time.
 * `FORCE_BUILD=1` always builds.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { repoRoot } from './env.js';
import { STACK_ENTRY_POINTS } from './stack-definition.js';

const ROOT = repoRoot();
const STAMP = path.join(ROOT, 'dist', '.build-stamp');
/** The source folders when the checkout has no readable tsconfig.build.json. */
const DEFAULT_SOURCE_DIRS = ['src', 'workflows', 'activities', 'providers', 'simulators', 'scripts', 'prisma'];
const SOURCE_FILES = ['tsconfig.json', 'tsconfig.build.json', 'prisma.config.ts', 'package.json', 'package-lock.json'];

/**
 * The folders the build compiles: the top-level folders of tsconfig.build.json's `include` (`src`, `src/**\/*` and
 * `src/*.ts` all name `src`), so a new source folder needs no edit here.
 */
export function sourceDirs(root = ROOT): string[] {
  const file = path.join(root, 'tsconfig.build.json');
  if (!existsSync(file)) return DEFAULT_SOURCE_DIRS;
  const { config } = ts.readConfigFile(file, ts.sys.readFile) as { config?: { include?: unknown } };
  const include = Array.isArray(config?.include) ? config.include.filter((i) => typeof i === 'string') : [];
  const dirs = include.map((i) => i.replace(/^\.\//, '').split('/')[0]!).filter((d) => d && !/[*?]/.test(d));
  return dirs.length > 0 ? [...new Set(dirs)] : DEFAULT_SOURCE_DIRS;
}

/** The entry points of the stack (STACK_ENTRY_POINTS) that are missing under `root`. */
export function missingEntryPoints(root = ROOT): string[] {
  return STACK_ENTRY_POINTS.filter((f) => !existsSync(path.join(root, f)));
}

/** Hash of the relative path and contents of every input file (prisma's generated client excluded). */
export function sourceFingerprint(root = ROOT): string {
  const hash = createHash('sha256');
  const add = (rel: string): void => {
    const content = readFileSync(path.join(root, rel));
    hash.update(`${rel}\0${content.length}\0`);
    hash.update(content);
    hash.update('\n');
  };
  const walk = (rel: string): void => {
    for (const entry of readdirSync(path.join(root, rel), { withFileTypes: true }).sort((a, b) =>
      a.name.localeCompare(b.name),
    )) {
      const child = path.join(rel, entry.name);
      if (entry.isDirectory()) {
        if (child !== path.join('prisma', 'generated') && entry.name !== 'node_modules') walk(child);
      } else if (entry.isFile()) {
        add(child);
      }
    }
  };
  for (const dir of sourceDirs(root))
    if (existsSync(path.join(root, dir)) && statSync(path.join(root, dir)).isDirectory()) walk(dir);
  for (const file of SOURCE_FILES) if (existsSync(path.join(root, file))) add(file);
  return hash.digest('hex');
}

function main(): void {
  const fingerprint = sourceFingerprint();
  const stamp = existsSync(STAMP) ? readFileSync(STAMP, 'utf8').trim() : '';
  const missing = missingEntryPoints();
  const force = ['1', 'true', 'yes'].includes((process.env.FORCE_BUILD ?? '').toLowerCase());
  const generatedMissing = !existsSync(path.join(ROOT, 'prisma', 'generated'));
  if (!force && missing.length === 0 && !generatedMissing && stamp === fingerprint) {
    console.log('build: dist/ is up to date with the sources (FORCE_BUILD=1 rebuilds)');
    return;
  }
  console.log(
    `build: ${force ? 'FORCE_BUILD is set' : missing.length > 0 ? `missing ${missing[0]}` : 'sources changed'}: npm run build`,
  );
  const res = spawnSync('npm', ['run', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (res.status !== 0) process.exit(res.status ?? 1);
  writeFileSync(STAMP, `${sourceFingerprint()}\n`);
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
