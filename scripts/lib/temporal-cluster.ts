/**
 * A real Temporal cluster on this machine, without Docker: Temporal Server 1.29.1 (the version the pinned CLI
 * 1.5.1 embeds) with PostgreSQL persistence and SQL visibility, its schema set up by the server's own sql tool,
 * the namespace and this project's search attributes created, and the Web UI server 2.42.1 in front of it.
 * Used by `npm run start:cluster` and `npm run temporal:cluster` (scripts/stack.ts --cluster), CI and the scale-out run.
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
import { ensureSearchAttributes, projectSearchAttributes } from '../../src/worker/order-worker.js';
import { errorMessage, repoRoot } from './env.js';
import { ensureGoTool, goModuleDir, type GoToolSpec } from './go-tools.js';
import { pollUntil, waitForHttp, type LogFn } from './processes.js';

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
          `(${result.signal ?? `code ${result.exitCode}`}):\n${result.all.slice(-20).join('\n')}`,
      );
    }
  }
  opts.log(`schema ${SCHEMA_NAMES[opts.kind]} is up to date in ${describeDatabase(opts.db)}`);
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

/** Options of {@link prepareCluster}. */
export interface TemporalClusterOptions {
  binaries: ClusterBinaries;
  persistence: PostgresDatabase;
  visibility: PostgresDatabase;
  /** Folder for the generated configuration (e.g. `.data/temporal-cluster`); created if missing. */
  dataDir: string;
  /** Frontend gRPC port (the others follow, see {@link clusterPorts}). */
  port: number;
  uiPort: number;
  namespace: string;
  log: LogFn;
}

/** A command line of the cluster: the file, its arguments and its whole environment. */
export interface ClusterCommand {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

/**
 * Sets up both schemas ({@link setupTemporalSchema}) and writes the server's and the UI server's configuration:
 * the server module's `config/docker.yaml` template, rendered by the server from the variables of its command, and
 * `<dataDir>/ui/config/development.yaml`. Run the two commands, then {@link clusterReady}.
 * @throws Error when a schema step fails.
 */
export async function prepareCluster(
  opts: TemporalClusterOptions,
): Promise<{ server: ClusterCommand; ui: ClusterCommand }> {
  await setupTemporalSchema({
    sqlTool: opts.binaries.sqlTool,
    db: opts.persistence,
    kind: 'persistence',
    log: opts.log,
  });
  await setupTemporalSchema({ sqlTool: opts.binaries.sqlTool, db: opts.visibility, kind: 'visibility', log: opts.log });
  const configDir = path.join(opts.dataDir, 'config');
  const uiDir = path.join(opts.dataDir, 'ui');
  await mkdir(path.join(uiDir, 'config'), { recursive: true });
  await mkdir(configDir, { recursive: true });
  await copyFile(opts.binaries.configTemplate, path.join(configDir, 'docker.yaml'));
  const { persistence: p, visibility: v } = opts;
  await writeFile(
    path.join(uiDir, 'config', 'development.yaml'),
    `# Generated by scripts/lib/temporal-cluster.ts at every start.\ntemporalGrpcAddress: 127.0.0.1:${opts.port}\nhost: 127.0.0.1
port: ${opts.uiPort}\nenableUi: true\ndefaultNamespace: ${opts.namespace}\nrefreshInterval: 1m\nnotifyOnNewVersion: false
hideLogs: true\ncors:\n  cookieInsecure: true\n  allowOrigins: []\n`,
  );
  const base = { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC' };
  const server: NodeJS.ProcessEnv = {
    ...base,
    LOG_LEVEL: 'warn',
    NUM_HISTORY_SHARDS: '4',
    DB: 'postgres12',
    ...{
      POSTGRES_SEEDS: p.host,
      DB_PORT: String(p.port),
      POSTGRES_USER: p.user,
      POSTGRES_PWD: p.password,
      DBNAME: p.database,
    },
    ...{ VISIBILITY_POSTGRES_SEEDS: v.host, VISIBILITY_DB_PORT: String(v.port), VISIBILITY_POSTGRES_USER: v.user },
    ...{ VISIBILITY_POSTGRES_PWD: v.password, VISIBILITY_DBNAME: v.database },
    BIND_ON_IP: '127.0.0.1',
    TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
    DYNAMIC_CONFIG_FILE_PATH: path.join(repoRoot(), 'scripts', 'temporal-cluster', 'dynamicconfig.yaml'),
    ...Object.fromEntries(Object.entries(clusterPorts(opts.port)).map(([k, port]) => [k, String(port)])),
  };
  return {
    server: {
      file: opts.binaries.server,
      args: ['--root', opts.dataDir, '--config', 'config', '--env', 'docker', '--allow-no-auth', 'start'],
      env: server,
    },
    ui: {
      file: opts.binaries.uiServer,
      args: ['--root', uiDir, '--config', 'config', '--env', 'development', 'start'],
      env: base,
    },
  };
}

/**
 * Waits until the cluster's frontend answers, registers the namespace (retention 3 days) and this project's search
 * attributes when missing, and waits until the UI serves the namespace.
 * @returns what the frontend reports (persistence and visibility stores, e.g. `postgres12`, server version).
 * @throws Error when a step is not done within `timeoutMs` each.
 */
export async function clusterReady(opts: {
  address: string;
  uiUrl: string;
  namespace: string;
  timeoutMs: number;
  log: LogFn;
}): Promise<{ persistenceStore: string; visibilityStore: string; serverVersion: string }> {
  const connection = await pollUntil(
    `the Temporal frontend at ${opts.address}`,
    async () => {
      const c = await Connection.connect({ address: opts.address, connectTimeout: 1000 });
      return c
        .withDeadline(Date.now() + 2000, () => c.workflowService.getSystemInfo({}))
        .then(
          () => c,
          async (error: unknown) => {
            await c.close();
            throw error;
          },
        );
    },
    opts,
  );
  try {
    const info = await connection.workflowService.getClusterInfo({});
    await ensureNamespace(connection, opts.namespace, 3, opts.timeoutMs, opts.log);
    const added = await ensureSearchAttributes(connection, opts.namespace, {
      attributes: projectSearchAttributes(),
      timeoutMs: opts.timeoutMs,
    });
    if (added.length > 0) opts.log(`registered search attributes ${added.join(', ')} in namespace ${opts.namespace}`);
    await waitForHttp(`${opts.uiUrl}/api/v1/namespaces/${encodeURIComponent(opts.namespace)}`, opts);
    return {
      persistenceStore: info.persistenceStore ?? '?',
      visibilityStore: info.visibilityStore ?? '?',
      serverVersion: info.serverVersion ?? '?',
    };
  } finally {
    await connection.close();
  }
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
