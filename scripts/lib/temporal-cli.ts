/**
 * The Temporal CLI (dev server + Web UI) without Docker: `TEMPORAL_CLI_PATH`, `temporal` on `PATH`, an earlier
 * `.tools/temporal-<version>/temporal`, else the official release archive (checksum-verified), else a Go build.
 * {@link startDevServer} runs `temporal server start-dev` for the bench and tests; `npm start` runs the same command
 * line ({@link devServerArgs}) under its supervisor.
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import type { EphemeralServerExecutable } from '@temporalio/testing';
import { execa } from 'execa';
import { ensureSearchAttributes, projectSearchAttributes } from '../../src/worker/order-worker.js';
import { SEARCH_ATTRIBUTE_TYPE_LABELS, type SearchAttributeDefinition } from '../../src/worker/order-worker.js';
import { errorMessage } from './env.js';
import { ensureGoTool, findGoTool, findOnPath, goToolPath, type GoToolSpec } from './go-tools.js';
import { spawnChild, stop, waitForTemporal, type LogFn, type Proc } from './processes.js';

/** The CLI version this project pins: the newest that builds from the Go module proxy. */
const VERSION = '1.5.1';
const CLI_TOOL: GoToolSpec = {
  ...{ label: 'the Temporal CLI', folder: `temporal-${VERSION}`, goPackage: 'github.com/temporalio/cli/cmd/temporal' },
  ...{ version: VERSION, envVar: 'TEMPORAL_CLI_PATH' },
  buildArgs: ['-ldflags', `-X github.com/temporalio/cli/temporalcli.Version=${VERSION}`],
};
const log2stderr: LogFn = (line) => process.stderr.write(`${line}\n`);
const seconds = (since: number): string => ((Date.now() - since) / 1000).toFixed(1);

/**
 * An existing CLI: `TEMPORAL_CLI_PATH`, `temporal` on `PATH` (if `--version` runs), or the one in `.tools/`; never
 * downloads or builds. @throws Error when `TEMPORAL_CLI_PATH` is set but names no executable file.
 */
export async function findTemporalCli(): Promise<string | undefined> {
  if (process.env.TEMPORAL_CLI_PATH?.trim()) return findGoTool(CLI_TOOL);
  const onPath = await findOnPath('temporal');
  if (onPath && (await execa(onPath, ['--version'], { reject: false, timeout: 15_000 })).exitCode === 0) return onPath;
  return findGoTool(CLI_TOOL);
}

/**
 * Downloads the pinned release archive for this platform from temporal.download (the CLI's documented link), checks
 * its SHA-256 against the release's `checksums.txt` and extracts `temporal` into `dir`.
 * @throws Error on a network failure (offline: at once), a bad answer, a checksum mismatch, or after `timeoutMs`.
 */
async function downloadTemporalCli(dir: string, timeoutMs = 120_000): Promise<string> {
  const platform = { linux: 'linux', darwin: 'darwin' }[process.platform as string];
  const arch = { x64: 'amd64', arm64: 'arm64' }[process.arch as string];
  if (!platform || !arch) throw new Error(`no release archive for ${process.platform}/${process.arch}`);
  const name = `temporal_cli_${VERSION}_${platform}_${arch}.tar.gz`;
  const get = async (url: string): Promise<Buffer> => {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) }).catch((e: { cause?: unknown }) => {
      throw new Error(`${url}: ${errorMessage(e.cause ?? e)}`);
    });
    if (!res.ok) throw new Error(`${url} answered ${res.status}`);
    return Buffer.from(await res.arrayBuffer());
  };
  const archive = await get(`https://temporal.download/cli/archive/v${VERSION}?platform=${platform}&arch=${arch}`);
  const release = `https://github.com/temporalio/cli/releases/download/v${VERSION}`;
  const sums = await get(`${release}/temporal_cli_${VERSION}_checksums.txt`);
  const line = new RegExp(`^(\\S+)[ \t]+(?:.*[ \t])?${name.replace(/\./g, '\\.')}\\s*$`, 'm');
  const expected = line.exec(sums.toString('utf8'))?.[1];
  const actual = createHash('sha256').update(archive).digest('hex');
  if (expected !== actual)
    throw new Error(`${name}: SHA-256 ${actual} is not the release's ${expected ?? '(none listed)'}`);
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'temporal-cli-'));
  try {
    await writeFile(path.join(tmp, name), archive);
    await mkdir(dir, { recursive: true });
    await execa('tar', ['-xzf', path.join(tmp, name), '-C', dir, 'temporal']);
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
  return path.join(dir, 'temporal');
}

/** Where {@link ensureTemporalCli} looks for the CLI, in order. */
export interface CliSources {
  find(): Promise<string | undefined>;
  download(dir: string): Promise<string>;
  build(log: LogFn): Promise<string>;
}

/**
 * {@link findTemporalCli}; else the official download; else, when that fails, a Go build of the pinned version
 * (minutes the first time), saying on `log` which and why. `sources` replaces any of the three (tests).
 * @returns the binary's absolute path. @throws Error when both the download and the build fail (with both reasons).
 */
export async function ensureTemporalCli(opts: { log?: LogFn; sources?: Partial<CliSources> } = {}): Promise<string> {
  const log = opts.log ?? log2stderr;
  const build = (log: LogFn) => ensureGoTool(CLI_TOOL, log);
  const sources: CliSources = { find: findTemporalCli, download: downloadTemporalCli, build, ...opts.sources };
  const found = await sources.find();
  if (found !== undefined) return found;
  const dir = path.dirname(goToolPath(CLI_TOOL));
  log(
    `No Temporal CLI found: downloading the official Temporal CLI ${VERSION} into ${path.relative(process.cwd(), dir)}`,
  );
  const started = Date.now();
  try {
    const cli = await sources.download(dir);
    log(`Downloaded the Temporal CLI in ${seconds(started)} s (checksum verified): ${cli}`);
    return cli;
  } catch (error) {
    log(`The download failed after ${seconds(started)} s (${errorMessage(error)})`);
    log('Building the Temporal CLI from source with Go instead');
    return sources.build(log).catch((buildError: unknown) => {
      const why = `the download failed (${errorMessage(error)}) and so did the Go build (${errorMessage(buildError)})`;
      throw new Error(`no Temporal CLI: ${why}`);
    });
  }
}

/**
 * The `server.executable` option of @temporalio/testing's `TestWorkflowEnvironment.createLocal`: the CLI found (or
 * obtained, unless `opts.build` is false), else `{ type: 'cached-download' }` (the SDK downloads one).
 */
export async function temporalServerExecutable(opts: { build?: boolean } = {}): Promise<EphemeralServerExecutable> {
  const cliPath = opts.build === false ? await findTemporalCli() : await ensureTemporalCli();
  return cliPath === undefined ? { type: 'cached-download' } : { type: 'existing-path', path: cliPath };
}

/** What a dev server runs on: its SQLite file, ports, namespace (`default`) and search attributes (the project's). */
interface DevServerOptions {
  dbFilename: string;
  port: number;
  uiPort: number;
  namespace?: string;
  searchAttributes?: readonly SearchAttributeDefinition[];
}

/** `server start-dev --db-filename … --port … --ui-port … --ip 127.0.0.1 --namespace … --search-attribute …`. */
export function devServerArgs(opts: DevServerOptions): string[] {
  const attributes = (opts.searchAttributes ?? projectSearchAttributes()).flatMap((sa) => [
    '--search-attribute',
    `${sa.name}=${SEARCH_ATTRIBUTE_TYPE_LABELS[sa.type]}`,
  ]);
  return [
    ...['server', 'start-dev', '--db-filename', opts.dbFilename, '--port', String(opts.port)],
    ...['--ui-port', String(opts.uiPort), '--ip', '127.0.0.1', '--namespace', opts.namespace ?? 'default'],
    ...attributes,
    ...['--log-level', 'warn'],
  ];
}

/**
 * Starts `temporal server start-dev` ({@link devServerArgs}) and waits until it serves the namespace; then registers
 * the search attributes an existing database file lacks (its `--search-attribute` flags apply only to a new file).
 * @returns TEMPORAL_ADDRESS, TEMPORAL_UI_URL, the process and its stop (SIGTERM, SIGKILL after 25 s).
 * @throws Error when it exits first or is not ready within `readyTimeoutMs` (60 000); it is stopped first.
 */
export async function startDevServer(
  opts: DevServerOptions & { cliPath: string; log?: LogFn; readyTimeoutMs?: number },
): Promise<{ address: string; uiUrl: string; child: Proc; stop(): Promise<void> }> {
  const log = opts.log ?? log2stderr;
  const [address, namespace] = [`127.0.0.1:${opts.port}`, opts.namespace ?? 'default'];
  await mkdir(path.dirname(path.resolve(opts.dbFilename)), { recursive: true });
  const child = spawnChild(opts.cliPath, devServerArgs(opts), {
    stdout: 'pipe',
    stderr: 'pipe',
    all: true,
    buffer: false,
  });
  child.all?.on('data', (chunk: Buffer) => chunk.toString().split('\n').filter(Boolean).forEach(log));
  const server = { address, uiUrl: `http://127.0.0.1:${opts.uiPort}`, child, stop: () => stop(child) };
  try {
    const timeoutMs = opts.readyTimeoutMs ?? 60_000;
    await waitForTemporal({ address, namespace, timeoutMs, child });
    const connection = await Connection.connect({ address });
    try {
      const attributes = opts.searchAttributes ?? projectSearchAttributes();
      const added = await ensureSearchAttributes(connection, namespace, { attributes, timeoutMs });
      if (added.length > 0) log(`registered search attributes new to ${opts.dbFilename}: ${added.join(', ')}`);
    } finally {
      await connection.close();
    }
  } catch (error) {
    await server.stop();
    throw error;
  }
  return server;
}
