/**
 * Limits of the HTTP API that are not part of a request schema. Documented in the README's generated limits table
 * (`npm run docs:tables`), so a change here shows up there.
 */

/**
 * Largest JSON request body, bytes (Express' own default, 100 KiB, made explicit). A larger body is refused with
 * 413 before it is parsed. The largest valid order (50 lines) is about 4 KB.
 */
export const JSON_BODY_LIMIT_BYTES = 100 * 1024;
