/**
 * Log options shared by the API (nestjs-pino / pino-http) and the worker (pino): one JSON object per line,
 * `LOG_LEVEL`, `LOG_FORMAT`, and no credentials or customer data in any line.
 *
 * Personal data, defence in depth:
 * - pino-http's default serializers log `req` as { id, method, url, query, params, headers, remoteAddress,
 *   remotePort } and `res` as { statusCode, headers }: never a body. The credential headers in
 *   {@link LOG_REDACT_PATHS} are replaced by `[Redacted]`.
 * - No log call of the service passes a customer email or name; order lines carry `orderId` instead.
 * - Every line is scrubbed of email addresses before it is written ({@link scrubPersonalData}): error messages
 *   (a provider's problem detail, a database error) can quote one.
 */
import { createRequire } from 'node:module';
import { type LoggerOptions, stdSerializers } from 'pino';

/** `LOG_FORMAT` values: `json` (one JSON object per line) or `pretty` (pino-pretty, one line per event). */
export const LOG_FORMATS = ['json', 'pretty'] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

/** Paths (pino redact syntax) of credential headers in request and response logs. */
export const LOG_REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["proxy-authorization"]',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
] as const;

/** What replaces an email address in a log line. */
export const EMAIL_PLACEHOLDER = '[email]';

// Local part and domain as RFC 5321 mailboxes are written in practice; the domain needs a dot and a letter TLD, so
// `postgres@127.0.0.1` (a connection string) and `1234@hostname` (a Temporal worker identity) are left alone; `/` is
// not taken as part of a local part, so a URL's path stays readable.
const EMAIL =
  /[A-Za-z0-9.!#$%&'*+=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g;

/**
 * Replaces every email address in `text` with {@link EMAIL_PLACEHOLDER}. Applied to each serialized log line
 * (pino's `hooks.streamWrite`); safe on JSON, since an address contains no JSON syntax.
 */
export function scrubPersonalData(text: string): string {
  return text.replace(EMAIL, EMAIL_PLACEHOLDER);
}

/**
 * pino's error serializer (`type` = class name, `message`, `stack`, own fields), plus `failureType`: the Temporal
 * failure type of an `ApplicationFailure` (e.g. `InsufficientStockError`), which the class name would hide.
 */
export function serializeError(err: unknown): Record<string, unknown> {
  if (!(err instanceof Error)) return { message: String(err) };
  const out = stdSerializers.err(err) as unknown as Record<string, unknown>;
  const failureType = (err as { type?: unknown }).type;
  if (typeof failureType === 'string' && failureType !== out.type) out.failureType = failureType;
  return out;
}

/** True when `pino-pretty` (a dev dependency) is installed. */
function hasPinoPretty(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether to pretty-print: `LOG_FORMAT=pretty` yes, `json` no; unset: only when stdout is a terminal and
 * pino-pretty is installed (so `npm start`, whose children write to pipes, gets JSON and formats it itself).
 */
export function usePrettyLogs(format: LogFormat | undefined): boolean {
  if (format === 'json') return false;
  if (format === 'pretty') return hasPinoPretty();
  return process.stdout.isTTY === true && hasPinoPretty();
}

/** The logging part of the configuration. */
export interface LogSettings {
  LOG_LEVEL: string;
  LOG_FORMAT?: LogFormat;
}

/**
 * pino options for a process: level, redaction of credential headers, email scrubbing of every line, errors with
 * their failure type ({@link serializeError}), and the pretty transport when {@link usePrettyLogs} says so.
 * @param name the `name` field of every line (e.g. `worker`); omitted when undefined.
 */
export function baseLoggerOptions(settings: LogSettings, name?: string): LoggerOptions {
  return {
    ...(name ? { name } : {}),
    level: settings.LOG_LEVEL,
    redact: [...LOG_REDACT_PATHS],
    serializers: { err: serializeError },
    hooks: { streamWrite: scrubPersonalData },
    transport: usePrettyLogs(settings.LOG_FORMAT)
      ? { target: 'pino-pretty', options: { singleLine: true } }
      : undefined,
  };
}
