/**
 * Go programs this project runs without Docker (the Temporal CLI when its download fails, the cluster's programs,
 * promtool): the path in the tool's environment variable, else `<repo>/.tools/<folder>/<binary>` built earlier, else
 * built now with `GOBIN=<that folder> go install <package>@v<version>` from the Go module proxy, under a lock
 * (proper-lockfile) so that parallel callers build once.
 */
import { constants } from 'node:fs';
import { access, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import lockfile from 'proper-lockfile';
import { repoRoot } from './env.js';
import type { LogFn } from './processes.js';

/**
 * One Go program: its name in messages, its folder under `.tools/` (several may share one), its package, its module
 * version (no `v`), the variable naming an existing binary, and extra `go install` arguments.
 */
export interface GoToolSpec {
  label: string;
  folder: string;
  goPackage: string;
  version: string;
  envVar: string;
  buildArgs?: readonly string[];
}

/**
 * `<repo>/.tools/<folder>/<binary>`, whether or not it exists yet; the binary is named as `go install` names it: after
 * the package path's last element (`.../cmd/server`: `server`).
 */
export function goToolPath(spec: GoToolSpec): string {
  return path.join(repoRoot(), '.tools', spec.folder, path.basename(spec.goPackage));
}

/** Whether `file` exists and this process may execute it. */
const isExecutable = (file: string): Promise<boolean> =>
  access(file, constants.X_OK)
    .then(() => true)
    .catch(() => false);

/** The absolute path of `name` on `PATH`, like `which`; undefined when there is none. */
export async function findOnPath(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter).filter(Boolean)) {
    if (await isExecutable(path.join(dir, name))) return path.resolve(dir, name);
  }
  return undefined;
}

/**
 * An existing binary of `spec` (its variable, else the one in `.tools/`); never builds.
 * @throws Error when the variable is set but names no executable file.
 */
export async function findGoTool(spec: GoToolSpec): Promise<string | undefined> {
  const fromEnv = process.env[spec.envVar]?.trim();
  if (fromEnv) {
    if (!(await isExecutable(fromEnv))) throw new Error(`${spec.envVar}=${fromEnv} is not an executable file`);
    return path.resolve(fromEnv);
  }
  return (await isExecutable(goToolPath(spec))) ? goToolPath(spec) : undefined;
}

/**
 * {@link findGoTool}, else builds it with `go install` into `.tools/<folder>/` (Go's output and a heartbeat every
 * 15 s to `log`).
 * @returns the binary's absolute path.
 * @throws Error when there is no binary and no Go toolchain (naming `spec.envVar`), or the build fails.
 */
export async function ensureGoTool(spec: GoToolSpec, log: LogFn): Promise<string> {
  const found = await findGoTool(spec);
  if (found !== undefined) return found;
  const go = await findOnPath('go');
  if (go === undefined) {
    throw new Error(`no ${spec.label} binary and no Go toolchain to build it: install Go, or set ${spec.envVar}`);
  }
  const dir = path.dirname(goToolPath(spec));
  await mkdir(dir, { recursive: true });
  // A lock folder whose mtime its holder refreshes: a dead holder's lock goes stale within 30 s. Waits up to 30 min.
  const release = await lockfile.lock(dir, {
    lockfilePath: `${dir}.lock`,
    stale: 30_000,
    retries: { retries: 1800, factor: 1, minTimeout: 1000, maxTimeout: 1000 },
  });
  try {
    if (await isExecutable(goToolPath(spec))) return goToolPath(spec);
    const args = ['install', ...(spec.buildArgs ?? []), `${spec.goPackage}@v${spec.version}`];
    log(`Building ${spec.label} ${spec.version} with Go (GOBIN=${dir} go ${args.join(' ')}); minutes the first time`);
    const started = Date.now();
    const heartbeat = setInterval(
      () => log(`  … still building ${spec.label} (${Math.round((Date.now() - started) / 1000)} s)`),
      15_000,
    );
    try {
      await execa(go, args, { cwd: dir, env: { GOBIN: dir }, stdin: 'ignore', all: true });
    } catch (error) {
      throw new Error(
        `building ${spec.label} failed:\n${String((error as { all?: string }).all ?? error).slice(-3000)}`,
      );
    } finally {
      clearInterval(heartbeat);
    }
    log(`Built ${spec.label} in ${((Date.now() - started) / 1000).toFixed(0)} s: ${goToolPath(spec)}`);
    return goToolPath(spec);
  } finally {
    await release();
  }
}

/**
 * The folder of a module version in Go's module cache, downloaded through the proxy if needed.
 * @throws Error when Go is missing or the download fails.
 */
export async function goModuleDir(module: string, version: string): Promise<string> {
  const { stdout } = await execa('go', ['mod', 'download', '-json', `${module}@v${version}`], {
    cwd: repoRoot(),
    timeout: 300_000,
    reject: false,
  });
  const info = JSON.parse(String(stdout) || '{}') as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${module}@v${version}: ${info.Error ?? 'no Dir in its output'}`);
  return info.Dir;
}
