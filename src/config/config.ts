/**
 * Process configuration, read once from environment variables and validated with zod.
 *
 * Development (any `NODE_ENV` but `production`): every variable has a default that matches `npm start` (the local
 * stack: simulators, the dev server, the local database), so a fresh checkout runs without a `.env` file.
 *
 * Production (`NODE_ENV=production`) fails closed: the variables that name a host or hold a credential have no
 * default there ({@link PRODUCTION_REQUIRED}: the database, Temporal, the UI link, the customer id secret), so a
 * deploy that forgets one stops at start with a message naming each missing variable instead of silently using
 * development hosts and keys. Which ones a process needs depends on its role: the API never calls a provider, the
 * worker never builds UI links.
 *
 * The providers' variables (every provider's URL and key, its settings such as the sender address) are the worker's:
 * src/worker/worker-config.ts reads them on top of this configuration (`loadWorkerConfig`), with the same
 * fail-closed checks and one {@link ConfigError} for all, so the API loads no provider definition.
 *
 * Invalid values fail at start-up too, with one line per variable ({@link ConfigError}).
 */
import { z } from 'zod';
import { LOG_FORMATS } from '../logging/logging.js';
import { CANCEL_WAIT_MS } from '../temporal/temporal.constants.js';
import { HTTP_HEADERS_TIMEOUT_MS, HTTP_REQUEST_TIMEOUT_MS } from '../common/api-limits.js';

/** Development default of `SIMULATOR_URL`: the simulator process of `npm start`. */
export const DEFAULT_SIMULATOR_URL = 'http://127.0.0.1:4010';

const port = z.coerce.number().int().min(1).max(65535);
/** A duration: milliseconds (`90000`), or a number with a unit (`500ms`, `90s`, `30m`, `4h`, `2d`); ms after parsing. */
const duration = z
  .string()
  .trim()
  .regex(/^\d+(\.\d+)?(ms|s|m|h|d)?$/, 'a duration: ms, or a number with ms, s, m, h or d (e.g. 4h)')
  .transform((v) => {
    const [, n, unit] = /^([\d.]+)(ms|s|m|h|d)?$/.exec(v)!;
    const factor = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 }[unit ?? 'ms'] ?? 1;
    return Math.round(Number(n) * factor);
  });
const url = z.string().url();
/** `true`/`false` (also `1`/`0`, `yes`/`no`), case-insensitive. */
const flag = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(['true', 'false', '1', '0', 'yes', 'no']))
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** Schema of the environment this service reads; see README "Configuration" for each variable. */
export const configSchema = z.object({
  /** `production` turns on the fail-closed checks ({@link PRODUCTION_REQUIRED}); anything else is development. */
  NODE_ENV: z.string().optional(),
  /** HTTP port of the API. */
  PORT: port.default(3000),
  /** PostgreSQL connection string. `npm start` sets it to the embedded database when unset. */
  DATABASE_URL: z.string().min(1).default('postgresql://postgres@127.0.0.1:5432/order_fulfilment'),
  /** host:port of the Temporal frontend (gRPC), e.g. `my-ns.a1b2c.tmprl.cloud:7233`. */
  TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  /**
   * Temporal Cloud API key (namespace endpoint `<ns>.<account>.tmprl.cloud:7233` or the regional one). Sent as a
   * bearer token over TLS. Unset: no key. See README "Temporal Cloud".
   */
  TEMPORAL_API_KEY: z.string().min(1).optional(),
  /** `true` connects with TLS (implied by TEMPORAL_API_KEY and TEMPORAL_TLS_CERT). */
  TEMPORAL_TLS: z
    .enum(['true', 'false'])
    .default('false')
    .transform((v) => v === 'true'),
  /** mTLS client certificate and key (PEM file paths), e.g. a Temporal Cloud namespace's CA-signed pair. */
  TEMPORAL_TLS_CERT: z.string().min(1).optional(),
  TEMPORAL_TLS_KEY: z.string().min(1).optional(),
  /** Root CA of a self-hosted frontend's certificate (PEM file path); unset: the system's roots. */
  TEMPORAL_TLS_CA: z.string().min(1).optional(),
  /** TLS server name (SNI) override, for a frontend behind a proxy. */
  TEMPORAL_TLS_SERVER_NAME: z.string().min(1).optional(),
  TEMPORAL_TASK_QUEUE: z.string().min(1).default('order-fulfilment'),
  /**
   * The API's public base URL, for the links in each order's workflow details in the Temporal UI (the order in the
   * API, the page). Default in development: `http://127.0.0.1:<PORT>`; unset in production: the links are paths.
   */
  PUBLIC_URL: url.optional(),
  /** Base URL of the Temporal Web UI, used to build each order's workflow link. */
  TEMPORAL_UI_URL: url.default('http://127.0.0.1:8233'),
  /**
   * Base of the development provider URLs: each provider's `<NAME>_PROVIDER_URL` defaults to `<SIMULATOR_URL>/<name>`
   * (the one simulator process; src/config/provider-config.ts, read by the worker). Not used in production, where
   * every provider URL must be set.
   */
  SIMULATOR_URL: url.default(DEFAULT_SIMULATOR_URL),
  /** Per-request HTTP timeout of provider calls, ms. Keep below the provider profile's 30 s start-to-close. */
  PROVIDER_TIMEOUT_MS: z.coerce.number().int().min(100).max(25_000).default(10_000),
  /** Lease of a `claimed` or `sending` side-effect claim, ms (see ActivitySettings.claimLeaseMs). */
  CLAIM_LEASE_MS: z.coerce.number().int().min(31_000).default(120_000),
  /**
   * Interval of the reconciler (the safety net behind the start dispatcher: it re-queues start intents of committed
   * orders that have no workflow) and of the sweeper, ms. 0 disables both.
   */
  RECONCILE_INTERVAL_MS: z.coerce.number().int().min(0).default(15_000),
  /**
   * The sweeper (part of the reconciler loop) checks orders that are not final, whose workflow was started, and
   * that have not changed for this long, ms (default 5 min): a closed workflow behind such an order is repaired
   * or flagged `attention_required`.
   */
  SWEEP_MIN_AGE_MS: z.coerce.number().int().min(0).default(300_000),
  /**
   * How long `POST /orders/:id/cancel` waits for the cancel's outcome before answering 202, ms (default
   * {@link CANCEL_WAIT_MS}, 30 s).
   */
  CANCEL_WAIT_MS: z.coerce.number().int().min(100).max(120_000).default(CANCEL_WAIT_MS),
  /**
   * How long an order waits for the warehouse to report it packed (awaitPacking, an event step) before it waits for
   * an operator in `attention_required`: a duration (`4h`, `30m`, `90s` or ms), at least 1 s, written into each new
   * order's plan when it is placed (running orders keep theirs). Default 4 h.
   */
  WAREHOUSE_PACK_TIMEOUT: duration
    .pipe(
      z
        .number()
        .int()
        .min(1_000)
        .max(30 * 86_400_000),
    )
    .default(4 * 3_600_000),
  /**
   * How many days after its shipment an order may be returned (`POST /orders/:id/returns` answers 409
   * `return-window-closed` after that). Default 30.
   */
  RETURN_WINDOW_DAYS: z.coerce.number().int().min(0).max(3650).default(30),
  /**
   * How long a return waits for the warehouse's receipt before it expires with nothing refunded: a duration (`30d`,
   * `4h`...), at least 1 s, passed to each new return's workflow. Default 30 days.
   */
  RETURN_RECEIPT_TIMEOUT: duration
    .pipe(
      z
        .number()
        .int()
        .min(1_000)
        .max(365 * 86_400_000),
    )
    .default(30 * 86_400_000),
  /**
   * The share of a damaged unit's price a return refunds, in percent (0–100), fixed on each return when it is asked
   * for. Default 0: a unit received damaged is not refunded (nor restocked); 100 refunds it in full.
   */
  RETURN_DAMAGED_REFUND_PERCENT: z.coerce.number().int().min(0).max(100).default(0),
  /**
   * How long before a deadline of the wait for packing (the payment authorization's capture deadline) the order stops
   * waiting and goes to `attention_required`: a duration, default 10 min.
   */
  WAREHOUSE_PACK_DEADLINE_MARGIN: duration
    .pipe(
      z
        .number()
        .int()
        .min(0)
        .max(7 * 86_400_000),
    )
    .default(10 * 60_000),
  /**
   * Retention of `Idempotency-Key` records (`POST /orders`, `PUT /inventory/:sku`), ms (default 24 h, at least
   * 1 min), counted from the request's completion: a record still `processing` never expires. A retry with the
   * same key within this time replays the first response; after it the key counts as unused, and the retention
   * Schedule's purge deletes the record.
   */
  IDEMPOTENCY_RETENTION_MS: z.coerce.number().int().min(60_000).default(86_400_000),
  /**
   * Requests one client may send per `RATE_LIMIT_WINDOW_MS`, all routes and keys together (default 6000 per
   * minute, 100/s on average); more → 429 with `Retry-After`. Counted per API process. 0 disables the limit.
   */
  RATE_LIMIT_MAX: z.coerce.number().int().min(0).default(6_000),
  /** The window of `RATE_LIMIT_MAX`, ms (default 1 min). */
  RATE_LIMIT_WINDOW_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000),
  /**
   * Time a client has to send a request's headers, ms (default {@link HTTP_HEADERS_TIMEOUT_MS}, 10 s; at most
   * `HTTP_REQUEST_TIMEOUT_MS`); beyond it → 408 and the connection closes.
   */
  HTTP_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(500).max(300_000).default(HTTP_HEADERS_TIMEOUT_MS),
  /**
   * Time a client has to send a whole request, headers and body, ms (default {@link HTTP_REQUEST_TIMEOUT_MS}, 30 s);
   * beyond it → 408 and the connection closes. The API's own time to answer is not counted.
   */
  HTTP_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(500).max(300_000).default(HTTP_REQUEST_TIMEOUT_MS),
  /**
   * Interval of the Temporal Schedule `purge-idempotency-records` (created or updated by the worker at start), ms:
   * default 10 min, 1 min to 1 day.
   */
  IDEMPOTENCY_PURGE_INTERVAL_MS: z.coerce.number().int().min(60_000).max(86_400_000).default(600_000),
  /**
   * Serve the OpenAPI document (`/docs`, `/docs-json`). Default: on in development, off with `NODE_ENV=production`.
   */
  API_DOCS: flag.optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `json` (one JSON object per line) or `pretty`; unset: pretty on a terminal, JSON otherwise (src/logging). */
  LOG_FORMAT: z.enum(LOG_FORMATS).optional(),
  /** Port of the worker's Prometheus endpoint (`/metrics`: its own and the Temporal SDK's metrics). 0 disables it. */
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  /**
   * Secret of the pseudonymous `CustomerId` search attribute (HMAC-SHA256 of the lower-cased customer email,
   * src/orders/workflow/customer-id.ts). Set your own in production; changing it changes every customer's id.
   */
  CUSTOMER_ID_SECRET: z.string().min(16).default('dev-only-customer-id-secret'),
});

/**
 * Validated configuration. `API_DOCS` is resolved to a boolean (its default depends on `NODE_ENV`). The worker's
 * adds `providers`: every provider's URL, key and settings (`WorkerConfig`, src/worker/worker-config.ts).
 */
export type AppConfig = Omit<z.infer<typeof configSchema>, 'API_DOCS'> & { API_DOCS: boolean };

/** Which process reads the configuration: each fails closed on the variables it uses. */
export type ConfigRole = 'api' | 'worker' | 'all';

/**
 * Variables of this schema without a default under `NODE_ENV=production`, per role. A missing (unset or empty) one
 * stops the process at start. `all` (the default of {@link loadConfig}) is the union. A production worker also needs
 * every provider's URL, key and required settings: `WORKER_PRODUCTION_REQUIRED` of src/worker/worker-config.ts.
 */
export const PRODUCTION_REQUIRED: Readonly<Record<Exclude<ConfigRole, 'all'>, readonly string[]>> = {
  api: ['DATABASE_URL', 'TEMPORAL_ADDRESS', 'TEMPORAL_UI_URL', 'CUSTOMER_ID_SECRET'],
  worker: ['DATABASE_URL', 'TEMPORAL_ADDRESS'],
};

/** A problem with one variable. */
export interface VariableProblem {
  variable: string;
  message: string;
}

/** The message of a variable missing under `NODE_ENV=production`. */
const REQUIRED_IN_PRODUCTION = 'required when NODE_ENV=production (no development default)';

/** The configuration is invalid or incomplete; `message` has one line per variable, `variables` their names. */
export class ConfigError extends Error {
  constructor(
    message: string,
    readonly variables: readonly string[],
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** True when `env` describes a production process (`NODE_ENV=production`). */
export function isProduction(env: NodeJS.ProcessEnv = process.env): boolean {
  return env.NODE_ENV?.trim() === 'production';
}

/** What {@link checkConfig} found: the problems, one per variable, and the parsed values (unless invalid). */
export interface ConfigCheck {
  /** The values, when the schema accepted `env` (possibly with missing production variables: see `problems`). */
  config: AppConfig | undefined;
  problems: VariableProblem[];
  production: boolean;
}

/**
 * Checks and parses `env` without throwing: {@link loadConfig}, and the worker's `loadWorkerConfig`
 * (src/worker/worker-config.ts), which adds the providers' problems before it throws.
 * @param role the process reading it; under `NODE_ENV=production` the role's {@link PRODUCTION_REQUIRED}
 *   variables must be set (`all`: every one).
 * @param alsoRequired more variables that must be set under `NODE_ENV=production` (the worker's provider variables).
 */
export function checkConfig(
  env: NodeJS.ProcessEnv,
  role: ConfigRole,
  alsoRequired: readonly string[] = [],
): ConfigCheck {
  const production = isProduction(env);
  const problems: VariableProblem[] = [];
  if (production) {
    const required =
      role === 'all' ? [...new Set(Object.values(PRODUCTION_REQUIRED).flat())] : PRODUCTION_REQUIRED[role];
    for (const name of [...required, ...alsoRequired]) {
      if (!env[name]?.trim()) addProblem(problems, { variable: name, message: REQUIRED_IN_PRODUCTION });
    }
  }
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      addProblem(problems, { variable: issue.path.join('.'), message: issue.message });
    }
  }
  const config = parsed.success ? { ...parsed.data, API_DOCS: parsed.data.API_DOCS ?? !production } : undefined;
  return { config, problems, production };
}

/** Adds `problem` to `problems` unless its variable already has one. */
export function addProblem(problems: VariableProblem[], problem: VariableProblem): void {
  if (!problems.some((p) => p.variable === problem.variable)) problems.push(problem);
}

/**
 * The configuration of a {@link checkConfig} without problems.
 * @throws ConfigError listing every problem, e.g.
 *   `DATABASE_URL: required when NODE_ENV=production (no development default)` or
 *   `PORT: Too big: expected number to be <=65535`.
 */
export function validConfig({ config, problems, production }: ConfigCheck): AppConfig {
  if (problems.length > 0 || !config) {
    const lines = problems.map((p) => `  ${p.variable}: ${p.message}`);
    const where = production ? ' (NODE_ENV=production)' : '';
    throw new ConfigError(
      `Invalid configuration${where}:\n${lines.join('\n')}`,
      problems.map((p) => p.variable),
    );
  }
  return config;
}

/**
 * Parses configuration from `env` (without the providers': the worker reads them, src/worker/worker-config.ts).
 * @param role the process reading it; under `NODE_ENV=production` the role's {@link PRODUCTION_REQUIRED}
 *   variables must be set (default `all`: every one).
 * @throws ConfigError listing every missing or invalid variable, e.g.
 *   `DATABASE_URL: required when NODE_ENV=production (no development default)` or
 *   `PORT: Too big: expected number to be <=65535`.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, role: ConfigRole = 'all'): AppConfig {
  return validConfig(checkConfig(env, role));
}

/** Nest injection token of AppConfig. */
export const APP_CONFIG = Symbol('APP_CONFIG');
