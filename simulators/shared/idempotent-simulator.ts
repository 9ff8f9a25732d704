/**
 * The simulated providers: small, real HTTP servers that behave like hosted providers (bearer authentication,
 * `Idempotency-Key` semantics, a ledger of side effects per key, injectable faults), one per provider definition
 * (providers/<name>.provider.ts), all served by one process under `/<name>` (simulator-server.ts: simulators/main.ts;
 * tests start one in-process on port 0 with its `startSimulators`). The faults are in faults.ts.
 *
 * Idempotency rules (draft-ietf-httpapi-idempotency-key-header, "the draft" below), applied to every
 * effectful route (the provider's operations):
 * - no `Idempotency-Key` header → 400 problem+json (draft §2.7);
 * - same key, same fingerprint (method, request target, canonical JSON body) and the first request has
 *   completed → the stored status and body are replayed with `Idempotent-Replayed: true`, no new effect;
 * - same key, different fingerprint → 422 problem+json (draft §2.7);
 * - same key while the first request is still being processed → 409 problem+json (draft §2.7).
 * A definition's simulated answer may take time (`delayMs`): the effect is performed at once and the answer sent
 * after the wait, the key in flight (409) meanwhile. An operation whose path members travel in the path only
 * (`paramsInBody: false`) is validated with them merged into its JSON object body.
 * Keys are scoped to the provider (it has one client). Stored responses are kept until `POST /_sim/reset`
 * or process exit (the retention this simulator publishes). Like hosted providers do, a request that fails
 * validation or that meets an error fault stores nothing, so the key may be used again.
 *
 * Authentication (RFC 6750): every provider route needs `Authorization: Bearer <token>`; a missing header,
 * or a token other than the configured `apiKey`, is answered 401 with `WWW-Authenticate: Bearer`.
 * The `/_sim` control API needs no credentials.
 *
 * Control API of each provider, under `/<name>`:
 * - `GET /_sim/health` → 200 `{ status: 'ok', name }`
 * - `GET /_sim/ledger` → `{ effects: LedgerEffect[], countsByKey: { [key]: n } }`
 * - `GET /_sim/ledger/:key` (key URL-encoded) → `{ key, count, effects }`
 * - `GET /_sim/faults` → `{ faults: QueuedFault[] }`
 * - `POST /_sim/faults` body {@link FaultSpec} → 201 the {@link QueuedFault}
 * - `DELETE /_sim/faults` → 204
 * - `POST /_sim/reset` → 204 (clears ledger, stored responses, faults and the provider's own state)
 * and of the whole process: `GET /_sim/health` → `{ status: 'ok', providers: [names] }`, `POST /_sim/reset` (all).
 */
import { randomBytes, randomInt, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import {
  IDEMPOTENCY_KEY_MAX_LENGTH,
  IdempotencyKeyHeaderError,
  parseIdempotencyKeyHeader,
  requestFingerprint,
} from '../../src/idempotency/idempotency-protocol.js';
import {
  SimulatedRefusal,
  type OperationDefinition,
  type ProviderDefinition,
  type SimulateContext,
} from '../../providers/kit/define.js';
import { DEFAULT_SLOW_DELAY_MS, FaultMode, faultSpecSchema, type FaultSpec, type QueuedFault } from './faults.js';
import { HttpProblem, problem, sendProblem, type ProblemDetails } from './problem.js';

/** Longest accepted `Idempotency-Key` value, in characters (the limit hosted providers commonly publish). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = IDEMPOTENCY_KEY_MAX_LENGTH;

/** A response as stored for replay: HTTP status and JSON body. */
export interface StoredResponse {
  status: number;
  body: unknown;
}

/** One side effect the simulator performed, recorded under the idempotency key that caused it. */
export interface LedgerEffect {
  /** The `Idempotency-Key` of the request. */
  key: string;
  /** Unique id of this effect, `eff_<hex>`. */
  effectId: string;
  /** What happened, e.g. `email.sent`, `invoice.created`. */
  kind: string;
  /** When it happened, ISO 8601. */
  at: string;
  /** The request's JSON body. */
  request: unknown;
  /** The response the request produced (also what replays return). */
  response: StoredResponse;
}

/** Options of one provider's simulator. */
export interface ProviderSimulatorOptions {
  /** When set, the only bearer token accepted; otherwise any non-empty bearer token is accepted. */
  apiKey?: string;
  /** The settings its operations read (`SimulateContext.settings`), e.g. the process environment. */
  settings?: Readonly<Record<string, string | undefined>>;
}

/** Read access to the effect ledger. */
export interface SimulatorLedger {
  /** All effects in the order they happened, or only those of `key`. Copies. */
  effects(key?: string): LedgerEffect[];
  /** Number of effects recorded under `key` (0 when none). */
  count(key: string): number;
  /** `{ [key]: number of effects }` over every key with at least one effect. */
  countsByKey(): Record<string, number>;
}

/** The control of one simulated provider (what `/<name>/_sim` offers, in-process). */
export interface ProviderSimulatorControl {
  name: string;
  ledger: SimulatorLedger;
  /** Queues a fault, like `POST /_sim/faults`. @throws ZodError when `spec` is invalid. */
  injectFault(spec: FaultSpec): QueuedFault;
  /** Removes every queued fault, like `DELETE /_sim/faults`. */
  clearFaults(): void;
  /** Clears ledger, stored responses, faults and provider state, like `POST /_sim/reset`. */
  reset(): void;
  /** Idempotency keys whose first request is still being processed (their retries get 409). */
  inFlightKeys(): string[];
  /** The simulated provider's records (e.g. shipments by id), as its operations stored them. */
  state(): ReadonlyMap<string, unknown>;
  /**
   * Overrides settings its operations read, like `POST /_sim/settings` (kept across a reset); an empty string unsets
   * an override. @returns the settings in force.
   */
  configure(settings: Readonly<Record<string, string>>): Record<string, string | undefined>;
  /** Runs one of the provider's {@link ProviderDefinition.simulatorActions}, like `POST /_sim/actions/<name>`. */
  act(name: string, body: unknown): { status: number; body: unknown };
}
/** Idempotency record of one key. */
type KeyRecord =
  { state: 'processing'; fingerprint: string } | { state: 'done'; fingerprint: string; response: StoredResponse };
/** Setting names whose values `POST /_sim/settings` never shows (e.g. `WAREHOUSE_CALLBACK_API_KEY`). */
const SECRET = /KEY|SECRET|TOKEN|PASSWORD/;

/** `<prefix>_<24 hex digits>`. */
function newId(prefix: string): string {
  return `${prefix}_${randomBytes(12).toString('hex')}`;
}

/** `length` random characters of `alphabet`. */
function randomText(length: number, alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ'): string {
  let text = '';
  for (let i = 0; i < length; i++) text += alphabet[randomInt(alphabet.length)];
  return text;
}

/**
 * The body an operation's request schema sees: for an operation whose path members travel in the path only
 * (`paramsInBody: false`), a JSON object body with the path's parameters merged in; otherwise the body as sent.
 */
function withPathParams(operation: OperationDefinition, body: unknown, params: Record<string, string>): unknown {
  if (operation.paramsInBody !== false || body === null || typeof body !== 'object' || Array.isArray(body)) return body;
  return { ...body, ...params };
}

/** A validated request, or the 422 problem listing its issues. */
function validate(operation: OperationDefinition, body: unknown): unknown {
  const parsed = operation.request.safeParse(body);
  if (parsed.success) return parsed.data;
  throw new HttpProblem(422, 'validation-failed', 'Validation failed', z.prettifyError(parsed.error), {
    errors: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
  });
}

/** A {@link SimulatedRefusal} as the problem it answers with. */
function refusalProblem(error: SimulatedRefusal): HttpProblem {
  const title =
    error.status === 404
      ? 'Not found'
      : error.status === 422
        ? 'Validation failed'
        : error.status === 402
          ? 'Payment refused'
          : 'Request refused';
  return new HttpProblem(error.status, error.slug, title, error.detail, error.extensions);
}

/**
 * The simulator of one provider definition: an Express router with its operations (guarded by authentication,
 * idempotency and faults), its reads, and its `/_sim` control API, plus the same control in-process.
 * @param closing aborts pending `slow` waits when the server closes.
 */
export function createProviderSimulator(
  provider: ProviderDefinition,
  options: ProviderSimulatorOptions,
  closing: AbortSignal,
): { router: Router; control: ProviderSimulatorControl } {
  const records = new Map<string, KeyRecord>();
  const ledger: LedgerEffect[] = [];
  const state = new Map<string, unknown>();
  let faults: QueuedFault[] = [];

  const ledgerApi: SimulatorLedger = {
    effects: (key) => (key === undefined ? [...ledger] : ledger.filter((e) => e.key === key)),
    count: (key) => ledger.reduce((n, e) => (e.key === key ? n + 1 : n), 0),
    countsByKey: () => {
      const counts: Record<string, number> = {};
      for (const e of ledger) counts[e.key] = (counts[e.key] ?? 0) + 1;
      return counts;
    },
  };

  const injectFault = (spec: FaultSpec): QueuedFault => {
    const parsed = faultSpecSchema.parse(spec);
    const fault: QueuedFault = {
      id: `flt_${randomUUID().replace(/-/g, '').slice(0, 12)}`,
      mode: parsed.mode,
      remaining: parsed.times ?? 1,
      delayMs: parsed.delayMs ?? DEFAULT_SLOW_DELAY_MS,
      ...(parsed.keyPrefix === undefined ? {} : { keyPrefix: parsed.keyPrefix }),
    };
    faults.push(fault);
    return { ...fault };
  };
  const clearFaults = (): void => {
    faults = [];
  };
  const overrides: Record<string, string> = {};
  const settings = (): Record<string, string | undefined> => ({ ...(options.settings ?? {}), ...overrides });
  const configure = (changes: Readonly<Record<string, string>>): Record<string, string | undefined> => {
    for (const [name, value] of Object.entries(changes)) {
      if (value === '') delete overrides[name];
      else overrides[name] = value;
    }
    return settings();
  };
  /** Tasks scheduled with `later`, cancelled by a reset or when the simulator closes. */
  const timers = new Set<NodeJS.Timeout>();
  const later = (delayMs: number, task: () => Promise<void>): void => {
    if (closing.aborted) return;
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (closing.aborted) return;
      task().catch((error: unknown) => console.error(`${provider.name} simulator: a scheduled task failed:`, error));
    }, delayMs);
    timers.add(timer);
  };
  closing.addEventListener('abort', () => {
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
  });
  const act = (name: string, body: unknown): { status: number; body: unknown } => {
    const action = Object.hasOwn(provider.simulatorActions ?? {}, name) ? provider.simulatorActions![name] : undefined;
    if (!action) throw new HttpProblem(404, 'not-found', 'Not found', `${provider.name} has no action "${name}".`);
    try {
      return action.run({ body, state });
    } catch (error) {
      if (error instanceof SimulatedRefusal) throw refusalProblem(error);
      throw error;
    }
  };
  const reset = (): void => {
    records.clear();
    ledger.length = 0;
    state.clear();
    clearFaults();
    for (const timer of timers) clearTimeout(timer);
    timers.clear();
  };

  /** Takes one use of the first queued fault matching `key`, if any. */
  const consumeFault = (key: string): QueuedFault | undefined => {
    const fault = faults.find((f) => f.keyPrefix === undefined || key.startsWith(f.keyPrefix));
    if (!fault) return undefined;
    fault.remaining -= 1;
    if (fault.remaining <= 0) faults = faults.filter((f) => f !== fault);
    return fault;
  };

  const router = express.Router();

  // ---- control API ---------------------------------------------------------------------------------
  const control = express.Router();
  control.get('/health', (_req, res) => {
    res.json({ status: 'ok', name: provider.name });
  });
  control.get('/ledger', (_req, res) => {
    res.json({ effects: ledgerApi.effects(), countsByKey: ledgerApi.countsByKey() });
  });
  control.get('/ledger/:key', (req, res) => {
    const key = String(req.params.key);
    const effects = ledgerApi.effects(key);
    res.json({ key, count: effects.length, effects });
  });
  control.get('/faults', (_req, res) => {
    res.json({ faults: faults.map((f) => ({ ...f })) });
  });
  control.post('/faults', (req, res) => {
    const parsed = faultSpecSchema.safeParse(req.body ?? {});
    if (!parsed.success) {
      sendProblem(
        res,
        problem(400, 'invalid-fault', 'Invalid fault', z.prettifyError(parsed.error), {
          errors: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
        }),
      );
      return;
    }
    res.status(201).json(injectFault(parsed.data));
  });
  control.delete('/faults', (_req, res) => {
    clearFaults();
    res.status(204).end();
  });
  control.post('/reset', (_req, res) => {
    reset();
    res.status(204).end();
  });
  control.post('/settings', (req, res) => {
    const parsed = z.record(z.string().regex(/^[A-Z][A-Z0-9_]*$/), z.string().max(2000)).safeParse(req.body ?? {});
    if (!parsed.success) {
      sendProblem(res, problem(400, 'invalid-settings', 'Invalid settings', z.prettifyError(parsed.error)));
      return;
    }
    configure(parsed.data);
    // Only the overrides, never the process environment (its provider keys, paths), and no secret's value.
    const shown = Object.entries(overrides).map(([name, value]) => [name, SECRET.test(name) ? '[redacted]' : value]);
    res.json({ settings: Object.fromEntries(shown) });
  });
  control.post('/actions/:action', (req, res) => {
    const result = act(String(req.params.action), req.body ?? {});
    res.status(result.status).json(result.body);
  });
  router.use('/_sim', control);

  // ---- provider API --------------------------------------------------------------------------------
  /** RFC 6750 bearer check; answers 401 and returns false when it fails. */
  const authorize = (req: Request, res: Response): boolean => {
    const match = /^Bearer[ ]+(\S+)\s*$/i.exec(req.get('authorization') ?? '');
    const token = match?.[1];
    let detail: string | undefined;
    if (token === undefined) detail = 'An Authorization: Bearer <token> header is required.';
    else if (options.apiKey !== undefined && token !== options.apiKey) detail = 'The bearer token is not valid.';
    if (detail === undefined) return true;
    res.set('WWW-Authenticate', `Bearer realm="${provider.name}"`);
    sendProblem(res, problem(401, 'unauthorized', 'Unauthorized', detail));
    return false;
  };

  for (const read of Object.values(provider.reads ?? {})) {
    router.get(read.path, (req, res) => {
      if (!authorize(req, res)) return;
      try {
        const result = read.simulate({ params: stringParams(req.params), state });
        res.status(result.status).json(result.body);
      } catch (error) {
        if (error instanceof SimulatedRefusal) throw refusalProblem(error);
        throw error;
      }
    });
  }

  for (const operation of Object.values(provider.operations) as OperationDefinition[]) {
    const method = operation.method.toLowerCase() as 'post' | 'put';
    router[method](operation.path, async (req, res) => {
      if (!authorize(req, res)) return;

      const key = parseIdempotencyKey(req.headersDistinct['idempotency-key']);
      if (typeof key !== 'string') {
        sendProblem(res, key);
        return;
      }

      const fingerprint = requestFingerprint({ method: req.method, target: req.originalUrl, body: req.body });
      const existing = records.get(key);
      if (existing && existing.fingerprint !== fingerprint) {
        sendProblem(
          res,
          problem(
            422,
            'idempotency-key-reused',
            'Idempotency key reused with a different request',
            `Idempotency-Key "${key}" was first used with a different method, path or body.`,
          ),
        );
        return;
      }
      if (existing?.state === 'processing') {
        sendProblem(
          res,
          problem(
            409,
            'idempotency-key-in-flight',
            'Request with this idempotency key is in progress',
            `A request with Idempotency-Key "${key}" is still being processed; retry later.`,
          ),
        );
        return;
      }

      const fault = consumeFault(key);
      switch (fault?.mode) {
        case FaultMode.Unavailable:
          res.set('Retry-After', '1');
          sendProblem(
            res,
            problem(503, 'unavailable', 'Service unavailable', 'Injected fault: the provider is unavailable.'),
          );
          return;
        case FaultMode.Reject:
          sendProblem(
            res,
            problem(422, 'rejected', 'Request rejected', 'Injected fault: the provider rejected the request.'),
          );
          return;
        case FaultMode.Unauthorized:
          res.set('WWW-Authenticate', `Bearer realm="${provider.name}", error="invalid_token"`);
          sendProblem(
            res,
            problem(401, 'unauthorized', 'Unauthorized', 'Injected fault: the credentials were refused.'),
          );
          return;
        default:
          break;
      }

      if (existing?.state === 'done') {
        if (fault?.mode === FaultMode.Slow && !(await wait(fault.delayMs, closing))) return;
        if (fault?.mode === FaultMode.DropResponse) {
          dropResponse(req);
          return;
        }
        res.set('Idempotent-Replayed', 'true');
        res.status(existing.response.status).json(existing.response.body);
        return;
      }

      records.set(key, { state: 'processing', fingerprint });
      let result: ReturnType<OperationDefinition['simulate']>;
      try {
        if (fault?.mode === FaultMode.Slow && !(await wait(fault.delayMs, closing))) {
          records.delete(key);
          return;
        }
        const params = stringParams(req.params);
        const context: SimulateContext<unknown> = {
          key,
          request: validate(operation, withPathParams(operation, req.body, params)),
          params,
          state,
          newId,
          randomText,
          settings: settings(),
          later,
        };
        result = operation.simulate(context);
      } catch (error) {
        records.delete(key);
        if (error instanceof SimulatedRefusal) throw refusalProblem(error);
        throw error;
      }

      const response: StoredResponse = { status: result.status, body: result.body };
      ledger.push({
        key,
        effectId: `eff_${randomUUID().replace(/-/g, '')}`,
        kind: result.effect,
        at: new Date().toISOString(),
        request: req.body,
        response,
      });
      // A slow provider: it acted, and answers later; until then the key is in flight (a retry gets 409).
      if (result.delayMs && !(await wait(result.delayMs, closing))) return;
      records.set(key, { state: 'done', fingerprint, response });

      if (fault?.mode === FaultMode.DropResponse) {
        dropResponse(req);
        return;
      }
      res.status(response.status).json(response.body);
    });
  }

  router.use((req: Request, res: Response) => {
    sendProblem(res, problem(404, 'not-found', 'Not found', `No route for ${req.method} ${req.originalUrl}.`));
  });

  return {
    router,
    control: {
      name: provider.name,
      ledger: ledgerApi,
      injectFault,
      clearFaults,
      reset,
      inFlightKeys: () => [...records].filter(([, r]) => r.state === 'processing').map(([key]) => key),
      state: () => state,
      configure,
      act,
    },
  };
}
/**
 * Reads the `Idempotency-Key` header with the API's parser (src/idempotency/idempotency-protocol.ts: an RFC 8941
 * sf-string, or the bare key hosted providers also accept; exactly one header line).
 * @param lines the header's lines as received (`req.headersDistinct['idempotency-key']`).
 * @returns the key, or a 400 problem when it is missing (`idempotency-key-missing`: this API requires it) or not
 *   exactly one valid key of at most {@link MAX_IDEMPOTENCY_KEY_LENGTH} visible ASCII characters
 *   (`idempotency-key-invalid`).
 */
export function parseIdempotencyKey(lines: string | readonly string[] | undefined): string | ProblemDetails {
  let key: string | undefined;
  try {
    key = parseIdempotencyKeyHeader(lines);
  } catch (error) {
    if (!(error instanceof IdempotencyKeyHeaderError)) throw error;
    return problem(400, 'idempotency-key-invalid', 'Idempotency-Key header invalid', `${error.message}.`);
  }
  if (key === undefined) {
    return problem(
      400,
      'idempotency-key-missing',
      'Idempotency-Key header missing',
      'This operation is idempotent and requires an Idempotency-Key header (draft-ietf-httpapi-idempotency-key-header).',
    );
  }
  return key;
}

/** Waits `ms`; resolves false instead when `signal` aborts first (the simulator closed). */
async function wait(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch (error) {
    if (signal.aborted) return false;
    throw error;
  }
}

/** Ends the exchange without an answer: the client sees the connection reset or closed. */
function dropResponse(req: Request): void {
  req.socket.destroy();
}

function stringParams(params: Request['params']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(params as Record<string, unknown>)) {
    out[name] = Array.isArray(value) ? value.join('/') : String(value);
  }
  return out;
}
