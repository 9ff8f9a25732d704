/**
 * A Temporal cluster without Docker (`npm run start:cluster`, CI, the scale-out run): Temporal Server 1.29.1 on
 * PostgreSQL and the UI server 2.42.1, built by go-tools.ts, configured as the docker-compose `cluster` profile does.
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
const UI_PACKAGE = 'github.com/temporalio/ui-server/v2/cmd/server';
const CLUSTER_TOOLS = [
  ['Temporal Server', 'TEMPORAL_SERVER_PATH', 'go.temporal.io/server/cmd/server', 'temporal-server', SERVER],
  ['Temporal sql tool', 'TEMPORAL_SQL_TOOL_PATH', 'go.temporal.io/server/cmd/tools/sql', 'temporal-server', SERVER],
  ['Temporal UI server', 'TEMPORAL_UI_SERVER_PATH', UI_PACKAGE, 'temporal-ui-server', '2.42.1'],
] as const;

type ClusterBinaries = { server: string; sqlTool: string; uiServer: string; configTemplate: string };

/**
 * Finds or builds the server, its sql tool and the UI server, and the server's config template.
 * @throws Error when a binary cannot be built or the module read.
 */
export async function ensureClusterBinaries(log: LogFn): Promise<ClusterBinaries> {
  const found: string[] = [];
  for (const [label, envVar, goPackage, folder, version] of CLUSTER_TOOLS)
    found.push(await ensureGoTool({ label, envVar, goPackage, folder: `${folder}-${version}`, version }, log));
  const [server, sqlTool, uiServer] = found as [string, string, string];
  const configTemplate = path.join(path.dirname(server), 'config', 'docker.yaml');
  if (!existsSync(configTemplate)) {
    await mkdir(path.dirname(configTemplate), { recursive: true });
    const moduleDir = await goModuleDir('go.temporal.io/server', SERVER);
    await copyFile(path.join(moduleDir, 'config', 'docker.yaml'), configTemplate);
  }
  return { server, sqlTool, uiServer, configTemplate };
}

type PostgresDatabase = { host: string; port: number; user: string; password: string; database: string };

function database(url: string, name?: string): PostgresDatabase {
  const [u, d] = [new URL(url), decodeURIComponent];
  return {
    ...{ host: u.hostname, port: Number(u.port || 5432), user: d(u.username || 'postgres'), password: d(u.password) },
    database: name ?? d(u.pathname.slice(1)),
  };
}

/**
 * `TEMPORAL_PERSISTENCE_URL`, else `temporal` on `fallbackUrl`'s server; `TEMPORAL_VISIBILITY_URL`, else
 * `<persistence>_visibility`.
 */
export function clusterDatabasesFromEnv(fallbackUrl: string): Record<'persistence' | 'visibility', PostgresDatabase> {
  const [own, vis] = [process.env.TEMPORAL_PERSISTENCE_URL?.trim(), process.env.TEMPORAL_VISIBILITY_URL?.trim()];
  const persistence = own ? database(own) : database(fallbackUrl, 'temporal');
  return {
    persistence,
    visibility: vis ? database(vis) : { ...persistence, database: `${persistence.database}_visibility` },
  };
}

/** Sets up or upgrades a schema as the admin-tools image does (each step idempotent; the password not in argv). */
async function setupSchema(sqlTool: string, db: PostgresDatabase, schema: string, log: LogFn): Promise<void> {
  const common = ['--plugin', 'postgres12', '--ep', db.host, '--port', String(db.port), '--user', db.user];
  for (const step of [['create-database'], ['setup-schema', '-v', '0.0'], ['update-schema', '--schema-name', schema]]) {
    const options = { env: { SQL_PASSWORD: db.password }, stdin: 'ignore', all: true, reject: false } as const;
    const result = await execa(sqlTool, [...common, '--db', db.database, ...step], options);
    const failed = `Temporal schema step \`sql ${step.join(' ')}\` on ${db.database} failed`;
    if (result.failed) throw new Error(`${failed}:\n${result.all.slice(-2000)}`);
  }
  log(`schema ${schema} is up to date in ${db.host}:${db.port}/${db.database}`);
}

type ClusterCommand = { file: string; args: string[]; env: NodeJS.ProcessEnv };

/** The server's ports as offsets from the frontend's gRPC port (7233 gives the upstream defaults). */
const PORT_OFFSETS = {
  ...{ FRONTEND_GRPC_PORT: 0, FRONTEND_HTTP_PORT: 10, HISTORY_GRPC_PORT: 1, MATCHING_GRPC_PORT: 2 },
  ...{ WORKER_GRPC_PORT: 6, FRONTEND_MEMBERSHIP_PORT: -300, HISTORY_MEMBERSHIP_PORT: -299 },
  ...{ MATCHING_MEMBERSHIP_PORT: -298, WORKER_MEMBERSHIP_PORT: -294 },
};

/**
 * Sets up both schemas and writes both configurations under `dataDir`. @returns the server's and the UI's commands.
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
  const uiConfig = {
    ...{ temporalGrpcAddress: `127.0.0.1:${port}`, host: '127.0.0.1', port: opts.uiPort, enableUi: true },
    ...{ defaultNamespace: opts.namespace, refreshInterval: '1m', notifyOnNewVersion: false, hideLogs: true },
    cors: { cookieInsecure: true, allowOrigins: [] },
  };
  await writeFile(path.join(uiDir, 'config', 'development.yaml'), JSON.stringify(uiConfig, null, 2)); // JSON is YAML
  const base = { PATH: process.env.PATH, HOME: process.env.HOME, TZ: 'UTC' };
  const env: NodeJS.ProcessEnv = {
    ...base,
    ...Object.fromEntries(Object.entries(PORT_OFFSETS).map(([k, offset]) => [k, String(port + offset)])),
    ...{ LOG_LEVEL: 'warn', NUM_HISTORY_SHARDS: '4', DB: 'postgres12', BIND_ON_IP: '127.0.0.1' },
    ...{ TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1', POSTGRES_SEEDS: p.host, DB_PORT: String(p.port) },
    ...{ POSTGRES_USER: p.user, POSTGRES_PWD: p.password, DBNAME: p.database },
    ...{ VISIBILITY_POSTGRES_SEEDS: v.host, VISIBILITY_DB_PORT: String(v.port), VISIBILITY_POSTGRES_USER: v.user },
    ...{ VISIBILITY_POSTGRES_PWD: v.password, VISIBILITY_DBNAME: v.database },
    DYNAMIC_CONFIG_FILE_PATH: path.join(repoRoot(), 'scripts', 'temporal-cluster', 'dynamicconfig.yaml'),
  };
  const args = (root: string, env: string) => ['--root', root, '--config', 'config', '--env', env];
  return {
    server: { file: binaries.server, args: [...args(opts.dataDir, 'docker'), '--allow-no-auth', 'start'], env },
    ui: { file: binaries.uiServer, args: [...args(uiDir, 'development'), 'start'], env: base },
  };
}

/**
 * Waits for the frontend, registers the namespace and search attributes when missing, waits for the UI.
 * @returns the stores and server version. @throws Error when a step is not done within `timeoutMs`.
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
    const [persistenceStore, visibilityStore] = [info.persistenceStore ?? '?', info.visibilityStore ?? '?'];
    return { persistenceStore, visibilityStore, serverVersion: info.serverVersion ?? '?' };
  } finally {
    await connection.close();
  }
}

/**
 * Registers `namespace` unless it exists, then waits until the frontend serves it (NOT_FOUND meanwhile).
 * @throws Error after `timeoutMs`, or any other gRPC error.
 */
export async function ensureNamespace(
  connection: Connection,
  namespace: string,
  retentionDays: number,
  timeoutMs: number,
  log: LogFn,
) {
  const code = (error: unknown): number | undefined => (error as { code?: number }).code;
  const service = connection.workflowService;
  try {
    await service.describeNamespace({ namespace });
  } catch (error) {
    if (code(error) !== 5) throw error;
    const workflowExecutionRetentionPeriod = msToTs(`${retentionDays} days`);
    await service.registerNamespace({ namespace, workflowExecutionRetentionPeriod }).then(
      () => log(`registered namespace ${namespace} (retention ${retentionDays} days)`),
      (e: unknown) => {
        if (code(e) !== 6) throw e; // ALREADY_EXISTS: registered meanwhile
      },
    );
  }
  for (const deadline = Date.now() + timeoutMs; ; await sleep(500)) {
    const served = await service.countWorkflowExecutions({ namespace, query: '' }).then(
      () => true,
      (e: unknown) => (code(e) === 5 && Date.now() < deadline ? false : Promise.reject(e)),
    );
    if (served) return;
  }
}
