/** The Temporal CLI without Docker: found, downloaded (checksum-verified) or built with Go; its dev server's arguments. */
import { createHash } from 'node:crypto';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { EphemeralServerExecutable } from '@temporalio/testing';
import { execa } from 'execa';
import { projectSearchAttributes } from '../../src/worker/order-worker.js';
import { SEARCH_ATTRIBUTE_TYPE_LABELS, type SearchAttributeDefinition } from '../../src/worker/order-worker.js';
import { errorMessage } from './env.js';
import { ensureGoTool, findGoTool, findOnPath, goToolPath, type GoToolSpec } from './go-tools.js';
import type { LogFn } from './processes.js';

const VERSION = '1.5.1';
const CLI_TOOL: GoToolSpec = {
  ...{ label: 'the Temporal CLI', folder: `temporal-${VERSION}`, goPackage: 'github.com/temporalio/cli/cmd/temporal' },
  ...{ version: VERSION, envVar: 'TEMPORAL_CLI_PATH' },
  buildArgs: ['-ldflags', `-X github.com/temporalio/cli/temporalcli.Version=${VERSION}`],
};
const log2stderr: LogFn = (line) => process.stderr.write(`${line}\n`);
const seconds = (since: number): string => ((Date.now() - since) / 1000).toFixed(1);

/**
 * `TEMPORAL_CLI_PATH`, a working `temporal` on `PATH`, or `.tools/`'s; never obtains one.
 * @throws Error when `TEMPORAL_CLI_PATH` names no executable.
 */
export async function findTemporalCli(): Promise<string | undefined> {
  if (process.env.TEMPORAL_CLI_PATH?.trim()) return findGoTool(CLI_TOOL);
  const onPath = await findOnPath('temporal');
  if (onPath && (await execa(onPath, ['--version'], { reject: false, timeout: 15_000 })).exitCode === 0) return onPath;
  return findGoTool(CLI_TOOL);
}

/**
 * Downloads the pinned release, checks its SHA-256 against `checksums.txt`, extracts `temporal` into `dir`.
 * @throws Error on a network failure, a bad answer, a checksum mismatch, or after `timeoutMs`.
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
  await mkdir(dir, { recursive: true });
  await execa('tar', ['-xzf', '-', '-C', dir, 'temporal'], { input: archive });
  return path.join(dir, 'temporal');
}

/** Where {@link ensureTemporalCli} looks for the CLI, in order (tests replace them). */
export interface CliSources {
  find(): Promise<string | undefined>;
  download(dir: string): Promise<string>;
  build(log: LogFn): Promise<string>;
}

/** {@link findTemporalCli}, else the download, else a Go build. @returns the binary's path. @throws Error when both fail. */
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
 * `TestWorkflowEnvironment.createLocal`'s `server.executable`: the CLI (found only, with `build: false`), else the SDK's
 * download.
 */
export async function temporalServerExecutable(opts: { build?: boolean } = {}): Promise<EphemeralServerExecutable> {
  const cliPath = opts.build === false ? await findTemporalCli() : await ensureTemporalCli();
  return cliPath === undefined ? { type: 'cached-download' } : { type: 'existing-path', path: cliPath };
}

interface DevServerOptions {
  dbFilename: string;
  port: number;
  uiPort: number;
  namespace?: string;
  searchAttributes?: readonly SearchAttributeDefinition[];
}

/** The `temporal server start-dev` arguments (project search attributes by default). */
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
