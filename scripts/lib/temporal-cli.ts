/**
 * The Temporal CLI (dev server + Web UI) for local development, tests and CI, without Docker.
 *
 * Where the CLI comes from, in order:
 * 1. `TEMPORAL_CLI_PATH` (an explicit binary, e.g. the one CI built);
 * 2. `temporal` on `PATH` (a Homebrew or CDN install), if `temporal --version` runs;
 * 3. `<repo>/.tools/temporal-<version>/temporal`, built earlier by {@link ensureTemporalCli};
 * 4. built now from the Go module proxy when `go` is installed (~2 minutes the first time);
 * 5. otherwise nothing: the Temporal SDK downloads a CLI itself (needs internet).
 *
 * Also: {@link startDevServer} runs `temporal server start-dev` with this project's search attributes and
 * waits until its frontend answers; {@link stopChildProcess} is the SIGTERM-then-SIGKILL helper the stack
 * scripts share.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { constants as fsConstants, existsSync } from 'node:fs';
import { access, mkdir, stat } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import type { EphemeralServerExecutable } from '@temporalio/testing';
import { SEARCH_ATTRIBUTES } from '../../workflows/order-fulfilment.contract.js';
import { ensureGoTool, type GoToolSpec } from './go-tools.js';

const execFileAsync = promisify(execFile);

/** The CLI version this project pins: the newest that builds from the Go module proxy (later ones need a module the proxy does not serve). */
export const TEMPORAL_CLI_VERSION = '1.5.1';

/** Go package and version-stamping flag of the CLI build. */
const CLI_GO_PACKAGE = 'github.com/temporalio/cli/cmd/temporal';
const CLI_VERSION_LDFLAG = `-X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION}`;

const EXE_SUFFIX = process.platform === 'win32' ? '.exe' : '';

/** A line logger; every helper here defaults to writing to stderr. */
export type LogFn = (line: string) => void;

const logToStderr: LogFn = (line) => {
  process.stderr.write(`${line}\n`);
};

/**
 * The repository root: the nearest folder above this file that holds a `package.json`. Works both from
 * `scripts/lib/` (tsx) and from `dist/scripts/lib/` (compiled).
 * @throws Error when no `package.json` is found up to the file-system root.
 */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'package.json'))) return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new Error(`No package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/** Folder the project builds the CLI into: `<repo>/.tools/temporal-<version>` (gitignored). */
export function localCliDir(): string {
  return path.join(repoRoot(), '.tools', `temporal-${TEMPORAL_CLI_VERSION}`);
}

/** Path of the project-built CLI binary, whether or not it exists yet. */
export function localCliPath(): string {
  return path.join(localCliDir(), `temporal${EXE_SUFFIX}`);
}

async function isExecutableFile(file: string): Promise<boolean> {
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
 * Runs `<cliPath> --version` (15 s timeout).
 * @returns its first output line, e.g. `temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)`, or undefined when
 *   the binary does not run.
 */
export async function temporalCliVersion(cliPath: string): Promise<string | undefined> {
  try {
    const { stdout } = await execFileAsync(cliPath, ['--version'], { timeout: 15_000 });
    return stdout.trim().split('\n')[0];
  } catch {
    return undefined;
  }
}

/**
 * Looks for an existing Temporal CLI; never builds or downloads.
 * Order: `TEMPORAL_CLI_PATH`, then `temporal` on `PATH` (only if `temporal --version` runs), then the copy
 * the project built before at `<repo>/.tools/temporal-<version>/temporal`.
 * @returns the absolute path of the binary, or undefined when there is none.
 * @throws Error when `TEMPORAL_CLI_PATH` is set but does not name an executable file (a configuration
 *   mistake is reported, not silently skipped).
 */
export async function findTemporalCli(): Promise<string | undefined> {
  const fromEnv = process.env.TEMPORAL_CLI_PATH?.trim();
  if (fromEnv) {
    const resolved = path.resolve(fromEnv);
    if (!(await isExecutableFile(resolved))) {
      throw new Error(`TEMPORAL_CLI_PATH=${fromEnv} is not an executable file`);
    }
    return resolved;
  }
  const onPath = await findOnPath('temporal');
  if (onPath !== undefined && (await temporalCliVersion(onPath)) !== undefined) return onPath;
  const local = localCliPath();
  if ((await isExecutableFile(local)) && (await temporalCliVersion(local)) !== undefined) return local;
  return undefined;
}

/**
 * Finds the Temporal CLI ({@link findTemporalCli}); if there is none and Go is installed, builds it into
 * `<repo>/.tools/temporal-<version>/` with
 * `GOBIN=<dir> go install -ldflags "-X github.com/temporalio/cli/temporalcli.Version=<v>" github.com/temporalio/cli/cmd/temporal@v<v>`
 * (about 2 minutes and 2 GB of memory the first time; seconds once Go's caches are warm), streaming Go's
 * output and a heartbeat every 15 s to `opts.log`.
 * @returns the binary's absolute path, or undefined when there is no CLI and no Go: callers then let the
 *   Temporal SDK download one ({@link temporalServerExecutable}, {@link startDevServer} with no `cliPath`).
 * @throws Error when the Go build fails (with its last output lines) or the built binary does not run.
 */
export async function ensureTemporalCli(opts: { log?: LogFn } = {}): Promise<string | undefined> {
  const log = opts.log ?? logToStderr;
  const found = await findTemporalCli();
  if (found !== undefined) return found;

  if ((await findOnPath('go')) === undefined) {
    log(
      `No Temporal CLI found (TEMPORAL_CLI_PATH, PATH, ${path.relative(process.cwd(), localCliPath())}) and no Go ` +
        'toolchain to build one: the Temporal SDK will download the CLI (needs internet).',
    );
    return undefined;
  }
  // Built like the cluster's Go tools (scripts/lib/go-tools.ts): into .tools/, under a lock, once.
  const built = await ensureGoTool(CLI_TOOL, log);
  const version = await temporalCliVersion(built);
  if (!version?.includes(TEMPORAL_CLI_VERSION)) {
    throw new Error(`${built} reports "${version ?? 'nothing'}", expected version ${TEMPORAL_CLI_VERSION}`);
  }
  return built;
}

/** The pinned CLI as a Go tool: `.tools/temporal-<version>/temporal`, or `TEMPORAL_CLI_PATH`. */
const CLI_TOOL: GoToolSpec = {
  label: 'the Temporal CLI',
  folder: `temporal-${TEMPORAL_CLI_VERSION}`,
  binary: 'temporal',
  goPackage: CLI_GO_PACKAGE,
  version: TEMPORAL_CLI_VERSION,
  envVar: 'TEMPORAL_CLI_PATH',
  buildArgs: ['-ldflags', CLI_VERSION_LDFLAG],
};

/**
 * The `server.executable` option of `TestWorkflowEnvironment.createLocal` (@temporalio/testing):
 * `{ type: 'existing-path', path }` when a CLI is found (or built, unless `opts.build` is false),
 * else `{ type: 'cached-download' }` (the SDK downloads one; needs internet).
 * @throws like {@link ensureTemporalCli}.
 */
export async function temporalServerExecutable(
  opts: { build?: boolean; log?: LogFn } = {},
): Promise<EphemeralServerExecutable> {
  const cliPath = opts.build === false ? await findTemporalCli() : await ensureTemporalCli({ log: opts.log });
  return cliPath === undefined ? { type: 'cached-download' } : { type: 'existing-path', path: cliPath };
}

/** How a child process ended. */
export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** `code 1` or `signal SIGKILL`. */
export function describeExit(exit: ExitInfo): string {
  return exit.signal !== null ? `signal ${exit.signal}` : `code ${String(exit.code)}`;
}

/** Whether the process has already exited. */
export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

/**
 * Resolves when `child` exits (immediately if it already has). Never rejects; a spawn error (e.g. ENOENT)
 * resolves as `{ code: -1, signal: null }`.
 */
export async function waitForExit(child: ChildProcess): Promise<ExitInfo> {
  if (hasExited(child)) return { code: child.exitCode, signal: child.signalCode };
  return new Promise<ExitInfo>((resolve) => {
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      child.off('error', onError);
      resolve({ code, signal });
    };
    const onError = (): void => {
      if (child.pid === undefined) {
        child.off('exit', onExit);
        resolve({ code: -1, signal: null });
      }
    };
    child.once('exit', onExit);
    child.on('error', onError);
  });
}

/**
 * Stops a child process: sends `signal` (default SIGTERM), waits up to `timeoutMs` (default 10 000 ms) for it
 * to exit, then sends SIGKILL and waits for the exit. Resolves at once if it already exited. Never rejects.
 * @returns how it ended; `forced` is true when this call had to send SIGKILL.
 */
export async function stopChildProcess(
  child: ChildProcess,
  opts: { signal?: NodeJS.Signals; timeoutMs?: number } = {},
): Promise<ExitInfo & { forced: boolean }> {
  if (hasExited(child) || child.pid === undefined) return { ...(await waitForExit(child)), forced: false };
  const exited = waitForExit(child);
  child.kill(opts.signal ?? 'SIGTERM');
  const timeout = new AbortController();
  const timer = sleep(opts.timeoutMs ?? 10_000, 'timeout' as const, { signal: timeout.signal }).catch(
    () => 'cancelled' as const,
  );
  const first = await Promise.race([exited, timer]);
  timeout.abort();
  if (first !== 'timeout' && first !== 'cancelled') return { ...first, forced: false };
  child.kill('SIGKILL');
  return { ...(await exited), forced: true };
}

/** Calls `onLine` for each line the child writes to stdout or stderr (both must be pipes). */
export function pipeLines(child: ChildProcess, onLine: (line: string, stream: 'stdout' | 'stderr') => void): void {
  for (const stream of ['stdout', 'stderr'] as const) {
    const readable = child[stream];
    if (readable === null) continue;
    createInterface({ input: readable, crlfDelay: Infinity }).on('line', (line) => onLine(line, stream));
  }
}

/**
 * Whether something accepts TCP connections on `host:port` (timeout `timeoutMs`, default 500 ms).
 * Never rejects.
 */
export async function isPortOpen(port: number, host = '127.0.0.1', timeoutMs = 500): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = net.connect({ port, host });
    const done = (open: boolean): void => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/** CLI spelling (`--search-attribute Name=Keyword`) of the SDK's search attribute types. */
const CLI_SEARCH_ATTRIBUTE_TYPES: Record<SearchAttributeType, string> = {
  TEXT: 'Text',
  KEYWORD: 'Keyword',
  INT: 'Int',
  DOUBLE: 'Double',
  BOOL: 'Bool',
  DATETIME: 'Datetime',
  KEYWORD_LIST: 'KeywordList',
};

/** A search attribute to register at dev-server start. */
export interface SearchAttributeSpec {
  name: string;
  type: SearchAttributeType;
}

/** This project's search attributes (OrderId, OrderStatus: Keyword), from the workflow contract. */
export const PROJECT_SEARCH_ATTRIBUTES: readonly SearchAttributeSpec[] = Object.values(SEARCH_ATTRIBUTES).map(
  (key) => ({ name: key.name, type: key.type }),
);

/** Options of {@link startDevServer}. */
export interface DevServerOptions {
  /** CLI binary from {@link ensureTemporalCli}; undefined lets the Temporal SDK download one (needs internet). */
  cliPath: string | undefined;
  /** SQLite file that persists workflows across restarts; its folder is created if missing. */
  dbFilename: string;
  /** gRPC frontend port. Default 7233. */
  port?: number;
  /** Web UI port. Default 8233. */
  uiPort?: number;
  /** Namespace registered at start. Default `default` (always registered). */
  namespace?: string;
  /** Address the frontend and the UI bind to. Default 127.0.0.1. */
  ip?: string;
  /** Search attributes to register. Default {@link PROJECT_SEARCH_ATTRIBUTES}. */
  searchAttributes?: readonly SearchAttributeSpec[];
  /** Receives the server's output lines. Default: stderr. */
  log?: LogFn;
  /** How long to wait for the frontend, ms. Default 60 000. */
  readyTimeoutMs?: number;
}

/** A running dev server. */
export interface DevServer {
  /** `host:port` of the gRPC frontend, e.g. `127.0.0.1:7233` (the value of TEMPORAL_ADDRESS). */
  address: string;
  /** Web UI, e.g. `http://127.0.0.1:8233` (the value of TEMPORAL_UI_URL). */
  uiUrl: string;
  /** The `temporal server start-dev` process; undefined when the SDK runs a downloaded server. */
  process: ChildProcess | undefined;
  /** Stops the server: SIGTERM, wait, SIGKILL after 10 s. Idempotent; never rejects. */
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev --db-filename <file> --port <7233> --ui-port <8233> --ip 127.0.0.1
 * --namespace default --search-attribute OrderId=Keyword --search-attribute OrderStatus=Keyword --log-level warn`
 * in its own process group (so a terminal Ctrl-C reaches only the owner, which then stops it in order), and
 * waits until the frontend accepts a gRPC connection, the namespace is registered and the search attributes
 * are listed. A safety net sends SIGTERM to the server if this Node process exits without stopping it.
 *
 * Without `cliPath`, the server is `TestWorkflowEnvironment.createLocal` with a CLI the SDK downloads.
 * @throws Error when a port is already in use, when the server exits before it is ready (with its last output
 *   lines), or when it is not ready within `readyTimeoutMs` (the process is stopped first).
 */
export async function startDevServer(opts: DevServerOptions): Promise<DevServer> {
  const port = opts.port ?? 7233;
  const uiPort = opts.uiPort ?? 8233;
  const ip = opts.ip ?? '127.0.0.1';
  const namespace = opts.namespace ?? 'default';
  const searchAttributes = opts.searchAttributes ?? PROJECT_SEARCH_ATTRIBUTES;
  const log = opts.log ?? logToStderr;
  const probeHost = ip === '0.0.0.0' || ip === '::' ? '127.0.0.1' : ip;
  const address = `${probeHost}:${port}`;
  const uiUrl = `http://${probeHost}:${uiPort}`;

  for (const [what, p] of [
    ['gRPC', port],
    ['UI', uiPort],
  ] as const) {
    if (await isPortOpen(p, probeHost)) {
      throw new Error(
        `Cannot start the Temporal dev server: ${what} port ${probeHost}:${p} is already in use ` +
          '(another dev server? stop it, choose other ports, or set TEMPORAL_ADDRESS to use it).',
      );
    }
  }
  await mkdir(path.dirname(path.resolve(opts.dbFilename)), { recursive: true });

  if (opts.cliPath === undefined) {
    return startSdkDevServer({ ...opts, port, uiPort, ip, namespace, searchAttributes, log, address, uiUrl });
  }

  const args = [
    'server',
    'start-dev',
    '--db-filename',
    opts.dbFilename,
    '--port',
    String(port),
    '--ui-port',
    String(uiPort),
    '--ip',
    ip,
    '--namespace',
    namespace,
    ...searchAttributes.flatMap((sa) => ['--search-attribute', `${sa.name}=${CLI_SEARCH_ATTRIBUTE_TYPES[sa.type]}`]),
    '--log-level',
    'warn',
  ];
  const child = spawn(opts.cliPath, args, {
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: process.platform !== 'win32',
  });
  const tail: string[] = [];
  let stopRequested = false;
  pipeLines(child, (line) => {
    tail.push(line);
    if (tail.length > 40) tail.shift();
    // While stopping, the server's internal workers log connection errors to themselves: not news.
    if (!stopRequested) log(line);
  });
  const safetyNet = (): void => {
    if (!hasExited(child)) child.kill('SIGTERM');
  };
  process.once('exit', safetyNet);
  const exited = waitForExit(child).then((exit) => {
    process.off('exit', safetyNet);
    return exit;
  });

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopRequested = true;
    stopping ??= stopChildProcess(child, { timeoutMs: 10_000 }).then(() => undefined);
    return stopping;
  };

  try {
    await waitForFrontend({
      address,
      namespace,
      searchAttributes: searchAttributes.map((sa) => sa.name),
      timeoutMs: opts.readyTimeoutMs ?? 60_000,
      exited,
      describeFailure: () => tail.join('\n'),
    });
  } catch (error) {
    await stop();
    throw error;
  }
  return { address, uiUrl, process: child, stop };
}

async function startSdkDevServer(
  o: Required<Omit<DevServerOptions, 'cliPath' | 'readyTimeoutMs'>> & { address: string; uiUrl: string },
): Promise<DevServer> {
  o.log(`Starting a Temporal dev server downloaded by the Temporal SDK (needs internet)…`);
  // @temporalio/testing is a devDependency: load it only on this path.
  const { TestWorkflowEnvironment } = await import('@temporalio/testing');
  const { defineSearchAttributeKey } = await import('@temporalio/common');
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'cached-download' },
      dbFilename: o.dbFilename,
      ip: o.ip,
      port: o.port,
      ui: true,
      uiPort: o.uiPort,
      namespace: o.namespace,
      searchAttributes: o.searchAttributes.map((sa) => defineSearchAttributeKey(sa.name, sa.type)),
      log: { format: 'pretty', level: 'warn' },
    },
  });
  let stopping: Promise<void> | undefined;
  return {
    address: o.address,
    uiUrl: o.uiUrl,
    process: undefined,
    stop: () => {
      stopping ??= env
        .teardown()
        .catch((error: unknown) => o.log(`Temporal dev server teardown failed: ${String(error)}`));
      return stopping;
    },
  };
}

/**
 * Waits until the Temporal frontend at `address` accepts a gRPC connection, knows `namespace` and lists every
 * name in `searchAttributes` (retrying every 250 ms with a 1 s connect timeout).
 * @throws Error when `exited` resolves first (the server died) or after `timeoutMs`.
 */
export async function waitForFrontend(opts: {
  address: string;
  namespace?: string;
  searchAttributes?: readonly string[];
  timeoutMs: number;
  exited?: Promise<ExitInfo>;
  describeFailure?: () => string;
}): Promise<void> {
  const namespace = opts.namespace ?? 'default';
  const deadline = Date.now() + opts.timeoutMs;
  let exit: ExitInfo | undefined;
  void opts.exited?.then((e) => {
    exit = e;
  });
  let lastError = 'no attempt yet';
  for (;;) {
    if (exit !== undefined) {
      const details = opts.describeFailure?.() ?? '';
      throw new Error(
        `The Temporal dev server exited with ${describeExit(exit)} before it was ready.${details ? `\n${details}` : ''}`,
      );
    }
    if (Date.now() > deadline) {
      throw new Error(`Temporal at ${opts.address} was not ready within ${opts.timeoutMs} ms: ${lastError}`);
    }
    let connection: Connection | undefined;
    try {
      connection = await Connection.connect({ address: opts.address, connectTimeout: 1000 });
      const conn = connection;
      await conn.withDeadline(Date.now() + 2000, async () => {
        await conn.workflowService.describeNamespace({ namespace });
        if (opts.searchAttributes?.length) {
          const listed = await conn.operatorService.listSearchAttributes({ namespace });
          const known = new Set(Object.keys(listed.customAttributes ?? {}));
          const missing = opts.searchAttributes.filter((name) => !known.has(name));
          if (missing.length > 0) throw new Error(`search attributes not registered yet: ${missing.join(', ')}`);
        }
      });
      return;
    } catch (error) {
      lastError = error instanceof Error ? error.message : String(error);
    } finally {
      await connection?.close().catch(() => undefined);
    }
    await sleep(250);
  }
}
