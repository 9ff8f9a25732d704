/**
 * Recognises "the database cannot be reached right now" among the errors Prisma (client engine with
 * `@prisma/adapter-pg`) and `pg` throw, so the API answers 503 with `Retry-After` instead of 500 while PostgreSQL is
 * down or restarting. Shapes recognised (observed on Prisma 6.19 with adapter-pg 7.10):
 * - `PrismaClientKnownRequestError` with code `P1001` (can't reach the server), `P1002` (timed out), `P1017` (the
 *   server closed the connection) or `P2024` (timed out waiting for a pool connection), or `P2028` "Unable to start
 *   a transaction in the given time" (every pooled connection busy: the request did nothing, a repeat may pass);
 * - any error whose `meta.driverAdapterError.cause.kind` is `DatabaseNotReachable`, `ConnectionClosed`,
 *   `SocketTimeout`, `TooManyConnections` or `TlsConnectionError`, or `postgres` with one of the SQLSTATEs below;
 * - a `pg` or socket error with `code` `ECONNREFUSED`, `ECONNRESET`, `ETIMEDOUT`, `EHOSTUNREACH`, `ENOTFOUND`, or a
 *   SQLSTATE of class 08 (connection exception), `57P01`/`57P02`/`57P03` (shutdown, crash, cannot connect now),
 *   `53300` (too many connections), `55P03` (a lock not obtained within `lock_timeout`) or `57014` (cancelled by
 *   `statement_timeout`) — https://www.postgresql.org/docs/current/errcodes-appendix.html
 * - an error whose message says so without a code: `pg`'s "Client has encountered a connection error and is not
 *   queryable" (a query on a connection PostgreSQL ended), "Connection terminated", `pg-pool`'s "timeout exceeded
 *   when trying to connect" (no connection free or made within `PG_CONNECT_TIMEOUT_MS`: the API's `POST /orders`
 *   path runs on the pool directly), and PostgreSQL's "database … is not currently accepting connections" (SQLSTATE
 *   55000, which also covers unrelated states).
 * Causes (`cause`) are followed, at most 5 deep.
 */
const PRISMA_CODES = new Set(['P1001', 'P1002', 'P1017', 'P2024']);
const ADAPTER_KINDS = new Set([
  'DatabaseNotReachable',
  'ConnectionClosed',
  'SocketTimeout',
  'TooManyConnections',
  'TlsConnectionError',
]);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE']);
/**
 * Unavailable for now: shutdown, crash, cannot connect now, too many connections; and busy: a lock not obtained
 * within `lock_timeout` (55P03) or a statement cancelled by `statement_timeout` (57014) (src/prisma/prisma.ts
 * PG_SESSION_LIMITS): nothing was done, a repeat may pass.
 */
const SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300', '55P03', '57014']);
/** Messages of unavailability that come without a usable code. */
const UNAVAILABLE_MESSAGES =
  /Client has encountered a connection error and is not queryable|Connection terminated|timeout exceeded when trying to connect|is not currently accepting connections/;
/** Prisma's P2028 when no connection was free to start an interactive transaction within `maxWait`. */
const NO_TRANSACTION_SLOT = /Unable to start a transaction in the given time/;

/** Seconds a client should wait before repeating a request that met an unreachable database. */
export const DATABASE_RETRY_AFTER_SECONDS = 5;

function isUnavailableSqlState(code: unknown): boolean {
  return typeof code === 'string' && (SQLSTATES.has(code) || /^08[0-9A-Z]{3}$/.test(code));
}

/** True when `err` (or one of its causes) says PostgreSQL cannot be reached or refuses connections for now. */
export function isDatabaseUnavailable(err: unknown): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current && typeof current === 'object'; depth++) {
    const e = current as {
      code?: unknown;
      meta?: { driverAdapterError?: { cause?: { kind?: unknown; originalCode?: unknown } } };
      cause?: unknown;
    };
    if (typeof e.code === 'string' && (PRISMA_CODES.has(e.code) || SOCKET_CODES.has(e.code))) return true;
    if (e.code === 'P2028' && NO_TRANSACTION_SLOT.test(String((current as { message?: unknown }).message))) return true;
    if (isUnavailableSqlState(e.code)) return true;
    if (UNAVAILABLE_MESSAGES.test(String((current as { message?: unknown }).message ?? ''))) return true;
    const adapter = e.meta?.driverAdapterError?.cause;
    if (typeof adapter?.kind === 'string' && ADAPTER_KINDS.has(adapter.kind)) return true;
    if (adapter?.kind === 'postgres' && isUnavailableSqlState(adapter.originalCode)) return true;
    current = e.cause;
  }
  return false;
}
