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
 * waits until its frontend answers (`npm start`, `npm run temporal`, the bench; tests use
 * `TestWorkflowEnvironment.createLocal` with {@link temporalServerExecutable}). Process handling is in
 * ./processes.ts.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import type { EphemeralServerExecutable } from '@temporalio/testing';
import { execa } from 'execa';
import { ensureSearchAttributes } from '../../src/worker/order-worker.js';
import { SEARCH_ATTRIBUTES } from '../../workflows/order-fulfilment.contract.js';
import { repoRoot } from './env.js';
import { ensureGoTool, findOnPath, isExecutableFile, type GoToolSpec } from './go-tools.js';
import { Child, portsInUse, pollUntil, type LogFn } from './processes.js';

/** The CLI version this project pins: the newest that builds from the Go module proxy (later ones need a module the proxy does not serve). */
export const TEMPORAL_CLI_VERSION = '1.5.1';

/** Go package and version-stamping flag of the CLI build. */
const CLI_GO_PACKAGE = 'github.com/temporalio/cli/cmd/temporal';
const CLI_VERSION_LDFLAG = `-X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION}`;

const EXE_SUFFIX = process.platform === 'win32' ? '.exe' : '';

const logToStderr: LogFn = (line) => {
  process.stderr.write(`${line}\n`);
};

/** Folder the project builds the CLI into: `<repo>/.tools/temporal-<version>` (gitignored). */
export function localCliDir(): string {
  return path.join(repoRoot(), '.tools', `temporal-${TEMPORAL_CLI_VERSION}`);
}

/** Path of the project-built CLI binary, whether or not it exists yet. */
export function localCliPath(): string {
  return path.join(localCliDir(), `temporal${EXE_SUFFIX}`);
}

/**
 * Runs `<cliPath> --version` (15 s timeout).
 * @returns its first output line, e.g. `temporal version 1.5.1 (Server 1.29.1, UI 2.42.1)`, or undefined when
 *   the binary does not run.
 */
export async function temporalCliVersion(cliPath: string): Promise<string | undefined> {
  try {
    const { stdout } = await execa(cliPath, ['--version'], { timeout: 15_000 });
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
  child: Child | undefined;
  /** Stops the server: SIGTERM, wait, SIGKILL after 10 s. Idempotent; never rejects. */
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev --db-filename <file> --port <7233> --ui-port <8233> --ip 127.0.0.1
 * --namespace default --search-attribute OrderId=Keyword --search-attribute OrderStatus=Keyword --log-level warn`
 * in its own process group (so a terminal Ctrl-C reaches only the owner, which then stops it in order), and
 * waits until the frontend accepts a gRPC connection and the namespace is registered; then registers the search
 * attributes a database file from an earlier version lacks, and waits until they are usable. A safety net sends SIGTERM to the server if this Node process exits without stopping it.
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

  const busy = await portsInUse([port, uiPort], probeHost);
  if (busy.length > 0) {
    throw new Error(
      `Cannot start the Temporal dev server: ${busy.map((p) => `${probeHost}:${p}`).join(', ')} already in use ` +
        '(another dev server? stop it, choose other ports, or set TEMPORAL_ADDRESS to use it).',
    );
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
  const tail: string[] = [];
  let stopRequested = false;
  const child = new Child('temporal', opts.cliPath, args, {
    onLine: (line) => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      // While stopping, the server's internal workers log connection errors to themselves: not news.
      if (!stopRequested) log(line);
    },
  });
  const stop = async (): Promise<void> => {
    stopRequested = true;
    await child.stop();
  };

  try {
    const timeoutMs = opts.readyTimeoutMs ?? 60_000;
    await waitForFrontend({ address, namespace, timeoutMs, child });
    // `--search-attribute` registers attributes when the database file is created; one an upgrade added since (a
    // .data/temporal/dev.db from an earlier version) is added here, as the worker would.
    const connection = await Connection.connect({ address, connectTimeout: 2000 });
    try {
      const added = await ensureSearchAttributes(connection, namespace, { attributes: searchAttributes, timeoutMs });
      if (added.length > 0) log(`registered search attributes new to ${opts.dbFilename}: ${added.join(', ')}`);
    } finally {
      await connection.close().catch(() => undefined);
    }
  } catch (error) {
    await stop();
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${tail.join('\n')}`.trimEnd());
  }
  return { address, uiUrl, child, stop };
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
    child: undefined,
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
 * @throws Error when `child` (the server) exits first, or after `timeoutMs`.
 */
export async function waitForFrontend(opts: {
  address: string;
  namespace?: string;
  searchAttributes?: readonly string[];
  timeoutMs: number;
  child?: Child;
}): Promise<void> {
  const namespace = opts.namespace ?? 'default';
  await pollUntil(
    `Temporal at ${opts.address} to serve namespace ${namespace}`,
    async () => {
      const connection = await Connection.connect({ address: opts.address, connectTimeout: 1000 });
      try {
        await connection.withDeadline(Date.now() + 2000, async () => {
          await connection.workflowService.describeNamespace({ namespace });
          if (opts.searchAttributes?.length) {
            const listed = await connection.operatorService.listSearchAttributes({ namespace });
            const known = new Set(Object.keys(listed.customAttributes ?? {}));
            const missing = opts.searchAttributes.filter((name) => !known.has(name));
            if (missing.length > 0) throw new Error(`search attributes not registered yet: ${missing.join(', ')}`);
          }
        });
        return true;
      } finally {
        await connection.close().catch(() => undefined);
      }
    },
    { timeoutMs: opts.timeoutMs, child: opts.child },
  );
}
