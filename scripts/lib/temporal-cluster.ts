/**
 * A real Temporal cluster on this machine, without Docker: Temporal Server 1.29.1 (the version the pinned CLI
 * 1.5.1 embeds) with PostgreSQL persistence and SQL visibility, its schema set up by the server's own sql tool,
 * the namespace and this project's search attributes created, and the Web UI server 2.42.1 in front of it.
 * Used by `npm run start:cluster` (scripts/stack.ts --cluster), CI and scripts/scale-out.ts.
 *
 * Binaries (scripts/lib/go-tools.ts): `TEMPORAL_SERVER_PATH`, `TEMPORAL_SQL_TOOL_PATH`,
 * `TEMPORAL_UI_SERVER_PATH`, else `.tools/temporal-server-1.29.1/{server,sql}` and
 * `.tools/temporal-ui-server-2.42.1/server`, else built with `go install` from the Go module proxy (~10 min
 * cold on 2 cores for the server, seconds for the sql tool and ~1-3 min for the UI server after that).
 *
 * Configuration: the server module's own `config/docker.yaml` (the template the official Docker image renders
 * from environment variables: DB, POSTGRES_SEEDS, DB_PORT, DBNAME, VISIBILITY_DBNAME, FRONTEND_GRPC_PORT, ...)
 * copied next to the server binary at build time, rendered by the server at start with the variables below;
 * the dynamic config is scripts/temporal-cluster/dynamicconfig.yaml. The docker-compose `cluster` profile sets
 * the same variables, so both run the same configuration. Generated files go to `<dataDir>` (under `.data/`).
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import { execa } from 'execa';
import pg from 'pg';
import {
  ensureSearchAttributes,
  projectSearchAttributes,
  type SearchAttributeDefinition,
} from '../../src/worker/order-worker.js';
import { errorMessage, repoRoot } from './env.js';
import { ensureGoTool, goModuleDir, type GoToolSpec } from './go-tools.js';
import { Child, describeExit, pollUntil, portsInUse, waitForHttp, type ExitInfo, type LogFn } from './processes.js';

/** Temporal Server version of the cluster profile: the one the pinned CLI (1.5.1) embeds. */
export const TEMPORAL_SERVER_VERSION = '1.29.1';
/** Web UI server version: the one the pinned CLI (1.5.1) embeds. */
export const TEMPORAL_UI_SERVER_VERSION = '2.42.1';

/** `go.temporal.io/server/cmd/server`, into `.tools/temporal-server-<v>/server`. */
export const TEMPORAL_SERVER_TOOL: GoToolSpec = {
  label: 'Temporal Server',
  folder: `temporal-server-${TEMPORAL_SERVER_VERSION}`,
  binary: 'server',
  goPackage: 'go.temporal.io/server/cmd/server',
  version: TEMPORAL_SERVER_VERSION,
  envVar: 'TEMPORAL_SERVER_PATH',
};

/** The server's schema tool `go.temporal.io/server/cmd/tools/sql`, into `.tools/temporal-server-<v>/sql`. */
export const TEMPORAL_SQL_TOOL: GoToolSpec = {
  label: 'Temporal sql tool',
  folder: `temporal-server-${TEMPORAL_SERVER_VERSION}`,
  binary: 'sql',
  goPackage: 'go.temporal.io/server/cmd/tools/sql',
  version: TEMPORAL_SERVER_VERSION,
  envVar: 'TEMPORAL_SQL_TOOL_PATH',
};

/** The Web UI server `github.com/temporalio/ui-server/v2/cmd/server`, into `.tools/temporal-ui-server-<v>/server`. */
export const TEMPORAL_UI_SERVER_TOOL: GoToolSpec = {
  label: 'Temporal UI server',
  folder: `temporal-ui-server-${TEMPORAL_UI_SERVER_VERSION}`,
  binary: 'server',
  goPackage: 'github.com/temporalio/ui-server/v2/cmd/server',
  version: TEMPORAL_UI_SERVER_VERSION,
  envVar: 'TEMPORAL_UI_SERVER_PATH',
};

/** Absolute paths of the cluster's programs and of the server's config template. */
export interface ClusterBinaries {
  server: string;
  sqlTool: string;
  uiServer: string;
  /** The server module's `config/docker.yaml` (an environment-variable template). */
  configTemplate: string;
}

/**
 * Finds or builds the server, its sql tool and the UI server (in that order; one build at a time on 2 cores),
 * and finds the server's config template: `TEMPORAL_SERVER_CONFIG_TEMPLATE`, else `config/docker.yaml` next to
 * the server binary, else copied there from the server module in Go's module cache.
 * @throws Error when a binary is missing and cannot be built (see {@link ensureGoTool}) or no template is found.
 */
export async function ensureClusterBinaries(log: LogFn): Promise<ClusterBinaries> {
  const server = await ensureGoTool(TEMPORAL_SERVER_TOOL, log);
  const sqlTool = await ensureGoTool(TEMPORAL_SQL_TOOL, log);
  const uiServer = await ensureGoTool(TEMPORAL_UI_SERVER_TOOL, log);
  return { server, sqlTool, uiServer, configTemplate: await ensureConfigTemplate(server) };
}

async function ensureConfigTemplate(server: string): Promise<string> {
  const fromEnv = process.env.TEMPORAL_SERVER_CONFIG_TEMPLATE?.trim();
  if (fromEnv) {
    if (!existsSync(fromEnv)) throw new Error(`TEMPORAL_SERVER_CONFIG_TEMPLATE=${fromEnv} does not exist`);
    return path.resolve(fromEnv);
  }
  const beside = path.join(path.dirname(server), 'config', 'docker.yaml');
  if (existsSync(beside)) return beside;
  let moduleDir: string;
  try {
    moduleDir = await goModuleDir('go.temporal.io/server', TEMPORAL_SERVER_VERSION);
  } catch (error) {
    throw new Error(
      `No Temporal Server config template (${beside}) and none in Go's module cache (${errorMessage(error)}): ` +
        `set TEMPORAL_SERVER_CONFIG_TEMPLATE to config/docker.yaml of go.temporal.io/server v${TEMPORAL_SERVER_VERSION}`,
    );
  }
  await mkdir(path.dirname(beside), { recursive: true });
  await copyFile(path.join(moduleDir, 'config', 'docker.yaml'), beside);
  return beside;
}

// ---------------------------------------------------------------------------------------------------------
// PostgreSQL: where the cluster keeps its state

/** One PostgreSQL database as the Temporal Server and its sql tool address it. */
export interface PostgresDatabase {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

/**
 * Parses `postgresql://user:password@host:port/database`.
 * @throws Error when it is not a postgres URL or names no database.
 */
export function postgresDatabaseFromUrl(url: string): PostgresDatabase {
  const u = new URL(url);
  if (!['postgres:', 'postgresql:'].includes(u.protocol)) throw new Error(`not a PostgreSQL URL: ${u.protocol}//…`);
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (!database) throw new Error(`the PostgreSQL URL names no database: ${u.host}`);
  return {
    host: u.hostname || '127.0.0.1',
    port: Number(u.port || 5432),
    user: decodeURIComponent(u.username || 'postgres'),
    password: decodeURIComponent(u.password),
    database,
  };
}

/** The same server and credentials, another database name. */
export function withDatabase(db: PostgresDatabase, database: string): PostgresDatabase {
  return { ...db, database };
}

/** `postgresql://user:***@host:port/database` (password redacted). */
export function describeDatabase(db: PostgresDatabase): string {
  return `postgresql://${encodeURIComponent(db.user)}${db.password ? ':***' : ''}@${db.host}:${db.port}/${db.database}`;
}

/**
 * Persistence and visibility databases of the cluster profile:
 * - `TEMPORAL_PERSISTENCE_URL` when set (e.g. `postgresql://temporal:pw@db:5432/temporal`), else database
 *   `temporal` on the server of `fallbackUrl` (the stack's own PostgreSQL: the embedded one by default);
 * - `TEMPORAL_VISIBILITY_URL` when set, else `<persistence database>_visibility` on the same server.
 * @throws Error when a URL is malformed.
 */
export function clusterDatabasesFromEnv(fallbackUrl: string): {
  persistence: PostgresDatabase;
  visibility: PostgresDatabase;
} {
  const persistenceUrl = process.env.TEMPORAL_PERSISTENCE_URL?.trim();
  const persistence = persistenceUrl
    ? postgresDatabaseFromUrl(persistenceUrl)
    : withDatabase(postgresDatabaseFromUrl(fallbackUrl), 'temporal');
  const visibilityUrl = process.env.TEMPORAL_VISIBILITY_URL?.trim();
  const visibility = visibilityUrl
    ? postgresDatabaseFromUrl(visibilityUrl)
    : withDatabase(persistence, `${persistence.database}_visibility`);
  return { persistence, visibility };
}

/** Schemas embedded in the sql tool (`--schema-name`), from the server module's `schema/postgresql/v12/`. */
const SCHEMA_NAMES = { persistence: 'postgresql/v12/temporal', visibility: 'postgresql/v12/visibility' } as const;

/**
 * Sets up (or upgrades) the Temporal schema of one database with the server's sql tool, the way Temporal's
 * docs and admin-tools image do; every step is idempotent, so it runs at every start:
 * `create-database` (an existing one is kept), `setup-schema -v 0.0` (version tables; skipped when the schema
 * is newer), `update-schema --schema-name postgresql/v12/<temporal|visibility>` (applies the missing versions).
 * @throws Error with the tool's last output lines when a step fails (e.g. PostgreSQL unreachable, bad password).
 */
export async function setupTemporalSchema(opts: {
  sqlTool: string;
  db: PostgresDatabase;
  kind: keyof typeof SCHEMA_NAMES;
  log: LogFn;
}): Promise<void> {
  const common = [
    '--plugin',
    'postgres12',
    '--ep',
    opts.db.host,
    '--port',
    String(opts.db.port),
    '--user',
    opts.db.user,
    '--db',
    opts.db.database,
  ];
  const steps: string[][] = [
    ['create-database'],
    ['setup-schema', '-v', '0.0'],
    ['update-schema', '--schema-name', SCHEMA_NAMES[opts.kind]],
  ];
  for (const step of steps) {
    const args = [...common, ...step];
    // The password goes through the environment (SQL_PASSWORD), not the command line.
    const result = await execa(opts.sqlTool, args, {
      env: { SQL_PASSWORD: opts.db.password },
      stdin: 'ignore',
      all: true,
      lines: true,
      reject: false,
    });
    if (result.failed) {
      throw new Error(
        `Temporal schema step \`sql ${step.join(' ')}\` on ${describeDatabase(opts.db)} failed ` +
          `(${describeExit({ code: result.exitCode, signal: result.signal })}):\n${result.all.slice(-20).join('\n')}`,
      );
    }
  }
  opts.log(`schema ${SCHEMA_NAMES[opts.kind]} is up to date in ${describeDatabase(opts.db)}`);
}

/**
 * Drops the databases (`DROP DATABASE IF EXISTS ... WITH (FORCE)`), for a cluster that must start from an
 * empty state (CI). Connects to the `postgres` database of each server.
 */
export async function dropDatabases(dbs: readonly PostgresDatabase[]): Promise<void> {
  for (const db of dbs) {
    const client = new pg.Client({ ...withDatabase(db, 'postgres'), password: db.password || undefined });
    await client.connect();
    try {
      await client.query(`DROP DATABASE IF EXISTS ${client.escapeIdentifier(db.database)} WITH (FORCE)`);
    } finally {
      await client.end();
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// The cluster

/**
 * Ports of one single-process cluster, as offsets from the frontend's gRPC port `p` (so p = 7233 gives the
 * upstream defaults): frontend HTTP p+10, history p+1, matching p+2, worker p+6, and their membership (ringpop)
 * ports p-300, p-299, p-298, p-294.
 */
export function clusterPorts(frontend: number): Record<string, number> {
  return {
    FRONTEND_GRPC_PORT: frontend,
    FRONTEND_HTTP_PORT: frontend + 10,
    HISTORY_GRPC_PORT: frontend + 1,
    MATCHING_GRPC_PORT: frontend + 2,
    WORKER_GRPC_PORT: frontend + 6,
    FRONTEND_MEMBERSHIP_PORT: frontend - 300,
    HISTORY_MEMBERSHIP_PORT: frontend - 299,
    MATCHING_MEMBERSHIP_PORT: frontend - 298,
    WORKER_MEMBERSHIP_PORT: frontend - 294,
  };
}

/** Options of {@link startTemporalCluster}. */
export interface TemporalClusterOptions {
  binaries: ClusterBinaries;
  persistence: PostgresDatabase;
  visibility: PostgresDatabase;
  /** Folder for the generated configuration (e.g. `.data/temporal-cluster`); created if missing. */
  dataDir: string;
  /** Frontend gRPC port (the others follow, see {@link clusterPorts}). Default 7233. */
  port?: number;
  /** Web UI port. Default 8233. */
  uiPort?: number;
  /** Namespace to create if missing. Default `default`. */
  namespace?: string;
  /** Retention of closed workflows in a namespace this creates, days. Default 3. */
  retentionDays?: number;
  /** Search attributes to register. Default: every key of the workflow contract's SEARCH_ATTRIBUTES. */
  searchAttributes?: readonly SearchAttributeDefinition[];
  /** History shards; fixed when the persistence database is first used. Default 4 (local); see the README. */
  numHistoryShards?: number;
  /** Server log level (`debug` … `error`). Default `warn`. */
  logLevel?: string;
  /** Receives the server's and the UI server's output lines, and progress lines. */
  log: LogFn;
  /** Waits for the frontend, the namespace and the UI, ms each. Default 120 000. */
  readyTimeoutMs?: number;
}

/** A running cluster. */
export interface TemporalCluster {
  /** `host:port` of the frontend (the value of TEMPORAL_ADDRESS). */
  address: string;
  /** Web UI, e.g. `http://127.0.0.1:8233` (the value of TEMPORAL_UI_URL). */
  uiUrl: string;
  /** Persistence and visibility stores the frontend reports, e.g. `postgres12`. */
  persistenceStore: string;
  visibilityStore: string;
  /** The server version the frontend reports, e.g. `1.29.1`. */
  serverVersion: string;
  server: Child;
  ui: Child;
  /** Resolves when either process exits (with which one), so a supervisor can react. */
  exited: Promise<{ which: 'server' | 'ui'; exit: ExitInfo }>;
  /** Stops the UI, then the server (SIGTERM, SIGKILL after 20 s). Idempotent; never rejects. */
  stop(): Promise<void>;
}

/**
 * Starts the cluster and returns once it is usable:
 * 1. checks its ports are free; 2. sets up both schemas ({@link setupTemporalSchema}); 3. starts
 * `server --root <dataDir> --config config --env docker --allow-no-auth start` with the config template and
 * waits for the frontend; 4. registers the namespace if missing and waits until the frontend serves it;
 * 5. registers the search attributes and waits until they are usable (ensureSearchAttributes); 6. starts the UI
 * server (`<dataDir>/ui/config/development.yaml`) and waits for it to answer.
 * Both processes run in their own process groups (a terminal Ctrl-C reaches only the caller, which stops them
 * in order); a safety net SIGTERMs them if this Node process exits first.
 * @throws Error when a port is in use, a schema step fails, a process exits early (with its last output
 *   lines), or a step is not ready within `readyTimeoutMs`; whatever started is stopped first.
 */
export async function startTemporalCluster(opts: TemporalClusterOptions): Promise<TemporalCluster> {
  const port = opts.port ?? 7233;
  const uiPort = opts.uiPort ?? 8233;
  const namespace = opts.namespace ?? 'default';
  const timeoutMs = opts.readyTimeoutMs ?? 120_000;
  const log = opts.log;
  const address = `127.0.0.1:${port}`;
  const uiUrl = `http://127.0.0.1:${uiPort}`;
  const ports = clusterPorts(port);

  const named = [...Object.entries(ports), ['TEMPORAL_UI_PORT', uiPort] as const];
  const inUse = new Set(await portsInUse(named.map(([, p]) => p)));
  const busy = named.filter(([, p]) => inUse.has(p)).map(([name, p]) => `127.0.0.1:${p} (${name})`);
  if (busy.length > 0) {
    throw new Error(
      `Cannot start the Temporal cluster, ports in use: ${busy.join(', ')} (another Temporal server? choose ` +
        'another TEMPORAL_PORT / TEMPORAL_UI_PORT, or set TEMPORAL_ADDRESS to use it)',
    );
  }

  await setupTemporalSchema({ sqlTool: opts.binaries.sqlTool, db: opts.persistence, kind: 'persistence', log });
  await setupTemporalSchema({ sqlTool: opts.binaries.sqlTool, db: opts.visibility, kind: 'visibility', log });

  const configDir = path.join(opts.dataDir, 'config');
  await mkdir(configDir, { recursive: true });
  await copyFile(opts.binaries.configTemplate, path.join(configDir, 'docker.yaml'));
  const serverEnv: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TZ: 'UTC',
    LOG_LEVEL: opts.logLevel ?? 'warn',
    NUM_HISTORY_SHARDS: String(opts.numHistoryShards ?? 4),
    DB: 'postgres12',
    POSTGRES_SEEDS: opts.persistence.host,
    DB_PORT: String(opts.persistence.port),
    POSTGRES_USER: opts.persistence.user,
    POSTGRES_PWD: opts.persistence.password,
    DBNAME: opts.persistence.database,
    VISIBILITY_POSTGRES_SEEDS: opts.visibility.host,
    VISIBILITY_DB_PORT: String(opts.visibility.port),
    VISIBILITY_POSTGRES_USER: opts.visibility.user,
    VISIBILITY_POSTGRES_PWD: opts.visibility.password,
    VISIBILITY_DBNAME: opts.visibility.database,
    BIND_ON_IP: '127.0.0.1',
    TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
    DYNAMIC_CONFIG_FILE_PATH: path.join(repoRoot(), 'scripts', 'temporal-cluster', 'dynamicconfig.yaml'),
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
  };

  const server = spawnLogged(
    opts.binaries.server,
    ['--root', opts.dataDir, '--config', 'config', '--env', 'docker', '--allow-no-auth', 'start'],
    serverEnv,
    log,
    20_000,
  );
  let ui: ReturnType<typeof spawnLogged> | undefined;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (ui) await ui.stop();
      await server.stop();
    })();
    return stopping;
  };

  try {
    const connection = await waitForConnection(address, timeoutMs, server.child);
    let info: { persistenceStore: string; visibilityStore: string; serverVersion: string };
    try {
      const cluster = await connection.workflowService.getClusterInfo({});
      info = {
        persistenceStore: cluster.persistenceStore ?? '?',
        visibilityStore: cluster.visibilityStore ?? '?',
        serverVersion: cluster.serverVersion ?? '?',
      };
      await ensureNamespace(connection, namespace, opts.retentionDays ?? 3, timeoutMs, log);
      const added = await ensureSearchAttributes(connection, namespace, {
        attributes: opts.searchAttributes ?? projectSearchAttributes(),
        timeoutMs,
      });
      if (added.length > 0) log(`registered search attributes ${added.join(', ')} in namespace ${namespace}`);
    } finally {
      await connection.close().catch(() => undefined);
    }

    const uiDir = path.join(opts.dataDir, 'ui');
    await mkdir(path.join(uiDir, 'config'), { recursive: true });
    await writeFile(
      path.join(uiDir, 'config', 'development.yaml'),
      [
        '# Generated by scripts/lib/temporal-cluster.ts at every start; edit that file instead.',
        `temporalGrpcAddress: ${address}`,
        'host: 127.0.0.1',
        `port: ${uiPort}`,
        'enableUi: true',
        `defaultNamespace: ${namespace}`,
        'refreshInterval: 1m',
        'notifyOnNewVersion: false',
        'hideLogs: true',
        'cors:',
        '  cookieInsecure: true',
        '  allowOrigins: []',
        '',
      ].join('\n'),
    );
    ui = spawnLogged(
      opts.binaries.uiServer,
      ['--root', uiDir, '--config', 'config', '--env', 'development', 'start'],
      { PATH: process.env.PATH, HOME: process.env.HOME },
      log,
      10_000,
    );
    await waitForHttp(`${uiUrl}/api/v1/namespaces/${encodeURIComponent(namespace)}`, {
      timeoutMs,
      child: ui.child,
    });

    const uiChild = ui.child;
    const exited = Promise.race([
      server.child.exited.then((exit) => ({ which: 'server' as const, exit })),
      uiChild.exited.then((exit) => ({ which: 'ui' as const, exit })),
    ]);
    return { address, uiUrl, ...info, server: server.child, ui: uiChild, exited, stop };
  } catch (error) {
    await stop();
    const tail = (
      await Promise.all(
        [server, ui]
          .filter((p) => p !== undefined)
          .filter((p) => p.exitedEarly)
          .map(async (p) => `\n${p.label} exited (${describeExit(await p.child.exited)}):\n${p.tail.join('\n')}`),
      )
    ).join('');
    throw new Error(`${errorMessage(error)}${tail}`);
  }
}

/** A child (own process group) with its output sent to `log` and its last 40 lines kept. */
function spawnLogged(command: string, args: string[], env: NodeJS.ProcessEnv, log: LogFn, stopTimeoutMs: number) {
  const label = path.basename(path.dirname(command)) + '/' + path.basename(command);
  const tail: string[] = [];
  let quiet = false;
  const child = new Child(label, command, args, {
    env,
    stopTimeoutMs,
    onLine: (line) => {
      tail.push(line);
      if (tail.length > 40) tail.shift();
      // While stopping, the server logs its own services losing each other: not news.
      if (!quiet) log(line);
    },
  });
  return {
    child,
    label,
    tail,
    /** Whether it exited before anybody stopped it. */
    get exitedEarly(): boolean {
      return !quiet && !child.running;
    },
    /** SIGTERM, SIGKILL after its stop timeout. */
    async stop(): Promise<void> {
      quiet = true;
      const exit = await child.stop();
      if (exit.forced) log(`${label} did not stop within ${stopTimeoutMs} ms and was killed`);
    },
  };
}

/** Connects to the frontend, retrying until `getSystemInfo` answers; fails early if the server exits. */
async function waitForConnection(address: string, timeoutMs: number, server: Child): Promise<Connection> {
  return pollUntil(
    `the Temporal frontend at ${address} to answer`,
    async () => {
      const connection = await Connection.connect({ address, connectTimeout: 1000 });
      try {
        await connection.withDeadline(Date.now() + 2000, () => connection.workflowService.getSystemInfo({}));
        return connection;
      } catch (error) {
        await connection.close().catch(() => undefined);
        throw error;
      }
    },
    { timeoutMs, child: server },
  );
}

/** gRPC status codes used here. */
const NOT_FOUND = 5;
const ALREADY_EXISTS = 6;

/**
 * Registers `namespace` (retention `retentionDays`) when `DescribeNamespace` does not find it, then waits until
 * the frontend serves it (a new namespace reaches the frontend's namespace cache within ~10 s; until then
 * calls on it answer NOT_FOUND).
 */
export async function ensureNamespace(
  connection: Connection,
  namespace: string,
  retentionDays: number,
  timeoutMs: number,
  log: LogFn,
): Promise<void> {
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch (error) {
    if ((error as { code?: number }).code !== NOT_FOUND) throw error;
    try {
      await connection.workflowService.registerNamespace({
        namespace,
        workflowExecutionRetentionPeriod: msToTs(`${retentionDays} days`),
      });
      log(`registered namespace ${namespace} (retention ${retentionDays} days)`);
    } catch (registerError) {
      if ((registerError as { code?: number }).code !== ALREADY_EXISTS) throw registerError;
    }
  }
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await connection.workflowService.countWorkflowExecutions({ namespace, query: '' });
      return;
    } catch (error) {
      if ((error as { code?: number }).code !== NOT_FOUND) throw error;
      if (Date.now() > deadline) throw new Error(`namespace ${namespace} was not served within ${timeoutMs} ms`);
    }
    await sleep(500);
  }
}
