/**
 * An HTTP proxy in front of one provider that answers the first request of each `Idempotency-Key` with a 502 problem
 * without forwarding it (a gateway that failed before the provider: to the caller the outcome looks unknown, yet
 * nothing was performed), and forwards every later request to the provider as it is. The scenario of issue 20: only a
 * later answer under the same key can tell the caller that nothing happened. Used by test/e2e/doubts.e2e-spec.ts and,
 * run alone (`npx tsx test/helpers/first-request-proxy.ts <port> <target base URL>`), in front of `npm start`'s
 * simulator.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A running proxy. */
export interface FirstRequestProxy {
  /** `http://127.0.0.1:<port>`: the provider's base URL to configure (its paths are forwarded as they are). */
  url: string;
  /** How many requests each key has had (the first was answered 502 here, the rest were forwarded). */
  requests: Map<string, number>;
  /** Where requests are forwarded: the provider's base URL (settable after start, e.g. once a simulator runs). */
  target: string;
  close(): Promise<void>;
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * Starts the proxy on `port` (0: any free one) of 127.0.0.1.
 * @param target the provider's base URL, e.g. `http://127.0.0.1:4010/email` (may be set later through `target`).
 */
export async function startFirstRequestProxy(target = '', port = 0): Promise<FirstRequestProxy> {
  const requests = new Map<string, number>();
  const proxy: FirstRequestProxy = { url: '', requests, target, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await bodyOf(req);
      const key = req.headers['idempotency-key'];
      const seen = typeof key === 'string' ? (requests.get(key) ?? 0) + 1 : 0;
      if (typeof key === 'string') requests.set(key, seen);
      if (seen === 1) {
        res.writeHead(502, { 'content-type': 'application/problem+json' });
        res.end(JSON.stringify({ title: 'Bad gateway', status: 502, detail: 'the upstream did not answer' }));
        return;
      }
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(req.headers)) {
        if (typeof value === 'string' && !['host', 'content-length', 'connection'].includes(name)) {
          headers[name] = value;
        }
      }
      const upstream = await fetch(`${proxy.target.replace(/\/+$/, '')}${req.url ?? ''}`, {
        method: req.method ?? 'GET',
        headers,
        ...(body.length > 0 ? { body } : {}),
      });
      const answer = Buffer.from(await upstream.arrayBuffer());
      res.writeHead(upstream.status, { 'content-type': upstream.headers.get('content-type') ?? 'application/json' });
      res.end(answer);
    })().catch((err: unknown) => {
      res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () => new Promise<void>((resolve) => server.close(() => resolve()));
  return proxy;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [port, target] = process.argv.slice(2);
  if (!port || !target) throw new Error('usage: tsx test/helpers/first-request-proxy.ts <port> <target base URL>');
  const proxy = await startFirstRequestProxy(target, Number(port));
  console.log(`first-request proxy on ${proxy.url} → ${target}`);
}
