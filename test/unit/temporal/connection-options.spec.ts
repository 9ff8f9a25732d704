/** The one builder of Temporal connection options (API, worker, scripts): plain, TLS, mTLS, API key. */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/config.js';
import { describeConnectionOptions, temporalConnectionOptions } from '../../../src/temporal/connection-options.js';

const files: Record<string, string> = { '/ca.pem': 'CA', '/client.pem': 'CRT', '/client.key': 'KEY', '/empty.pem': '' };
const readFile = (path: string): Buffer => {
  if (!(path in files)) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
  return Buffer.from(files[path]!);
};
const build = (env: Record<string, string>) => temporalConnectionOptions(loadConfig(env), readFile);

describe('temporalConnectionOptions', () => {
  it('the dev server: plain gRPC, nothing else', () => {
    expect(build({})).toEqual({ address: '127.0.0.1:7233' });
  });

  it('TLS with a private CA and a server name', () => {
    const options = build({
      TEMPORAL_ADDRESS: 'temporal.internal:7233',
      TEMPORAL_TLS: 'true',
      TEMPORAL_TLS_CA_PATH: '/ca.pem',
      TEMPORAL_TLS_SERVER_NAME: 'frontend.temporal.internal',
    });
    expect(options).toEqual({
      address: 'temporal.internal:7233',
      tls: { serverRootCACertificate: Buffer.from('CA'), serverNameOverride: 'frontend.temporal.internal' },
    });
  });

  it('mTLS: the client certificate pair turns TLS on by itself', () => {
    const options = build({ TEMPORAL_TLS_CERT_PATH: '/client.pem', TEMPORAL_TLS_KEY_PATH: '/client.key' });
    expect(options.tls).toEqual({ clientCertPair: { crt: Buffer.from('CRT'), key: Buffer.from('KEY') } });
  });

  it('Temporal Cloud API key: TLS with the system roots and the key', () => {
    const options = build({ TEMPORAL_ADDRESS: 'eu-west-1.aws.api.temporal.io:7233', TEMPORAL_API_KEY: 'secret' });
    expect(options).toEqual({ address: 'eu-west-1.aws.api.temporal.io:7233', tls: {}, apiKey: 'secret' });
    expect(JSON.stringify(describeConnectionOptions(options))).not.toContain('secret');
  });

  it.each([
    [
      { TEMPORAL_TLS: 'true', TEMPORAL_TLS_CA_PATH: '/missing.pem' },
      'TEMPORAL_TLS_CA_PATH',
      /cannot read \/missing.pem \(ENOENT\)/,
    ],
    [
      { TEMPORAL_TLS_CERT_PATH: '/empty.pem', TEMPORAL_TLS_KEY_PATH: '/client.key' },
      'TEMPORAL_TLS_CERT_PATH',
      /is empty/,
    ],
  ])('an unreadable certificate file stops the process naming its variable (%#)', (env, variable, message) => {
    let err: unknown;
    try {
      build(env);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).variables).toEqual([variable]);
    expect((err as ConfigError).message).toMatch(message);
  });
});
