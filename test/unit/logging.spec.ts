/**
 * Log lines of the API and the worker (src/logging/logging.ts, src/app.module.ts): one JSON object per line,
 * credential headers redacted, email addresses scrubbed from every line, and the level of each request line.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { ApplicationFailure } from '@temporalio/common';
import { type Logger, pino } from 'pino';
import { type Options, pinoHttp } from 'pino-http';
import { describe, expect, it } from 'vitest';
import { loggerParams, requestLogLevel } from '../../src/app.module.js';
import { loadConfig } from '../../src/config/config.js';
import { baseLoggerOptions, EMAIL_PLACEHOLDER, scrubPersonalData } from '../../src/logging/logging.js';

/** A pino logger with the service's options writing into an array of parsed lines. */
function capture(): { logger: Logger; lines: Array<Record<string, unknown>> } {
  const lines: Array<Record<string, unknown>> = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const options = baseLoggerOptions({ LOG_LEVEL: 'info', LOG_FORMAT: 'json' }, 'test');
  return { logger: pino({ ...options, transport: undefined }, sink), lines };
}

describe('personal data in logs', () => {
  it('replaces email addresses and leaves connection strings and worker identities alone', () => {
    expect(scrubPersonalData('rejected Ada.Lovelace+shop@example.co.uk: mailbox full')).toBe(
      `rejected ${EMAIL_PLACEHOLDER}: mailbox full`,
    );
    for (const text of ['postgresql://postgres@127.0.0.1:5432/db', '28384@vm-d04d27fedc', 'order-5b0e']) {
      expect(scrubPersonalData(text)).toBe(text);
    }
  });

  it('writes one JSON line per event without emails or credentials', () => {
    const { logger, lines } = capture();
    logger.warn(
      {
        orderId: 'o-1',
        err: new Error('provider said: ada@example.com does not exist'),
        req: { headers: { authorization: 'Bearer secret-token', cookie: 'sid=1', 'x-api-key': 'k', accept: '*/*' } },
      },
      'send failed for grace@example.com',
    );
    expect(lines).toHaveLength(1);
    const text = JSON.stringify(lines[0]);
    expect(text).not.toMatch(/@example\.com|secret-token|sid=1/);
    expect(lines[0]).toMatchObject({
      level: 40,
      name: 'test',
      orderId: 'o-1',
      msg: `send failed for ${EMAIL_PLACEHOLDER}`,
      req: { headers: { authorization: '[Redacted]', cookie: '[Redacted]', 'x-api-key': '[Redacted]', accept: '*/*' } },
    });
    expect((lines[0]!.err as { message: string }).message).toBe(`provider said: ${EMAIL_PLACEHOLDER} does not exist`);
  });

  it('names the Temporal failure type of an ApplicationFailure', () => {
    const { logger, lines } = capture();
    logger.warn({ err: ApplicationFailure.nonRetryable('no stock', 'InsufficientStockError') }, 'Activity failed');
    expect(lines[0]!.err).toMatchObject({ type: 'ApplicationFailure', failureType: 'InsufficientStockError' });
  });
});

describe('request log level', () => {
  const req = (method: string) => ({ method }) as IncomingMessage;
  const res = (statusCode: number) => ({ statusCode }) as ServerResponse;

  it('logs successful reads at debug, writes and client errors at info, server errors at error', () => {
    expect(requestLogLevel(req('GET'), res(200))).toBe('debug');
    expect(requestLogLevel(req('GET'), res(404))).toBe('info');
    expect(requestLogLevel(req('POST'), res(202))).toBe('info');
    expect(requestLogLevel(req('POST'), res(409))).toBe('info');
    expect(requestLogLevel(req('GET'), res(503))).toBe('error');
    expect(requestLogLevel(req('POST'), res(200), new Error('x'))).toBe('error');
  });
});

describe('API request lines', () => {
  it('carry the request id on every line and the client once per line, and no headers or addresses', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const raw: string[] = [];
    const sink = new Writable({
      write(chunk, _encoding, done) {
        for (const line of String(chunk).split('\n').filter(Boolean)) {
          raw.push(line);
          lines.push(JSON.parse(line));
        }
        done();
      },
    });
    const config = loadConfig({ LOG_LEVEL: 'info', LOG_FORMAT: 'json' });
    const middleware = pinoHttp(loggerParams(config).pinoHttp as Options, sink);
    const server = createServer((req, res) => {
      middleware(req, res);
      // Before authentication the client is not known yet: no `client` (not a wrong `anonymous`).
      req.log.warn({ orderId: 'o-1' }, 'before authentication');
      // What the authentication guard does (src/auth/auth.guard.ts, through nestjs-pino's request-scoped logger).
      if (req.url?.startsWith('/orders')) req.apiClient = { id: 'shop-a', keyId: 'of_dev_abcdefgh', scopes: [] };
      req.log = req.log.child({ client: req.apiClient?.id ?? 'anonymous' });
      req.log.warn({ orderId: 'o-1' }, 'inside the handler');
      res.statusCode = 202;
      res.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await fetch(`http://127.0.0.1:${port}/orders?x=1`, {
      method: 'POST',
      headers: { 'x-request-id': 'req-123', authorization: 'Bearer secret' },
    });
    // A request without a key (a public route, or one answered 401) stays `anonymous`.
    await fetch(`http://127.0.0.1:${port}/inventory/MUG`, { method: 'PUT', headers: { 'x-request-id': 'req-456' } });
    await new Promise<void>((resolve) => server.close(() => resolve()));

    expect(lines.map((l) => [l.msg, l.client])).toEqual([
      ['before authentication', undefined],
      ['inside the handler', 'shop-a'],
      ['request completed', 'shop-a'],
      ['before authentication', undefined],
      ['inside the handler', 'anonymous'],
      ['request completed', 'anonymous'],
    ]);
    for (const line of lines.slice(0, 3)) {
      expect(line).toMatchObject({ req: { id: 'req-123', method: 'POST', url: '/orders?x=1' } });
      expect(line.req).not.toHaveProperty('headers');
      expect(line.req).not.toHaveProperty('remoteAddress');
    }
    // Never two `client` members with two values in one line.
    for (const line of raw) expect(line.match(/"client":/g)?.length ?? 0, line).toBeLessThanOrEqual(1);
    expect(JSON.stringify(lines)).not.toContain('secret');
  });
});
