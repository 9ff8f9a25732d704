/**
 * The simulator process's server: one HTTP server that serves every provider's simulator
 * (idempotent-simulator.ts) under `/<name>`, with the process's own `GET /_sim/health` and `POST /_sim/reset`
 * (simulators/main.ts; tests start one in-process on port 0 with {@link startSimulators}).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express, { type NextFunction, type Request, type Response } from 'express';
import type { ProviderDefinition } from '../../providers/kit/define.js';
import { createProviderSimulator, type ProviderSimulatorControl } from './idempotent-simulator.js';
import { HttpProblem, problem, sendProblem } from './problem.js';

/** A simulated provider listening on a real port (under its path): its control and its base URL. */
export interface RunningSimulator extends ProviderSimulatorControl {
  /** The provider's base URL, e.g. `http://127.0.0.1:40123/email` (no trailing slash). */
  url: string;
  port: number;
  /** Stops the whole simulator process's server (every provider). Idempotent. */
  close(): Promise<void>;
}

/** Thrown into pending `slow` waits when the simulator closes. */
class SimulatorClosedError extends Error {}

/** Options of {@link startSimulators}. */
export interface SimulatorsOptions {
  /** Interface to bind. Default `127.0.0.1`. */
  host?: string;
  /** TCP port; 0 (the default) picks a free one. */
  port?: number;
  /** Bearer token each provider accepts, by provider name; a provider without one accepts any bearer token. */
  apiKeys?: Readonly<Record<string, string | undefined>>;
  /**
   * The settings the providers' simulations read (`SimulateContext.settings`, e.g. `WAREHOUSE_PACK_DELAY_MS`): the
   * process environment in simulators/main.ts; none by default (a test sets what it needs, or `configure`s it).
   */
  settings?: Readonly<Record<string, string | undefined>>;
}

/** The simulator process's server: every provider under `/<name>`. */
export interface RunningSimulators {
  /** Base URL of the server, e.g. `http://127.0.0.1:4010` (no trailing slash). */
  url: string;
  port: number;
  /** Each provider's simulator, by name. */
  providers: Readonly<Record<string, RunningSimulator>>;
  /**
   * The simulator of `name`.
   * @throws Error when no such provider is served.
   */
  provider(name: string): RunningSimulator;
  /** Clears every provider's ledger, stored responses, faults and state. */
  reset(): void;
  /** Stops listening, drops open connections and cancels pending `slow` waits. Idempotent. */
  close(): Promise<void>;
}

/**
 * Starts one HTTP server that simulates every provider of `providers`, each under `/<name>` with its control API
 * at `/<name>/_sim`.
 * @returns once the server listens; `url` carries the actual port (useful with `port: 0`).
 * @throws the listen error (e.g. `EADDRINUSE`).
 */
export async function startSimulators(
  providers: readonly ProviderDefinition[],
  options: SimulatorsOptions = {},
): Promise<RunningSimulators> {
  const host = options.host ?? '127.0.0.1';
  const closing = new AbortController();
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(express.json({ limit: '1mb', type: ['application/json', 'application/*+json'] }));

  const controls: ProviderSimulatorControl[] = [];
  app.get('/_sim/health', (_req, res) => {
    res.json({ status: 'ok', providers: providers.map((p) => p.name) });
  });
  app.post('/_sim/reset', (_req, res) => {
    for (const control of controls) control.reset();
    res.status(204).end();
  });
  for (const provider of providers) {
    const apiKey = options.apiKeys?.[provider.name];
    const sim = createProviderSimulator(
      provider,
      { ...(apiKey === undefined ? {} : { apiKey }), ...(options.settings ? { settings: options.settings } : {}) },
      closing.signal,
    );
    app.use(`/${provider.name}`, sim.router);
    controls.push(sim.control);
  }
  app.use((req: Request, res: Response) => {
    sendProblem(res, problem(404, 'not-found', 'Not found', `No route for ${req.method} ${req.path}.`));
  });
  // Express recognises error middleware by its four parameters.
  app.use((error: unknown, _req: Request, res: Response, _next: NextFunction) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (error instanceof HttpProblem) {
      sendProblem(res, error.toJSON());
      return;
    }
    const status = httpErrorStatus(error);
    if (status !== undefined && status >= 400 && status < 500) {
      const detail = error instanceof Error ? error.message : 'Malformed request.';
      sendProblem(res, problem(status, 'bad-request', 'Bad request', detail));
      return;
    }
    sendProblem(
      res,
      problem(500, 'internal-error', 'Internal error', error instanceof Error ? error.message : String(error)),
    );
  });

  const server = createServer(app);
  await listen(server, options.port ?? 0, host);
  const port = (server.address() as AddressInfo).port;
  const urlHost = host.includes(':') ? `[${host}]` : host;
  const url = `http://${urlHost}:${port}`;

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve, reject) => {
      closing.abort(new SimulatorClosedError('simulator closed'));
      server.close((error) => (error ? reject(error) : resolve()));
      server.closeAllConnections();
    });
    return closed;
  };

  const running: Record<string, RunningSimulator> = Object.fromEntries(
    controls.map((control) => [control.name, { ...control, url: `${url}/${control.name}`, port, close }]),
  );
  return {
    url,
    port,
    providers: running,
    provider(name) {
      const sim = running[name];
      if (!sim) throw new Error(`no simulated provider ${name} (served: ${Object.keys(running).join(', ')})`);
      return sim;
    },
    reset: () => controls.forEach((c) => c.reset()),
    close,
  };
}

/** The `status` of errors raised by body-parser/http-errors (e.g. 400 for malformed JSON, 413, 415). */
function httpErrorStatus(error: unknown): number | undefined {
  if (error !== null && typeof error === 'object' && 'status' in error && typeof error.status === 'number') {
    return error.status;
  }
  return undefined;
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error): void => reject(error);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      resolve();
    });
  });
}
