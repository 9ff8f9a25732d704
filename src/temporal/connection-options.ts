/**
 * The one builder of Temporal connection options, shared by the API's client connection
 * (src/temporal/temporal.module.ts), the worker's `NativeConnection` (src/worker.ts) and the scripts that talk to
 * the configured cluster (scripts/stack.ts), so TLS and credentials are configured once, from the environment:
 *
 * | Variables                                         | Connection                                                   |
 * | ------------------------------------------------- | ------------------------------------------------------------ |
 * | none                                              | plain gRPC (the dev server)                                  |
 * | `TEMPORAL_TLS=true` (+ `TEMPORAL_TLS_CA_PATH`)    | TLS; the server verified against the system roots or the CA  |
 * | `TEMPORAL_TLS_CERT_PATH` + `TEMPORAL_TLS_KEY_PATH` | mTLS: the client certificate (self-hosted, Temporal Cloud)   |
 * | `TEMPORAL_API_KEY`                                | TLS + `Authorization: Bearer <key>` (Temporal Cloud API keys) |
 *
 * `TEMPORAL_TLS_SERVER_NAME` overrides the name the server certificate is checked against. See
 * https://docs.temporal.io/develop/typescript/temporal-client#connect-to-temporal-cloud and the SDK's `TLSConfig`.
 * Certificate files are read once, when the options are built (at process start), so a wrong path stops the
 * process with a {@link ConfigError} naming the variable instead of failing at the first call.
 */
import { readFileSync } from 'node:fs';
import type { TLSConfig } from '@temporalio/client';
import { type AppConfig, ConfigError, configSchema } from '../config/config.js';

/** What both `Connection` (client) and `NativeConnection` (worker) take. */
export interface TemporalConnectionOptions {
  /** host:port of the frontend. */
  address: string;
  /** TLS settings; absent for plain gRPC. */
  tls?: TLSConfig;
  /** Temporal Cloud API key (the SDK sends it as a bearer token); absent otherwise. */
  apiKey?: string;
}

/** The variables {@link temporalConnectionOptions} reads. */
export type TemporalConnectionConfig = Pick<
  AppConfig,
  | 'TEMPORAL_ADDRESS'
  | 'TEMPORAL_TLS'
  | 'TEMPORAL_TLS_CA_PATH'
  | 'TEMPORAL_TLS_CERT_PATH'
  | 'TEMPORAL_TLS_KEY_PATH'
  | 'TEMPORAL_TLS_SERVER_NAME'
  | 'TEMPORAL_API_KEY'
>;

/**
 * Builds the connection options from the configuration. TLS is on when `TEMPORAL_TLS` is true, or when it is unset
 * and an API key or a client certificate is configured.
 * @param readFile reads a PEM file (tests pass a fake).
 * @throws ConfigError naming the variable whose file cannot be read or is empty.
 */
export function temporalConnectionOptions(
  config: TemporalConnectionConfig,
  readFile: (path: string) => Buffer = (path) => readFileSync(path),
): TemporalConnectionOptions {
  const options: TemporalConnectionOptions = { address: config.TEMPORAL_ADDRESS };
  const apiKey = config.TEMPORAL_API_KEY;
  const clientCert = Boolean(config.TEMPORAL_TLS_CERT_PATH && config.TEMPORAL_TLS_KEY_PATH);
  const tlsOn = config.TEMPORAL_TLS ?? (Boolean(apiKey) || clientCert);
  if (tlsOn) {
    const pem = (variable: keyof TemporalConnectionConfig): Buffer => {
      const path = config[variable] as string;
      let content: Buffer;
      try {
        content = readFile(path);
      } catch (err) {
        const why = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
        throw new ConfigError(`Invalid configuration:\n  ${variable}: cannot read ${path} (${why})`, [variable]);
      }
      if (content.length === 0) {
        throw new ConfigError(`Invalid configuration:\n  ${variable}: ${path} is empty`, [variable]);
      }
      return content;
    };
    const tls: TLSConfig = {};
    if (config.TEMPORAL_TLS_CA_PATH) tls.serverRootCACertificate = pem('TEMPORAL_TLS_CA_PATH');
    if (clientCert) tls.clientCertPair = { crt: pem('TEMPORAL_TLS_CERT_PATH'), key: pem('TEMPORAL_TLS_KEY_PATH') };
    if (config.TEMPORAL_TLS_SERVER_NAME) tls.serverNameOverride = config.TEMPORAL_TLS_SERVER_NAME;
    options.tls = tls;
  }
  if (apiKey) options.apiKey = apiKey;
  return options;
}

/**
 * {@link temporalConnectionOptions} from the `TEMPORAL_*` variables of `env` alone (for scripts, which need no other
 * configuration); `address` overrides `TEMPORAL_ADDRESS` (e.g. the dev server a script started itself).
 * @throws ConfigError for an invalid variable or an unreadable certificate file.
 */
export function temporalConnectionOptionsFromEnv(
  env: NodeJS.ProcessEnv = process.env,
  address?: string,
): TemporalConnectionOptions {
  const parsed = configSchema
    .pick({
      TEMPORAL_ADDRESS: true,
      TEMPORAL_TLS: true,
      TEMPORAL_TLS_CA_PATH: true,
      TEMPORAL_TLS_CERT_PATH: true,
      TEMPORAL_TLS_KEY_PATH: true,
      TEMPORAL_TLS_SERVER_NAME: true,
      TEMPORAL_API_KEY: true,
    })
    .safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new ConfigError(
      `Invalid configuration:\n${lines.join('\n')}`,
      parsed.error.issues.map((i) => i.path.join('.')),
    );
  }
  return temporalConnectionOptions({ ...parsed.data, ...(address ? { TEMPORAL_ADDRESS: address } : {}) });
}

/** A log-safe summary of the options: address, TLS parts in use, whether an API key is set (never the key). */
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
