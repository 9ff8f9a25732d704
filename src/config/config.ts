/**
 * Process configuration, read once from environment variables and validated with zod.
 * Every variable has a development default that matches `npm start` (the local stack), so a fresh
 * checkout runs without a `.env` file. Invalid values fail fast at start-up with a readable message.
 */
import { z } from 'zod';
import { LOG_FORMATS } from '../logging/logging.js';
import { CANCEL_WAIT_MS } from '../temporal/temporal.constants.js';

const port = z.coerce.number().int().min(1).max(65535);
const url = z.string().url();

/** Schema of the environment this service reads; see README "Configuration" for each variable. */
export const configSchema = z.object({
  /** HTTP port of the API. */
  PORT: port.default(3000),
  /** PostgreSQL connection string. `npm start` sets it to the embedded database when unset. */
  DATABASE_URL: z.string().min(1).default('postgresql://postgres@127.0.0.1:5432/order_fulfilment'),
  /** host:port of the Temporal frontend (gRPC). */
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
  /** Base URL of the Temporal Web UI, used to build each order's workflow link. */
  TEMPORAL_UI_URL: url.default('http://127.0.0.1:8233'),
  /** Base URL of the email provider (the simulator by default). */
  EMAIL_PROVIDER_URL: url.default('http://127.0.0.1:4010'),
  EMAIL_PROVIDER_API_KEY: z.string().min(1).default('dev-email-key'),
  /** Sender address of order confirmations. */
  EMAIL_FROM: z.string().email().default('orders@shop.example'),
  /** Base URL of the accounting system (the simulator by default). */
  ACCOUNTING_PROVIDER_URL: url.default('http://127.0.0.1:4020'),
  ACCOUNTING_PROVIDER_API_KEY: z.string().min(1).default('dev-accounting-key'),
  /** Base URL of the carrier (the simulator by default). */
  CARRIER_PROVIDER_URL: url.default('http://127.0.0.1:4030'),
  CARRIER_PROVIDER_API_KEY: z.string().min(1).default('dev-carrier-key'),
  /** Per-request HTTP timeout of provider calls, ms. Keep below the provider profile's 30 s start-to-close. */
  PROVIDER_TIMEOUT_MS: z.coerce.number().int().min(100).max(25_000).default(10_000),
  /** Lease of a `sending` side-effect claim, ms (see ActivitySettings.claimLeaseMs). */
  CLAIM_LEASE_MS: z.coerce.number().int().min(31_000).default(120_000),
  /** Interval of the reconciler that starts workflows for committed orders that have none, ms. 0 disables. */
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
   * Retention of `Idempotency-Key` records (`POST /orders`, `PUT /inventory/:sku`), ms (default 24 h, at least
   * 1 min), counted from the request's completion: a record still `processing` never expires. A retry with the
   * same key within this time replays the first response; after it the key counts as unused, and the purge
   * deletes the record.
   */
  IDEMPOTENCY_RETENTION_MS: z.coerce.number().int().min(60_000).default(86_400_000),
  /**
   * Requests one client may send per `RATE_LIMIT_WINDOW_MS`, all routes and keys together (default 6000 per
   * minute, 100/s on average); more → 429 with `Retry-After`. Counted per API process. 0 disables the limit.
   */
  RATE_LIMIT_MAX: z.coerce.number().int().min(0).default(6_000),
  /** The window of `RATE_LIMIT_MAX`, ms (default 1 min). */
  RATE_LIMIT_WINDOW_MS: z.coerce.number().int().min(1_000).max(3_600_000).default(60_000),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** `json` (one JSON object per line) or `pretty`; unset: pretty on a terminal, JSON otherwise (src/logging). */
  LOG_FORMAT: z.enum(LOG_FORMATS).optional(),
  /** Port of the worker's Prometheus endpoint (`/metrics`: its own and the Temporal SDK's metrics). 0 disables it. */
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65535).default(9464),
  /**
   * Secret of the pseudonymous `CustomerId` search attribute (HMAC-SHA256 of the lower-cased customer email,
   * src/temporal/customer-id.ts). Set your own in production; changing it changes every customer's id.
   */
  CUSTOMER_ID_SECRET: z.string().min(16).default('dev-only-customer-id-secret'),
});

/** Validated configuration. */
export type AppConfig = z.infer<typeof configSchema>;

/**
 * Parses configuration from `env`.
 * @throws Error listing every invalid variable, e.g. `PORT: Too big: expected number to be <=65535`.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join('.')}: ${i.message}`);
    throw new Error(`Invalid configuration:\n${lines.join('\n')}`);
  }
  return parsed.data;
}

/** Nest injection token of AppConfig. */
export const APP_CONFIG = Symbol('APP_CONFIG');
