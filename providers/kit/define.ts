/**
 * A provider is a definition: its name, its operations (method, path, request and response schemas, the id of the
 * effect, and how its simulator answers), its limits and its settings. Everything else is derived from it:
 * - its HTTP client (./client.ts `createProviderClient`, over the shared call of ./http.ts that sends the
 *   `Idempotency-Key` and the bearer token and classifies every failure: the worker's only, the API calls no
 *   provider);
 * - its configuration variables (`<NAME>_PROVIDER_URL`, `<NAME>_PROVIDER_API_KEY` and its settings, with their
 *   fail-closed production entries: src/config/provider-config.ts);
 * - its simulator (one process serves every defined provider under `/<name>`: simulators/);
 * - its test fake (test/helpers/fake-providers.ts: the same `simulate` functions without HTTP);
 * - its task queue and the limits Temporal enforces there (src/worker/).
 *
 * Definitions import nothing but zod and this kit, so every process (worker, simulator, tests, docs tables) can read
 * them. See docs/extending.md.
 */
import type { z } from 'zod';
import { ProviderError } from './errors.js';

/** HTTP method of an effectful provider operation. */
export type EffectMethod = 'POST' | 'PUT';

/** What a simulated operation sees: the request as its provider would (validated), and the provider's own state. */
export interface SimulateContext<Req> {
  /** The request's `Idempotency-Key`. */
  key: string;
  /** The validated request body. */
  request: Req;
  /** Path parameters of the route, decoded (e.g. `{ externalId: 'INV-000042' }`). */
  params: Record<string, string>;
  /** The simulated provider's records (e.g. invoices by external id), cleared by `POST /_sim/reset`. */
  state: Map<string, unknown>;
  /** A fresh random id: `<prefix>_<24 hex digits>`. */
  newId(prefix: string): string;
  /** `length` random characters of `alphabet` (default upper-case letters and digits). */
  randomText(length: number, alphabet?: string): string;
  /**
   * The simulator's settings: its process environment overlaid with `POST /<name>/_sim/settings` (e.g. the warehouse's
   * `WAREHOUSE_PACK_DELAY_MS`). Absent where no simulator process runs (the test fakes).
   */
  settings?: Readonly<Record<string, string | undefined>>;
  /**
   * Runs `task` in the simulator process after `delayMs` (e.g. a warehouse reporting back by calling our API), unless
   * the provider is reset or the simulator closes first. Absent in the test fakes: they never call back.
   */
  later?(delayMs: number, task: () => Promise<void>): void;
}

/**
 * An action of the provider's own side that the service never calls (e.g. the warehouse starting to pick an order),
 * offered by its simulator at `POST /<name>/_sim/actions/<action>` for tests and drills.
 */
export interface SimulatorAction {
  description: string;
  /** Acts on the provider's state; a {@link SimulatedRefusal} answers as its problem. */
  run(ctx: { body: unknown; state: Map<string, unknown> }): { status: number; body: unknown };
}

/**
 * What a simulated effectful operation answers: an HTTP status (2xx), a JSON body, and the kind of the effect it
 * performed (recorded once in the simulator's ledger under the key, e.g. `sms.sent`).
 */
export interface Simulated {
  status: number;
  body: unknown;
  effect: string;
  /**
   * How long the simulated provider takes to answer, in ms (default 0): the effect is performed at once and the
   * answer sent after the wait, while the key is in flight (a retry meanwhile gets 409). A slow provider (e.g. a
   * payment authorization that takes 3 s) or one that answers after the client gave up (longer than
   * `PROVIDER_TIMEOUT_MS`: every call's outcome is then unknown, which the conformance battery reports).
   */
  delayMs?: number;
}

/**
 * A simulated refusal (4xx) of a request the provider could never accept, answered as a problem document
 * (RFC 9457) with nothing performed and nothing stored for the key.
 */
export class SimulatedRefusal extends Error {
  /**
   * @param status 4xx status, e.g. 404 or 422.
   * @param slug last segment of the problem `type`, e.g. `external-id-mismatch`.
   * @param detail what is wrong with this request.
   * @param extensions extra members of the problem document (RFC 9457 §3.2), e.g. a payment's `declineCode`.
   */
  constructor(
    readonly status: number,
    readonly slug: string,
    readonly detail: string,
    readonly extensions: Record<string, unknown> = {},
  ) {
    super(detail);
    this.name = 'SimulatedRefusal';
  }
}

/**
 * One effectful operation of a provider: a POST or PUT with a JSON body, performed at most once per
 * `Idempotency-Key` by the provider (draft-ietf-httpapi-idempotency-key-header).
 */
export interface OperationDefinition<Req = unknown, Res = unknown> {
  /** One line for the docs: what the provider does. */
  description: string;
  method: EffectMethod;
  /**
   * Path under the provider's base URL, Express style: `:name` segments are filled from the request's members of
   * that name (percent-encoded), e.g. `/v1/invoices/:externalId` or `/v1/authorizations/:authorizationId/capture`.
   */
  path: string;
  /**
   * Whether the members that fill the path are also sent in the JSON body (default true: e.g. an upsert by id whose
   * body repeats the id). `false`: they travel in the path only (e.g. a capture whose body has only an amount); the
   * simulator then validates the body with the path's parameters (strings) merged in, so the request schema still
   * names them.
   */
  paramsInBody?: boolean;
  /** Schema of the request body (the simulator answers 422 with the issues when it does not parse). */
  request: z.ZodType<Req>;
  /** Schema of the 2xx answer (the client treats an answer that does not parse as `unavailable`). */
  response: z.ZodType<Res>;
  /** The provider's id of the effect in its answer (recorded on the claim), e.g. `(res) => res.id`. */
  providerId(response: Res): string;
  /**
   * The body the client sends, from the caller's request and the provider's settings (default: the request as it
   * is), e.g. to add the configured sender address.
   */
  withSettings?(request: Req, settings: Readonly<Record<string, string>>): Req;
  /**
   * How the simulator performs it: the answer and the effect. Runs at most once per key.
   * @throws SimulatedRefusal for a request the provider would refuse (nothing performed).
   */
  simulate(ctx: SimulateContext<Req>): Simulated;
  /**
   * A valid request and a 2xx answer of the real provider, for the docs and for the generic tests of every provider's
   * client and simulator (test/helpers/provider-samples.ts uses it where no hand-written sample exists).
   */
  example?: OperationExample<Req, Res>;
}

/**
 * An operation's example: a valid request and a 2xx answer. An operation that acts on what another one created (a
 * capture of an authorization) names that operation in `after` and builds its request with `requestFrom` from those
 * examples' answers: the generic tests perform them first, against the simulator, and pass their answer bodies by
 * operation name (against a recording server, their examples' answers).
 */
export interface OperationExample<Req, Res> {
  /** A valid request (for an operation without `after`). */
  request?: Req;
  /** Operations of the same provider whose examples run first, in this order (e.g. `['authorize']`). */
  after?: readonly string[];
  /** The request, from the answer bodies of the `after` operations by operation name (e.g. `earlier.authorize.id`). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  requestFrom?(earlier: Readonly<Record<string, any>>): Req;
  /** A 2xx answer of the real provider. */
  answer: { status: number; body: Res };
}

/**
 * Any operation. Operations of different request and response types must fit one record: `any` is TypeScript's
 * variance escape hatch here (`unknown` would make the record invariant); callers see the precise types through
 * {@link RequestOf} and {@link ResponseOf}.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyOperation = OperationDefinition<any, any>;

/** A read-only route of the simulated provider (GET), e.g. `GET /v1/shipments/:id`. */
export interface ReadDefinition {
  path: string;
  /**
   * The answer (status and body).
   * @throws SimulatedRefusal (e.g. 404 for an unknown id).
   */
  simulate(ctx: { params: Record<string, string>; state: Map<string, unknown> }): { status: number; body: unknown };
}

/**
 * How hard we may use the provider. Temporal enforces both: the provider's activities run on a task queue of their
 * own (`<task queue>.<provider>`), whose workers set `maxTaskQueueActivitiesPerSecond` (a server-side limit across
 * every worker) and `maxConcurrentActivityTaskExecutions` (per worker).
 * See https://docs.temporal.io/develop/worker-performance#task-queue-rate-limiting
 */
export interface ProviderLimits {
  /** Calls per second across every worker (the task queue's rate limit). */
  callsPerSecond: number;
  /** Calls at the same time in one worker process. */
  concurrentCallsPerWorker: number;
}

/** An extra configuration variable of a provider (besides its URL and API key), e.g. the email sender address. */
export interface ProviderSetting {
  /** Environment variable, e.g. `EMAIL_FROM`. */
  env: string;
  description: string;
  /** Development default. */
  default: string;
  /** Validates the value (default: any non-empty string). */
  schema?: z.ZodType<string>;
  /** True when a production worker must set it (no development default then). */
  requiredInProduction: boolean;
}

/** A provider: see the module documentation. */
export interface ProviderDefinition<Ops extends Record<string, AnyOperation> = Record<string, AnyOperation>> {
  /** Lower-case name, `[a-z][a-z0-9]*`: the simulator path `/<name>`, the env prefix `<NAME>_`, the task queue suffix. */
  name: string;
  /** Human name, e.g. `Email provider`. */
  title: string;
  operations: Ops;
  reads?: Record<string, ReadDefinition>;
  limits: ProviderLimits;
  /** Extra settings by the name the client passes to `withSettings` (e.g. `from`). */
  settings?: Record<string, ProviderSetting>;
  /** The simulator's actions of the provider's own side, by name ({@link SimulatorAction}). */
  simulatorActions?: Record<string, SimulatorAction>;
}

/** The request type of an operation. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type RequestOf<Op> = Op extends OperationDefinition<infer Req, any> ? Req : never;
/** The response type of an operation. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type ResponseOf<Op> = Op extends OperationDefinition<any, infer Res> ? Res : never;

/** A successful call: the parsed answer, the provider's id of the effect, and the HTTP status. */
export interface ProviderAnswer<Res = unknown> {
  response: Res;
  providerId: string;
  status: number;
}

/**
 * A provider's client: one method per operation, `(request, idempotencyKey) => answer`.
 * @throws ProviderError classified by `kind` and `mayHaveActed` (see ./errors.ts).
 */
export type ProviderClient<Ops extends Record<string, AnyOperation> = Record<string, AnyOperation>> = {
  [K in keyof Ops]: (request: RequestOf<Ops[K]>, idempotencyKey: string) => Promise<ProviderAnswer<ResponseOf<Ops[K]>>>;
};

/** Every provider's client, by provider name: what the step kit calls. */
export type ProviderClients = Readonly<Record<string, ProviderClient>>;

const NAME = /^[a-z][a-z0-9]*$/;

/**
 * Declares a provider (an identity function that checks the definition and keeps its literal types).
 * @throws Error when the name is not `[a-z][a-z0-9]*`, a limit is not a positive integer, or an operation's path
 *   names a parameter twice.
 */
export function defineProvider<const Ops extends Record<string, AnyOperation>>(
  definition: ProviderDefinition<Ops>,
): ProviderDefinition<Ops> {
  if (!NAME.test(definition.name)) throw new Error(`provider name ${definition.name} is not [a-z][a-z0-9]*`);
  const { callsPerSecond, concurrentCallsPerWorker } = definition.limits;
  if (!(callsPerSecond > 0) || !Number.isInteger(concurrentCallsPerWorker) || concurrentCallsPerWorker < 1) {
    throw new Error(`provider ${definition.name}: limits must be positive (calls per second, concurrent calls)`);
  }
  return definition;
}

/** The environment prefix of a provider: `email` → `EMAIL`. */
export function envPrefix(provider: Pick<ProviderDefinition, 'name'>): string {
  return provider.name.toUpperCase();
}

/** The task queue of a provider's activities: `<taskQueue>.<provider>`, e.g. `order-fulfilment.email`. */
export function providerTaskQueue(taskQueue: string, provider: string): string {
  return `${taskQueue}.${provider}`;
}

const PATH_PARAM = /:([A-Za-z_][A-Za-z0-9_]*)/g;

/** The names of the `:name` segments of an operation's path, in order (e.g. `['authorizationId']`). */
export function pathParams(path: string): string[] {
  return [...path.matchAll(PATH_PARAM)].map((m) => m[1]!);
}

/**
 * Fills the `:name` segments of an operation's path from the request's members (percent-encoded).
 * @throws ProviderError `rejected` that did not act (the request cannot be sent) when the request lacks a member the
 *   path names, or it is not a string or a number.
 */
export function operationPath(path: string, request: unknown): string {
  return path.replace(PATH_PARAM, (_match, name: string) => {
    const value = (request as Record<string, unknown> | null)?.[name];
    if (typeof value !== 'string' && typeof value !== 'number') {
      throw new ProviderError(
        `the request cannot be sent: it has no ${name} for the path ${path}`,
        'rejected',
        undefined,
        {
          notSent: true,
        },
      );
    }
    return encodeURIComponent(String(value));
  });
}

/** The request without the members that fill the path (for an operation with `paramsInBody: false`). */
export function withoutPathParams(path: string, request: unknown): unknown {
  const params = pathParams(path);
  if (params.length === 0 || request === null || typeof request !== 'object' || Array.isArray(request)) return request;
  return Object.fromEntries(Object.entries(request).filter(([name]) => !params.includes(name)));
}
