/**
 * A real Temporal cluster on this machine, without Docker (`npm run start:cluster`, `npm run temporal:cluster`, CI,
 * the scale-out run): Temporal Server 1.29.1 (the version the pinned CLI 1.5.1 embeds) on PostgreSQL with SQL
 * visibility, its schema set up by the server's own sql tool, and the Web UI server 2.42.1 in front of it.
 * Binaries (scripts/lib/go-tools.ts): `TEMPORAL_SERVER_PATH`, `TEMPORAL_SQL_TOOL_PATH`, `TEMPORAL_UI_SERVER_PATH`,
 * else `.tools/temporal-server-1.29.1/{server,sql}` and `.tools/temporal-ui-server-2.42.1/server`, else built with
 * Go. Configuration: the server module's own `config/docker.yaml` (the template the official Docker image renders
 * from DB, POSTGRES_SEEDS, DBNAME, FRONTEND_GRPC_PORT, ...) with the variables below, and
 * scripts/temporal-cluster/dynamicconfig.yaml: the docker-compose `cluster` profile sets the same variables.
 */
import { existsSync } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import { execa } from 'execa';
import { ensureSearchAttributes, projectSearchAttributes } from '../../src/worker/order-worker.js';
import { repoRoot } from './env.js';
import { ensureGoTool, goModuleDir } from './go-tools.js';
import { waitForHttp, waitForTemporal, type LogFn } from './processes.js';

const SERVER = '1.29.1';
const UI = '2.42.1';
/** The cluster's Go programs (scripts/lib/go-tools.ts): label, variable, package, `.tools/` folder, version. */
const CLUSTER_TOOLS = [
  ['Temporal Server', 'TEMPORAL_SERVER_PATH', 'go.temporal.io/server/cmd/server', 'temporal-server', SERVER],
  ['Temporal sql tool', 'TEMPORAL_SQL_TOOL_PATH', 'go.temporal.io/server/cmd/tools/sql', 'temporal-server', SERVER],
  [
    'Temporal UI server',
    'TEMPORAL_UI_SERVER_PATH',
    'github.com/temporalio/ui-server/v2/cmd/server',
    'temporal-ui-server',
    UI,
  ],
] as const;

/** Absolute paths of the cluster's programs and of the server's config template. */
export interface ClusterBinaries {
  server: string;
  sqlTool: string;
  uiServer: string;
  /** The server module's `config/docker.yaml`, kept beside the server binary. */
  configTemplate: string;
}

/**
 * Finds or builds the server, its sql tool and the UI server (one build at a time), and the server's config
 * template (copied beside the binary from the server module in Go's module cache the first time).
 * @throws Error when a binary is missing and cannot be built, or the module cannot be read.
 */
export async function ensureClusterBinaries(log: LogFn): Promise<ClusterBinaries> {
  const found: string[] = [];
  for (const [label, envVar, goPackage, folder, version] of CLUSTER_TOOLS)
    found.push(await ensureGoTool({ label, envVar, goPackage, folder: `${folder}-${version}`, version }, log));
  const [server, sqlTool, uiServer] = found as [string, string, string];
  const configTemplate = path.join(path.dirname(server), 'config', 'docker.yaml');
  if (!existsSync(configTemplate)) {
    await mkdir(path.dirname(configTemplate), { recursive: true });
    await copyFile(
      path.join(await goModuleDir('go.temporal.io/server', SERVER), 'config', 'docker.yaml'),
      configTemplate,
    );
  }
  return { server, sqlTool, uiServer, configTemplate };
}

/** One PostgreSQL database as the Temporal Server and its sql tool address it. */
export interface PostgresDatabase {
  host: string;
  port: number;
  user: string;
  password: string;
  database: string;
}

function database(url: string, name?: string): PostgresDatabase {
  const u = new URL(url);
  const d = (s: string): string => decodeURIComponent(s);
  return {
    host: u.hostname,
    port: Number(u.port || 5432),
    user: d(u.username || 'postgres'),
    password: d(u.password),
    database: name ?? d(u.pathname.slice(1)),
  };
}

/**
 * The cluster's databases: `TEMPORAL_PERSISTENCE_URL`, else `temporal` on the server of `fallbackUrl` (the stack's
 * PostgreSQL); `TEMPORAL_VISIBILITY_URL`, else `<persistence database>_visibility` on the same server.
 */
export function clusterDatabasesFromEnv(fallbackUrl: string): {
  persistence: PostgresDatabase;
  visibility: PostgresDatabase;
} {
  const env = process.env;
  const persistence = database(
    env.TEMPORAL_PERSISTENCE_URL?.trim() || fallbackUrl,
    env.TEMPORAL_PERSISTENCE_URL?.trim() ? undefined : 'temporal',
  );
  const visibilityUrl = env.TEMPORAL_VISIBILITY_URL?.trim();
  return {
    persistence,
    visibility: visibilityUrl
      ? database(visibilityUrl)
      : { ...persistence, database: `${persistence.database}_visibility` },
  };
}

/**
 * Sets up (or upgrades) the schema of one database with the server's sql tool, as Temporal's admin-tools image does:
 * `create-database`, `setup-schema -v 0.0`, `update-schema --schema-name postgresql/v12/<temporal|visibility>`; each
 * step is idempotent, so it runs at every start. The password goes through `SQL_PASSWORD`, not the command line.
 * @throws Error with the tool's last output lines when a step fails.
 */
async function setupSchema(sqlTool: string, db: PostgresDatabase, schema: string, log: LogFn): Promise<void> {
  const common = [
    '--plugin',
    'postgres12',
    '--ep',
    db.host,
    '--port',
    String(db.port),
    '--user',
    db.user,
    '--db',
    db.database,
  ];
  for (const step of [['create-database'], ['setup-schema', '-v', '0.0'], ['update-schema', '--schema-name', schema]]) {
    const result = await execa(sqlTool, [...common, ...step], {
      env: { SQL_PASSWORD: db.password },
      stdin: 'ignore',
      all: true,
      reject: false,
    });
    if (result.failed)
      throw new Error(
        `Temporal schema step \`sql ${step.join(' ')}\` on ${db.database} failed:\n${result.all.slice(-2000)}`,
      );
  }
  log(`schema ${schema} is up to date in ${db.host}:${db.port}/${db.database}`);
}

/** A command line of the cluster: the file, its arguments and its whole environment. */
export interface ClusterCommand {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
}

/**
 * Sets up both schemas and writes the server's and the UI server's configuration under `dataDir`. Ports: the
 * frontend's gRPC port `port`, the others as offsets from it (7233 gives the upstream defaults). Run the two commands
 * (the server first), then {@link clusterReady}.
 * @throws Error when a schema step fails.
 */
export async function prepareCluster(opts: {
  binaries: ClusterBinaries;
  persistence: PostgresDatabase;
  visibility: PostgresDatabase;
  dataDir: string;
  port: number;
  uiPort: number;
  namespace: string;
  log: LogFn;
}): Promise<{ server: ClusterCommand; ui: ClusterCommand }> {
  const { binaries, persistence: p, visibility: v, port } = opts;
  await setupSchema(binaries.sqlTool, p, 'postgresql/v12/temporal', opts.log);
  await setupSchema(binaries.sqlTool, v, 'postgresql/v12/visibility', opts.log);
  const uiDir = path.join(opts.dataDir, 'ui');
  await mkdir(path.join(uiDir, 'config'), { recursive: true });
  await mkdir(path.join(opts.dataDir, 'config'), { recursive: true });
  await copyFile(binaries.configTemplate, path.join(opts.dataDir, 'config', 'docker.yaml'));
  const ui = {
    temporalGrpcAddress: `127.0.0.1:${port}`,
    host: '127.0.0.1',
    port: opts.uiPort,
    enableUi: true,
    defaultNamespace: opts.namespace,
  };
  const uiConfig = {
    ...ui,
    refreshInterval: '1m',
    notifyOnNewVersion: false,
    hideLogs: true,
    cors: { cookieInsecure: true, allowOrigins: [] },
  };
  await writeFile(path.join(uiDir, 'config', 'development.yaml'), JSON.stringify(uiConfig, null, 2)); // JSON is YAML
  const base = { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC' };
  const ports = {
    FRONTEND_GRPC_PORT: port,
    FRONTEND_HTTP_PORT: port + 10,
    HISTORY_GRPC_PORT: port + 1,
    MATCHING_GRPC_PORT: port + 2,
  };
  const more = {
    WORKER_GRPC_PORT: port + 6,
    FRONTEND_MEMBERSHIP_PORT: port - 300,
    HISTORY_MEMBERSHIP_PORT: port - 299,
  };
  const last = { MATCHING_MEMBERSHIP_PORT: port - 298, WORKER_MEMBERSHIP_PORT: port - 294 };
  const env: NodeJS.ProcessEnv = {
    ...base,
    ...Object.fromEntries(Object.entries({ ...ports, ...more, ...last }).map(([k, n]) => [k, String(n)])),
    ...{
      LOG_LEVEL: 'warn',
      NUM_HISTORY_SHARDS: '4',
      DB: 'postgres12',
      BIND_ON_IP: '127.0.0.1',
      TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
    },
    ...{
      POSTGRES_SEEDS: p.host,
      DB_PORT: String(p.port),
      POSTGRES_USER: p.user,
      POSTGRES_PWD: p.password,
      DBNAME: p.database,
    },
    ...{ VISIBILITY_POSTGRES_SEEDS: v.host, VISIBILITY_DB_PORT: String(v.port), VISIBILITY_POSTGRES_USER: v.user },
    ...{ VISIBILITY_POSTGRES_PWD: v.password, VISIBILITY_DBNAME: v.database },
    DYNAMIC_CONFIG_FILE_PATH: path.join(repoRoot(), 'scripts', 'temporal-cluster', 'dynamicconfig.yaml'),
  };
  return {
    server: {
      file: binaries.server,
      args: ['--root', opts.dataDir, '--config', 'config', '--env', 'docker', '--allow-no-auth', 'start'],
      env,
    },
    ui: {
      file: binaries.uiServer,
      args: ['--root', uiDir, '--config', 'config', '--env', 'development', 'start'],
      env: base,
    },
  };
}

/**
 * Waits until the frontend answers, registers the namespace and this project's search attributes when missing, and
 * waits until the UI serves the namespace.
 * @returns what the frontend reports: persistence and visibility stores (e.g. `postgres12`), server version.
 * @throws Error when a step is not done within `timeoutMs`.
 */
export async function clusterReady(opts: {
  address: string;
  uiUrl: string;
  namespace: string;
  timeoutMs: number;
  log: LogFn;
}) {
  // The system namespace is served once the frontend is up, before any other is registered.
  await waitForTemporal({ ...opts, namespace: 'temporal-system' });
  const connection = await Connection.connect({ address: opts.address });
  try {
    const info = await connection.workflowService.getClusterInfo({});
    await ensureNamespace(connection, opts.namespace, 3, opts.timeoutMs, opts.log);
    const attributes = projectSearchAttributes();
    const added = await ensureSearchAttributes(connection, opts.namespace, { attributes, timeoutMs: opts.timeoutMs });
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

/**
 * Registers `namespace` (retention `retentionDays`) unless it exists, then waits until the frontend serves it (a new
 * namespace reaches the frontend's cache within ~10 s; until then calls on it answer NOT_FOUND, gRPC code 5).
 * @throws Error after `timeoutMs`, or any other gRPC error.
 */
export async function ensureNamespace(
  connection: Connection,
  namespace: string,
  retentionDays: number,
  timeoutMs: number,
  log: LogFn,
): Promise<void> {
  const code = (error: unknown): number | undefined => (error as { code?: number }).code;
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch (error) {
    if (code(error) !== 5) throw error;
    const retention = msToTs(`${retentionDays} days`);
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: retention }).then(
      () => log(`registered namespace ${namespace} (retention ${retentionDays} days)`),
      (e: unknown) => {
        if (code(e) !== 6) throw e; // ALREADY_EXISTS: registered meanwhile
      },
    );
  }
  for (const deadline = Date.now() + timeoutMs; ; await sleep(500)) {
    const served = await connection.workflowService.countWorkflowExecutions({ namespace, query: '' }).then(
      () => true,
      (e: unknown) => (code(e) === 5 && Date.now() < deadline ? false : Promise.reject(e)),
    );
    if (served) return;
  }
}
