/**
 * How this service's processes connect to Temporal: the frontend address plus, for Temporal Cloud or a
 * TLS-terminated self-hosted frontend, TLS and credentials, from {@link AppConfig}. One function for both
 * connection kinds, so the API (`Connection.lazy`) and the worker (`NativeConnection.connect`) agree.
 */
import { readFileSync } from 'node:fs';
import type { AppConfig } from './config.js';

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
 * @throws Error when only one of TEMPORAL_TLS_CERT / TEMPORAL_TLS_KEY is set, or a file cannot be read.
 */
export function temporalConnectionOptions(config: ConnectionConfig): TemporalConnectionOptions {
  const options: TemporalConnectionOptions = { address: config.TEMPORAL_ADDRESS };
  if (Boolean(config.TEMPORAL_TLS_CERT) !== Boolean(config.TEMPORAL_TLS_KEY)) {
    throw new Error('TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together: set both (an mTLS pair) or neither');
  }
  const read = (name: string, file: string): Buffer => {
    try {
      return readFileSync(file);
    } catch (error) {
      throw new Error(`${name}=${file} cannot be read: ${(error as Error).message}`);
    }
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
