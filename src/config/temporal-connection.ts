/**
 * How this service's processes connect to Temporal: the frontend address plus, for Temporal Cloud or a
 * TLS-terminated self-hosted frontend, TLS and credentials, from {@link AppConfig}. The one builder for every
 * connection: the API (`Connection.lazy`), the worker (`NativeConnection.connect`) and the scripts that talk to the
 * configured cluster ({@link temporalConnectionOptionsFromEnv}), so they agree.
 *
 * | Variables                                       | Connection                                                    |
 * | ----------------------------------------------- | ------------------------------------------------------------- |
 * | none                                            | plain gRPC (the dev server)                                   |
 * | `TEMPORAL_TLS=true` (+ `TEMPORAL_TLS_CA`)       | TLS; the server verified against the system roots or the CA   |
 * | `TEMPORAL_TLS_CERT` + `TEMPORAL_TLS_KEY` (PEM)  | mTLS with the client certificate (self-hosted, Temporal Cloud) |
 * | `TEMPORAL_API_KEY`                              | TLS + `Authorization: Bearer <key>` (Temporal Cloud API keys)  |
 *
 * See https://docs.temporal.io/develop/typescript/temporal-client#connect-to-temporal-cloud. PEM files are read once,
 * at start, so a wrong path stops the process with a {@link ConfigError} naming the variable.
 */
import { readFileSync } from 'node:fs';
import { type AppConfig, ConfigError, configSchema } from './config.js';

/** TLS settings shared by `@temporalio/client` and `@temporalio/worker` connections (their `TLSConfig`). */
export interface TemporalTlsOptions {
  serverNameOverride?: string;
  serverRootCACertificate?: Buffer;
  clientCertPair?: { crt: Buffer; key: Buffer };
}

/** The subset of `ConnectionOptions` / `NativeConnectionOptions` this service sets. */
export interface TemporalConnectionOptions {
  /** `host:port` of the frontend. */
  address: string;
  /** Absent: plaintext (the dev server, a local cluster). */
  tls?: TemporalTlsOptions;
  /** Temporal Cloud API key, sent as `Authorization: Bearer <key>`. */
  apiKey?: string;
}

type ConnectionConfig = Pick<
  AppConfig,
  | 'TEMPORAL_ADDRESS'
  | 'TEMPORAL_API_KEY'
  | 'TEMPORAL_TLS'
  | 'TEMPORAL_TLS_CERT'
  | 'TEMPORAL_TLS_KEY'
  | 'TEMPORAL_TLS_CA'
  | 'TEMPORAL_TLS_SERVER_NAME'
>;

/**
 * Connection options from the configuration: TLS when `TEMPORAL_TLS=true`, an API key or a client certificate is
 * set (Temporal Cloud accepts either an API key or an mTLS pair); the PEM files are read now.
 * @param readFile reads a PEM file (tests pass a fake).
 * @throws ConfigError (naming the variable) when only one of TEMPORAL_TLS_CERT / TEMPORAL_TLS_KEY is set, or a file
 *   cannot be read or is empty.
 */
export function temporalConnectionOptions(
  config: ConnectionConfig,
  readFile: (path: string) => Buffer = (path) => readFileSync(path),
): TemporalConnectionOptions {
  const options: TemporalConnectionOptions = { address: config.TEMPORAL_ADDRESS };
  if (Boolean(config.TEMPORAL_TLS_CERT) !== Boolean(config.TEMPORAL_TLS_KEY)) {
    const missing = config.TEMPORAL_TLS_CERT ? 'TEMPORAL_TLS_KEY' : 'TEMPORAL_TLS_CERT';
    throw new ConfigError(
      `Invalid configuration:\n  ${missing}: TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: set both (an mTLS pair) or neither`,
      [missing],
    );
  }
  const read = (name: string, file: string): Buffer => {
    let content: Buffer;
    try {
      content = readFile(file);
    } catch (error) {
      throw new ConfigError(`Invalid configuration:\n  ${name}=${file} cannot be read: ${(error as Error).message}`, [
        name,
      ]);
    }
    if (content.length === 0) throw new ConfigError(`Invalid configuration:\n  ${name}: ${file} is empty`, [name]);
    return content;
  };
  const useTls =
    config.TEMPORAL_TLS ||
    config.TEMPORAL_API_KEY !== undefined ||
    config.TEMPORAL_TLS_CERT !== undefined ||
    config.TEMPORAL_TLS_CA !== undefined;
  if (useTls) {
    const tls: TemporalTlsOptions = {};
    if (config.TEMPORAL_TLS_SERVER_NAME) tls.serverNameOverride = config.TEMPORAL_TLS_SERVER_NAME;
    if (config.TEMPORAL_TLS_CA) tls.serverRootCACertificate = read('TEMPORAL_TLS_CA', config.TEMPORAL_TLS_CA);
    if (config.TEMPORAL_TLS_CERT && config.TEMPORAL_TLS_KEY) {
      tls.clientCertPair = {
        crt: read('TEMPORAL_TLS_CERT', config.TEMPORAL_TLS_CERT),
        key: read('TEMPORAL_TLS_KEY', config.TEMPORAL_TLS_KEY),
      };
    }
    options.tls = tls;
  }
  if (config.TEMPORAL_API_KEY) options.apiKey = config.TEMPORAL_API_KEY;
  return options;
}

/**
 * {@link temporalConnectionOptions} from the `TEMPORAL_*` variables of `env` alone (for scripts, which need no other
 * configuration); `address` overrides `TEMPORAL_ADDRESS` (e.g. a dev server the script started itself).
 * @throws ConfigError for an invalid variable or an unreadable certificate file.
 */
export function temporalConnectionOptionsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  address?: string,
): TemporalConnectionOptions {
  const parsed = configSchema
    .pick({
      TEMPORAL_ADDRESS: true,
      TEMPORAL_API_KEY: true,
      TEMPORAL_TLS: true,
      TEMPORAL_TLS_CERT: true,
      TEMPORAL_TLS_KEY: true,
      TEMPORAL_TLS_CA: true,
      TEMPORAL_TLS_SERVER_NAME: true,
    })
    .safeParse(env);
  if (!parsed.success) {
    const variables = parsed.error.issues.map((i) => i.path.join('.'));
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`, variables);
  }
  return temporalConnectionOptions({ ...parsed.data, ...(address ? { TEMPORAL_ADDRESS: address } : {}) });
}

/** A log-safe summary of the options: address, the TLS parts in use, whether an API key is set (never the key). */
export function describeConnectionOptions(options: TemporalConnectionOptions): Record<string, unknown> {
  return {
    address: options.address,
    tls: options.tls
      ? {
          customCa: Boolean(options.tls.serverRootCACertificate),
          clientCertificate: Boolean(options.tls.clientCertPair),
          serverName: options.tls.serverNameOverride ?? null,
        }
      : false,
    apiKey: Boolean(options.apiKey),
  };
}
