/**
 * `npm start` / `npm run start:cluster`: PostgreSQL, Temporal (dev server, or `--cluster`), then the stack definition's
 * processes from `dist/`, each under concurrently and waited for; stopped in reverse on Ctrl-C / SIGTERM. The worker
 * and the API restart on exit (5 times a minute at most); any other exit stops the stack. `--only temporal`: Temporal
 * alone; `STACK_EXIT_AFTER_READY=1`: stop after the banner; `STACK_DATA_DIR`: the data folder (`.data/`);
 * `STACK_PROFILE_DIR`: the worker and the API under `--cpu-prof` into it. docs/development.md.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Connection } from '@temporalio/client';
import { createConcurrently, Logger, LogError, LogExit, LogOutput, type Command } from 'concurrently';
import { execa } from 'execa';
import { firstValueFrom, timeout } from 'rxjs';
import { PROVIDER_LIST } from '../providers/index.js';
import { temporalConnectionOptionsFromEnv } from '../src/config/temporal-connection.js';
import { ORDER_TASK_QUEUE } from '../workflows/order-fulfilment.contract.js';
import { configureWarehouseCallback, devApiKeysBanner, ensureDevApiKeys } from './lib/dev-api-keys.js';
import { ensureDatabase, preparePostgres, waitForPostgres, type RunAs } from './lib/embedded-pg.js';
import { errorMessage, repoRoot } from './lib/env.js';
import { portsInUse, waitForHttp, waitForTemporal, waitForWorkerPollers } from './lib/processes.js';
import * as def from './lib/stack-definition.js';
import { devServerArgs, ensureTemporalCli } from './lib/temporal-cli.js';
import * as cluster from './lib/temporal-cluster.js';

const ROOT = repoRoot();
const { values: args } = parseArgs({ options: { cluster: { type: 'boolean' }, only: { type: 'string' } } });
const ports = def.stackPorts();
const env = process.env;
const namespace = env.TEMPORAL_NAMESPACE?.trim() || 'default';
const taskQueue = env.TEMPORAL_TASK_QUEUE?.trim() || ORDER_TASK_QUEUE;
const say = (line: string): void => console.log(`[stack     ] ${line}`);
/** Databases, pid files and keys: `.data/`, or `STACK_DATA_DIR` (the bench's arms: a new one each). */
const DATA = path.resolve(env.STACK_DATA_DIR?.trim() || path.join(ROOT, '.data'));

/** A supervised process: its command, whether it restarts, its stop signal and grace (ms). */
type Supervised = { name: string; command: Command; restart: boolean; stopSignal: string; stopMs: number };
const started: Supervised[] = [];
const STOP_ORDER = ['api', 'worker', 'simulators', 'temporal-ui', 'temporal', 'postgres'];
let stopping: Promise<never> | undefined;

const quote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** Starts `exec <file> <args>` under concurrently, in its own process group (Ctrl-C reaches only us), as `runAs`. */
function run(
  name: string,
  colour: string,
  file: string,
  argv: string[],
  opts: Partial<Supervised> & { env?: NodeJS.ProcessEnv; runAs?: RunAs } = {},
): Command {
  if (stopping) throw new Error('stopping');
  const logger = new Logger({ prefixFormat: 'name' });
  logger.setPrefixLength(10);
  const { commands, result } = createConcurrently(
    [{ name, command: `exec ${[file, ...argv].map(quote).join(' ')}`, env: opts.env, prefixColor: colour }],
    {
      logger,
      outputStream: process.stdout,
      cwd: ROOT,
      spawn: (command, spawnOpts) => spawn('/bin/sh', ['-c', command], { ...spawnOpts, ...opts.runAs, detached: true }),
      controllers: [new LogError({ logger }), new LogOutput({ logger }), new LogExit({ logger })],
    },
  );
  result.catch(() => undefined); // the exits are handled below
  const defaults = { restart: false, stopSignal: 'SIGTERM', stopMs: 15_000 };
  const proc: Supervised = { name, command: commands[0]!, ...defaults, ...opts };
  started.push(proc);
  const deaths: number[] = [];
  const pidFile = path.join(DATA, 'run', `${name}.pid`);
  const writePid = (): Promise<void> =>
    mkdir(path.dirname(pidFile), { recursive: true }).then(() => writeFile(pidFile, `${proc.command.pid}\n`));
  void writePid();
  proc.command.close.subscribe(() => {
    if (stopping) return;
    deaths.push(Date.now());
    if (!proc.restart || deaths.filter((t) => t > Date.now() - 60_000).length > 5) {
      console.error(`\n✖ ${name} exited${proc.restart ? ' 6 times within a minute' : ''}: stopping the stack`);
      void shutdown(1);
      return;
    }
    say(`${name} exited: restarting it in 1 s`);
    setTimeout(() => {
      if (stopping) return;
      proc.command.start();
      void writePid();
    }, 1000);
  });
  return proc.command;
}

/** Stops every process in reverse start order, then exits with `code`. Idempotent. */
function shutdown(code: number): Promise<never> {
  stopping ??= (async () => {
    const rank = (p: Supervised): number => STOP_ORDER.indexOf(p.name);
    for (const p of [...started].sort((a, b) => rank(a) - rank(b))) {
      if (p.command.state !== 'started') continue;
      say(`stopping ${p.name}…`);
      const closed = firstValueFrom(p.command.close.pipe(timeout(p.stopMs))).catch(() => {
        say(`${p.name} did not stop within ${p.stopMs / 1000} s: killing it`);
        p.command.kill('SIGKILL');
      });
      p.command.kill(p.stopSignal);
      await closed;
    }
    await rm(path.join(DATA, 'run'), { recursive: true, force: true });
    say(code === 0 ? 'stopped cleanly' : `stopped (exit code ${code})`);
    process.exit(code);
  })();
  return stopping;
}

/** PostgreSQL: `DATABASE_URL`, else the embedded one; the database created if missing; migrations applied. */
async function startPostgres(migrate: boolean): Promise<string> {
  let url = env.DATABASE_URL?.trim();
  if (!url) {
    const cmd = await preparePostgres({
      ...{ dataDir: path.join(DATA, 'postgres'), checkout: env.STACK_DATA_DIR?.trim() ? DATA : ROOT },
      port: ports.embeddedPostgres,
      ...{ user: 'postgres', password: 'postgres', log: (line: string) => say(`postgres: ${line}`) },
    });
    const { env: pgEnv, runAs } = cmd;
    run('postgres', 'blue', cmd.file, cmd.args, { env: pgEnv, runAs, stopSignal: 'SIGINT', stopMs: 25_000 });
    await waitForPostgres(cmd, 60_000);
    url = def.embeddedDatabaseUrl(ports.embeddedPostgres);
  }
  await ensureDatabase(url, say);
  if (!migrate) return url;
  say('prisma migrate deploy');
  await npx(url, 'prisma', 'migrate', 'deploy');
  return url;
}

async function npx(url: string, ...args: string[]): Promise<void> {
  const result = await execa('npx', args, { cwd: ROOT, env: { DATABASE_URL: url }, all: true, reject: false });
  if (result.failed) throw new Error(`${args.join(' ')} failed:\n${result.all}`);
}

/** Temporal: `TEMPORAL_ADDRESS`, the dev server, or (`--cluster`) a Temporal Server on `postgres` with its UI. */
async function startTemporal(postgres: Promise<string>): Promise<{ address: string; uiUrl: string; about: string }> {
  const external = env.TEMPORAL_ADDRESS?.trim();
  if (external) {
    await waitForTemporal({ address: external, namespace, timeoutMs: 30_000 });
    const uiUrl = env.TEMPORAL_UI_URL?.trim() || def.localUrl(def.DEFAULT_PORTS.temporalUi);
    return { address: external, uiUrl, about: '' };
  }
  const address = `127.0.0.1:${ports.temporal}`;
  const uiUrl = def.localUrl(ports.temporalUi);
  const log = (line: string): void => say(`temporal: ${line}`);
  if (!args.cluster) {
    const cli = await ensureTemporalCli({ log });
    const dbFilename = path.join(DATA, 'temporal', 'dev.db');
    await mkdir(path.dirname(dbFilename), { recursive: true });
    const devServer = devServerArgs({ dbFilename, port: ports.temporal, uiPort: ports.temporalUi, namespace });
    run('temporal', 'magenta', cli, devServer);
    await waitForTemporal({ address, namespace, timeoutMs: 60_000 });
    return { address, uiUrl, about: '' };
  }
  const binaries = await cluster.ensureClusterBinaries(log);
  const { persistence, visibility } = cluster.clusterDatabasesFromEnv(await postgres);
  const dataDir = path.join(DATA, 'temporal-cluster');
  const cmds = await cluster.prepareCluster({
    ...{ binaries, persistence, visibility, dataDir, port: ports.temporal, uiPort: ports.temporalUi, namespace, log },
  });
  run('temporal', 'magenta', cmds.server.file, cmds.server.args, { env: cmds.server.env, stopMs: 25_000 });
  run('temporal-ui', 'magenta', cmds.ui.file, cmds.ui.args, { env: cmds.ui.env });
  const info = await cluster.clusterReady({ address, uiUrl, namespace, timeoutMs: 120_000, log });
  const about = `, Temporal Server ${info.serverVersion} on ${info.persistenceStore} (visibility ${info.visibilityStore})`;
  return { address, uiUrl, about };
}

async function main(): Promise<void> {
  const only = args.only;
  if (only !== undefined && only !== 'temporal') throw new Error(`--only ${only}: only \`temporal\` is supported`);
  const procs = Object.values(def.STACK_PROCESSES);
  const missing = only ? [] : procs.map((p) => p.entry).filter((entry) => !existsSync(path.join(ROOT, entry)));
  if (missing.length > 0) throw new Error(`missing ${missing.join(', ')}: run \`npm run build\` first`);
  const wanted: def.StackPort[] = [
    ...(only ? [] : (['api', 'simulators'] as const)),
    ...(only || ports.workerMetrics === 0 ? [] : (['workerMetrics'] as const)),
    ...(env.DATABASE_URL?.trim() || (only && !args.cluster) ? [] : (['embeddedPostgres'] as const)),
    ...(env.TEMPORAL_ADDRESS?.trim() ? [] : (['temporal', 'temporalUi'] as const)),
  ];
  const busy = await portsInUse(wanted.map((role) => ports[role]));
  if (busy.length > 0) {
    const list = wanted
      .filter((role) => busy.includes(ports[role]))
      .map((role) => `${ports[role]} (${def.PORT_VARIABLES[role]})`);
    throw new Error(`ports already in use (another stack running? stop it or choose other ports): ${list.join(', ')}`);
  }

  const providerApiKeys = { ...def.devProviderApiKeys(PROVIDER_LIST), ...def.providerApiKeysFromEnv(env) };
  const simulatorUrl = def.localUrl(ports.simulators);
  const postgres = only && !args.cluster ? Promise.resolve('') : startPostgres(!only);
  postgres.catch(() => undefined);
  const simulators = async (): Promise<void> => {
    if (only) return;
    const { simulators: sims } = def.STACK_PROCESSES;
    run(sims.name, 'cyan', process.execPath, ['--enable-source-maps', sims.entry], {
      env: def.simulatorEnvironment({ port: ports.simulators, providerApiKeys }),
    });
    await waitForHttp(`${simulatorUrl}${sims.readyPath}`);
  };
  const [databaseUrl, temporal] = await Promise.all([postgres, startTemporal(postgres), simulators()]);
  if (only) {
    console.log(
      `\nTemporal is ready: gRPC ${temporal.address} (TEMPORAL_ADDRESS), UI ${temporal.uiUrl}${temporal.about}. Ctrl-C stops it.\n`,
    );
    return;
  }
  const keys = await ensureDevApiKeys({ databaseUrl, file: path.join(DATA, 'api-keys.json') });
  // The simulated warehouse reports orders packed to our API with the warehouse's development key.
  await configureWarehouseCallback(simulatorUrl, def.localUrl(ports.api), keys);
  const services = { databaseUrl, temporalAddress: temporal.address, taskQueue, simulatorUrl, providerApiKeys };
  const serviceEnv = {
    ...def.serviceEnvironment(services),
    ...{ TEMPORAL_UI_URL: temporal.uiUrl, TEMPORAL_NAMESPACE: namespace, PORT: String(ports.api) },
    WORKER_METRICS_PORT: String(ports.workerMetrics),
    LOG_FORMAT: env.LOG_FORMAT ?? 'pretty',
  };
  const profile = env.STACK_PROFILE_DIR?.trim() ? ['--cpu-prof', `--cpu-prof-dir=${env.STACK_PROFILE_DIR}`] : [];
  const node = (entry: string): string[] => [...profile, '--enable-source-maps', entry];
  const seed = npx(databaseUrl, 'tsx', 'prisma/seed.ts');
  seed.catch(() => undefined); // awaited below, once the worker polls
  const workerOpts = { env: serviceEnv, restart: true, stopMs: 30_000 };
  const worker = run('worker', 'green', process.execPath, node(def.STACK_PROCESSES.worker.entry), workerOpts);
  const connectionOptions = temporalConnectionOptionsFromEnv(env, temporal.address);
  const connection = await Connection.connect({ ...connectionOptions, connectTimeout: 5000 });
  await waitForWorkerPollers({ connection, namespace, taskQueue, pid: worker.pid }).finally(() => connection.close());
  await seed;
  run('api', 'cyanBright', process.execPath, node(def.STACK_PROCESSES.api.entry), { env: serviceEnv, restart: true });
  const apiUrl = def.localUrl(ports.api);
  await waitForHttp(`${apiUrl}/health`);

  const ledgers = PROVIDER_LIST.map((p) => `    ${p.name} ledger: ${def.providerLedgerUrl(simulatorUrl, p.name)}`);
  console.log(
    [
      '',
      'Order fulfilment stack is ready',
      `  API           ${apiUrl}   (health ${apiUrl}/health, OpenAPI ${apiUrl}/docs)`,
      `  Temporal UI   ${temporal.uiUrl}   (gRPC ${temporal.address}, namespace ${namespace}${temporal.about})`,
      `  Simulators    ${simulatorUrl}   (SIMULATOR_URL)`,
      ...ledgers,
      `  PostgreSQL    ${databaseUrl.replace(/:[^:@/]*@/, ':***@')}`,
      `  Processes     ${path.relative(ROOT, DATA) || DATA}/run/<name>.pid (kill the worker's or the API's to restart it on a new build)`,
      '',
      ...devApiKeysBanner(apiUrl, keys, (s) => s),
      '  Then: npm run demo places a batch of orders and prints what happened to each. Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
  if (['1', 'true', 'yes'].includes((env.STACK_EXIT_AFTER_READY ?? '').toLowerCase())) await shutdown(0);
}

let firstSignal = 0;
const onSignal = (signal: NodeJS.Signals): void => {
  // npm relays the terminal's Ctrl-C a moment after the terminal delivered it: the same Ctrl-C, not a second one.
  if (firstSignal === 0) {
    firstSignal = Date.now();
    say(`${signal}: stopping the stack (Ctrl-C again to kill everything now)`);
    void shutdown(0);
  } else if (Date.now() - firstSignal > 2000) {
    for (const p of started) p.command.kill('SIGKILL');
    process.exit(130);
  }
};
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);
// A safety net: no process group outlives the supervisor.
process.on('exit', () => {
  for (const { command } of started.filter((p) => p.command.state === 'started' && p.command.pid)) {
    try {
      process.kill(-command.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

main().catch((error: unknown) => {
  if (stopping) return;
  console.error(`\n✖ ${errorMessage(error)}\n`);
  void shutdown(1);
});
