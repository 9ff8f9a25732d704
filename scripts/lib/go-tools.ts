/**
 * Go programs this project runs without Docker, found or built from the Go module proxy, the way
 * scripts/lib/temporal-cli.ts finds or builds the Temporal CLI:
 * 1. an explicit path in an environment variable (e.g. `TEMPORAL_SERVER_PATH`);
 * 2. `<repo>/.tools/<name>-<version>/<binary>`, built earlier by {@link ensureGoTool};
 * 3. built now with `GOBIN=<that folder> go install <package>@v<version>` (under a lock folder, so parallel
 *    callers build once).
 * No download of release archives: only Go's own module proxy, which this project's machines can reach.
 */
import { constants as fsConstants } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import lockfile from 'proper-lockfile';
import { repoRoot } from './env.js';
import type { LogFn } from './processes.js';

const EXE_SUFFIX = process.platform === 'win32' ? '.exe' : '';

/** One Go program: where it lives and how to build it. */
export interface GoToolSpec {
  /** Human name for messages, e.g. `Temporal Server`. */
  label: string;
  /** Folder name under `.tools/`, e.g. `temporal-server-1.29.1`; several tools may share one folder. */
  folder: string;
  /** File name `go install` gives the binary (the last element of the package path), e.g. `server`. */
  binary: string;
  /** Go package path, e.g. `go.temporal.io/server/cmd/server`. */
  goPackage: string;
  /** Module version without the `v`, e.g. `1.29.1`. */
  version: string;
  /** Environment variable that names an existing binary and skips the build, e.g. `TEMPORAL_SERVER_PATH`. */
  envVar: string;
  /** Extra `go install` arguments (e.g. `-ldflags ...`). */
  buildArgs?: readonly string[];
  /** Arguments that make the binary print its version (default `--version`); the output must include `version`. */
  versionArgs?: readonly string[];
}

/** `<repo>/.tools/<folder>` (gitignored). */
export function goToolDir(spec: GoToolSpec): string {
  return path.join(repoRoot(), '.tools', spec.folder);
}

/** `<repo>/.tools/<folder>/<binary>`, whether or not it exists yet. */
export function goToolPath(spec: GoToolSpec): string {
  return path.join(goToolDir(spec), `${spec.binary}${EXE_SUFFIX}`);
}

/** Whether `file` is a regular file this process may execute. */
export async function isExecutableFile(file: string): Promise<boolean> {
  try {
    const info = await stat(file);
    if (!info.isFile()) return false;
    await access(file, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * Finds an executable named `name` on `PATH`, like `which`.
 * @returns its absolute path, or undefined when none is found.
 */
export async function findOnPath(name: string): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, `${name}${EXE_SUFFIX}`);
    if (await isExecutableFile(candidate)) return path.resolve(candidate);
  }
  return undefined;
}

/**
 * Runs `<binary> --version` (or `spec.versionArgs`; 15 s timeout).
 * @returns its first output line (stdout, else stderr), or undefined when the binary does not run.
 */
export async function goToolVersion(spec: GoToolSpec, file: string): Promise<string | undefined> {
  try {
    const { stdout, stderr } = await execa(file, [...(spec.versionArgs ?? ['--version'])], { timeout: 15_000 });
    return (stdout.trim() || stderr.trim()).split('\n')[0];
  } catch {
    return undefined;
  }
}

/**
 * Looks for an existing binary of `spec`; never builds.
 * @returns its absolute path, or undefined.
 * @throws Error when `spec.envVar` is set but does not name an executable file.
 */
export async function findGoTool(spec: GoToolSpec): Promise<string | undefined> {
  const fromEnv = process.env[spec.envVar]?.trim();
  if (fromEnv) {
    const resolved = path.resolve(fromEnv);
    if (!(await isExecutableFile(resolved))) throw new Error(`${spec.envVar}=${fromEnv} is not an executable file`);
    return resolved;
  }
  const local = goToolPath(spec);
  if ((await isExecutableFile(local)) && (await goToolVersion(spec, local)) !== undefined) return local;
  return undefined;
}

/**
 * Finds the binary of `spec` ({@link findGoTool}), else builds it with `go install` into `.tools/<folder>/`,
 * streaming Go's output and a heartbeat every 15 s to `log`.
 * @returns the binary's absolute path.
 * @throws Error when there is no binary and no Go toolchain (naming `spec.envVar`), when the build fails (with
 *   its last output lines), or when the built binary does not run.
 */
export async function ensureGoTool(spec: GoToolSpec, log: LogFn): Promise<string> {
  const found = await findGoTool(spec);
  if (found !== undefined) return found;
  const go = await findOnPath('go');
  if (go === undefined) {
    throw new Error(
      `No ${spec.label} binary (${spec.envVar} unset, none in ${path.relative(process.cwd(), goToolPath(spec))}) ` +
        `and no Go toolchain to build it: install Go, or set ${spec.envVar} to a ${spec.label} ${spec.version} binary.`,
    );
  }
  return withLock(`${goToolDir(spec)}.lock`, spec.label, log, async () => {
    const local = goToolPath(spec);
    if ((await isExecutableFile(local)) && (await goToolVersion(spec, local)) !== undefined) return local;
    return buildGoTool(go, spec, log);
  });
}

async function buildGoTool(go: string, spec: GoToolSpec, log: LogFn): Promise<string> {
  const dir = goToolDir(spec);
  await mkdir(dir, { recursive: true });
  const args = ['install', ...(spec.buildArgs ?? []), `${spec.goPackage}@v${spec.version}`];
  log(`Building ${spec.label} ${spec.version} with Go into ${path.relative(process.cwd(), dir) || dir}:`);
  log(`  GOBIN=${dir} go ${args.join(' ')}`);
  const started = Date.now();
  const tail: string[] = [];
  // Each output line (a generator transform of execa): to the log, and the last 30 kept for the error.
  // eslint-disable-next-line require-yield -- an execa transform that consumes each line and passes none on
  const onLine = function* (line: unknown): Generator<never> {
    tail.push(String(line));
    if (tail.length > 30) tail.shift();
    log(`  ${String(line)}`);
  };
  const heartbeat = setInterval(
    () => log(`  … still building ${spec.label} (${Math.round((Date.now() - started) / 1000)} s)`),
    15_000,
  );
  try {
    await execa(go, args, {
      cwd: dir,
      env: { GOBIN: dir },
      stdin: 'ignore',
      buffer: false,
      stdout: onLine,
      stderr: onLine,
    });
  } catch (error) {
    const { shortMessage } = error as { shortMessage?: string };
    throw new Error(
      `Building ${spec.label} failed (${shortMessage ?? String(error)}). Last output:\n${tail.join('\n')}`,
    );
  } finally {
    clearInterval(heartbeat);
  }
  const built = goToolPath(spec);
  const version = await goToolVersion(spec, built);
  if (version === undefined) throw new Error(`${spec.label} was built but ${built} does not run`);
  log(`Built ${spec.label} (${version}) in ${((Date.now() - started) / 1000).toFixed(1)} s: ${built}`);
  return built;
}

/**
 * The folder of a Go module version in Go's module cache, downloading it through the module proxy if needed
 * (`go mod download -json <module>@v<version>`).
 * @throws Error when Go is missing or the download fails.
 */
export async function goModuleDir(module: string, version: string): Promise<string> {
  const go = await findOnPath('go');
  if (go === undefined) throw new Error(`Go is needed to read ${module}@v${version} from the module cache`);
  const { stdout } = await execa(go, ['mod', 'download', '-json', `${module}@v${version}`], {
    cwd: repoRoot(),
    timeout: 300_000,
    reject: false,
  });
  const info = JSON.parse(String(stdout) || '{}') as { Dir?: string; Error?: string };
  if (!info.Dir) throw new Error(`go mod download ${module}@v${version}: ${info.Error ?? 'no Dir in its output'}`);
  return info.Dir;
}

/**
 * Runs `fn` while holding the lock `lock` (proper-lockfile: a folder whose mtime the holder refreshes, so the lock
 * of a process that died goes stale within 30 s and is taken over). Waits at most 30 minutes (a cold Temporal
 * Server build takes ~10 on 2 cores).
 */
async function withLock<T>(lock: string, label: string, log: LogFn, fn: () => Promise<T>): Promise<T> {
  await mkdir(path.dirname(lock), { recursive: true });
  const options = {
    realpath: false,
    lockfilePath: lock,
    stale: 30_000,
    onCompromised: (error: Error) => log(`warning: the build lock ${lock} was compromised: ${error.message}`),
  };
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(lock, { ...options, retries: 0 });
  } catch (error) {
    if ((error as { code?: string }).code !== 'ELOCKED') throw error;
    log(`Another process is building ${label}; waiting for it…`);
    release = await lockfile.lock(lock, {
      ...options,
      retries: { retries: 30 * 60, factor: 1, minTimeout: 1000, maxTimeout: 1000 },
    });
  }
  try {
    return await fn();
  } finally {
    await release();
  }
}
