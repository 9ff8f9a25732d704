/**
 * Classification of errors from `@temporalio/client` calls.
 */

/** gRPC status codes (https://grpc.github.io/grpc/core/md_doc_statuscodes.html) meaning "cannot reach the server". */
const UNREACHABLE_GRPC_CODES = new Set([
  4, // DEADLINE_EXCEEDED
  14, // UNAVAILABLE
]);

/**
 * True when `err` (or an error in its `cause` chain) is a gRPC DEADLINE_EXCEEDED or UNAVAILABLE, i.e. the
 * Temporal frontend is down or unreachable rather than the request being wrong.
 */
export function isTemporalUnreachable(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'number' && UNREACHABLE_GRPC_CODES.has(code)) return true;
  }
  return false;
}
