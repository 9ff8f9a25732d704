/** temporalConnectionOptions: plaintext by default, TLS and credentials for Temporal Cloud. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ConnectionOptions } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { temporalConnectionOptions } from '../../../src/config/temporal-connection.js';

const config = (env: Record<string, string>) => loadConfig({ TEMPORAL_ADDRESS: 'ns.acct.tmprl.cloud:7233', ...env });

describe('temporalConnectionOptions', () => {
  it('is plaintext with only an address (dev server, local cluster)', () => {
    expect(temporalConnectionOptions(loadConfig({}))).toEqual({ address: '127.0.0.1:7233' });
  });

  it('uses TLS with an API key (Temporal Cloud)', () => {
    expect(temporalConnectionOptions(config({ TEMPORAL_API_KEY: 'key-123' }))).toEqual({
      address: 'ns.acct.tmprl.cloud:7233',
      tls: {},
      apiKey: 'key-123',
    });
  });

  it('reads an mTLS pair and a CA, and fits both connection kinds', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'tls-'));
    for (const name of ['client.pem', 'client.key', 'ca.pem']) writeFileSync(path.join(dir, name), `-- ${name} --`);
    const options = temporalConnectionOptions(
      config({
        TEMPORAL_TLS_CERT: path.join(dir, 'client.pem'),
        TEMPORAL_TLS_KEY: path.join(dir, 'client.key'),
        TEMPORAL_TLS_CA: path.join(dir, 'ca.pem'),
        TEMPORAL_TLS_SERVER_NAME: 'frontend.internal',
      }),
    );
    expect(options.tls?.clientCertPair?.crt.toString()).toBe('-- client.pem --');
    expect(options.tls?.clientCertPair?.key.toString()).toBe('-- client.key --');
    expect(options.tls?.serverRootCACertificate?.toString()).toBe('-- ca.pem --');
    expect(options.tls?.serverNameOverride).toBe('frontend.internal');
    // Type-level: the same object is accepted by the client (API) and the worker's native connection.
    const native: NativeConnectionOptions = options;
    expect(native.address).toBe('ns.acct.tmprl.cloud:7233');
    const client: ConnectionOptions = options;
    expect(client.apiKey).toBeUndefined();
  });

  it('refuses half an mTLS pair and an unreadable file', () => {
    expect(() => temporalConnectionOptions(config({ TEMPORAL_TLS_CERT: '/nope/client.pem' }))).toThrow(
      /TEMPORAL_TLS_CERT and TEMPORAL_TLS_KEY go together/,
    );
    expect(() =>
      temporalConnectionOptions(config({ TEMPORAL_TLS_CERT: '/nope/client.pem', TEMPORAL_TLS_KEY: '/nope/k' })),
    ).toThrow(/TEMPORAL_TLS_CERT=\/nope\/client.pem cannot be read/);
  });

  it('accepts TEMPORAL_TLS=true alone (a TLS frontend with a public certificate)', () => {
    expect(temporalConnectionOptions(config({ TEMPORAL_TLS: 'true' })).tls).toEqual({});
    expect(() => loadConfig({ TEMPORAL_TLS: 'yes' })).toThrow(/TEMPORAL_TLS/);
  });
});
