/**
 * Go programs without Docker: the tool's variable, else `.tools/<folder>/<binary>`, else `go install` into it under a
 * lock (proper-lockfile), so parallel callers build once.
 */
import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import lockfile from 'proper-lockfile';
import { repoRoot } from './env.js';
import type { LogFn } from './processes.js';

/** A Go program: label, `.tools/` folder, package, version (no `v`), path variable, extra `go install` arguments. */
export interface GoToolSpec {
  label: string;
  folder: string;
  goPackage: string;
  version: string;
  envVar: string;
  buildArgs?: readonly string[];
}

/** `<repo>/.tools/<folder>/<binary>`, existing or not; `go install` names the binary after the package's last element. */
export const goToolPath = (spec: GoToolSpec): string =>
  path.join(repoRoot(), '.tools', spec.folder, path.basename(spec.goPackage));

const isExecutable = (file: string): Promise<boolean> =>
  access(file, constants.X_OK).then(
    () => true,
    () => false,
  );

/** The absolute path of `name` on `PATH`, like `which`; undefined when there is none. */
export async function findOnPath(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean))
    if (await isExecutable(path.join(dir, name))) return path.resolve(dir, name);
  return undefined;
}

/** An existing binary (its variable, else `.tools/`); never builds. @throws Error when the variable names no executable. */
export async function findGoTool(spec: GoToolSpec): Promise<string | undefined> {
  const fromEnv = process.env[spec.envVar]?.trim();
  if (!fromEnv) return (await isExecutable(goToolPath(spec))) ? goToolPath(spec) : undefined;
  if (!(await isExecutable(fromEnv))) throw new Error(`${spec.envVar}=${fromEnv} is not an executable file`);
  return path.resolve(fromEnv);
}

/**
 * {@link findGoTool}, else `go install`s it. @returns its path. @throws Error without Go (naming `envVar`) or on a
 * failed build.
 */
export async function ensureGoTool(spec: GoToolSpec, log: LogFn): Promise<string> {
  const found = await findGoTool(spec);
  if (found !== undefined) return found;
  const go = await findOnPath('go');
  if (go === undefined)
    throw new Error(`no ${spec.label} binary and no Go toolchain to build it: install Go, or set ${spec.envVar}`);
  const [binary, dir] = [goToolPath(spec), path.dirname(goToolPath(spec))];
  await mkdir(dir, { recursive: true });
  // A lock folder whose mtime its holder refreshes: a dead holder's lock goes stale within 30 s. Waits up to 30 min.
  const retries = { retries: 1800, factor: 1, minTimeout: 1000, maxTimeout: 1000 };
  const release = await lockfile.lock(dir, { lockfilePath: `${dir}.lock`, stale: 30_000, retries });
  try {
    if (await isExecutable(binary)) return binary;
    const args = ['install', ...(spec.buildArgs ?? []), `${spec.goPackage}@v${spec.version}`];
    log(`Building ${spec.label} ${spec.version} with Go (GOBIN=${dir} go ${args.join(' ')}); minutes the first time`);
    const started = Date.now();
    const elapsed = () => Math.round((Date.now() - started) / 1000);
    const heartbeat = setInterval(() => log(`  … still building ${spec.label} (${elapsed()} s)`), 15_000);
    try {
      await execa(go, args, { cwd: dir, env: { GOBIN: dir }, stdin: 'ignore', all: true });
    } catch (error) {
      const output = String((error as { all?: string }).all ?? error).slice(-3000);
      throw new Error(`building ${spec.label} failed:\n${output}`);
    } finally {
      clearInterval(heartbeat);
    }
    log(`Built ${spec.label} in ${((Date.now() - started) / 1000).toFixed(0)} s: ${binary}`);
    return binary;
  } finally {
    await release();
  }
}

/** The folder of a module version in Go's module cache, downloaded if needed. @throws Error when Go or the download fails. */
export async function goModuleDir(module: string, version: string): Promise<string> {
  const args = ['mod', 'download', '-json', `${module}@v${version}`];
  const { stdout } = await execa('go', args, { cwd: repoRoot(), timeout: 300_000, reject: false });
  const info = JSON.parse(String(stdout) || '{}') as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${module}@v${version}: ${info.Error ?? 'no Dir in its output'}`);
  return info.Dir;
}
