/**
 * Limits of the HTTP API that are not part of a request schema. Documented in the README's generated limits table
 * (`npm run docs:tables`), so a change here shows up there.
 */

/**
 * Largest JSON request body, bytes (Express' own default, 100 KiB, made explicit). A larger body is refused with
 * 413 before it is parsed. The largest valid order (50 lines) is about 4 KB.
 */
export const JSON_BODY_LIMIT_BYTES = 100 * 1024;

/**
 * Deepest nesting of arrays and objects in a JSON request body (the root container is level 1). A deeper body is
 * refused with 400 before it is parsed (src/common/json-body.ts), so no later walk over it (the idempotency
 * fingerprint, validation) can exhaust the stack. The deepest valid body, an order, nests 3 levels.
 */
export const JSON_BODY_MAX_DEPTH = 32;

/**
 * Default time a client has to send a request's headers, ms (`HTTP_HEADERS_TIMEOUT_MS`; Node's own default is
 * 60 s). Beyond it the API answers 408 and closes the connection.
 */
export const HTTP_HEADERS_TIMEOUT_MS = 10_000;

/**
 * Default time a client has to send a whole request, headers and body, ms (`HTTP_REQUEST_TIMEOUT_MS`; Node's own
 * default is 300 s): a body trickling in a byte at a time is cut there with 408. Time the API takes to answer is not
 * counted. The largest valid body is about 4 KB.
 */
export const HTTP_REQUEST_TIMEOUT_MS = 30_000;

/**
 * How often Node checks connections against the two timeouts above, ms (Node's default is 30 s, which would let a
 * trickling client hold a connection up to 30 s past its timeout).
 */
export const HTTP_TIMEOUT_CHECK_INTERVAL_MS = 1_000;
