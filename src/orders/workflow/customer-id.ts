/**
 * The `CustomerId` search attribute of order workflows: a pseudonymous, stable id of the customer, so operators can
 * list one customer's orders in the Temporal UI/CLI (`CustomerId = "3f9c..."`) without the email address ever
 * reaching Temporal's visibility store.
 *
 * Rule: the first 16 hex digits (64 bits) of HMAC-SHA256(key = `CUSTOMER_ID_SECRET`, message = the email trimmed and
 * lower-cased, UTF-8). Keyed, so the id cannot be reversed by hashing guessed addresses without the secret; the same
 * email (in any letter case) always gives the same id while the secret stays the same. Compute one with
 * `npm run customer-id -- <email>`.
 */
import { createHmac } from 'node:crypto';

/** Length of the id, hex digits. */
export const CUSTOMER_ID_LENGTH = 16;

/**
 * @param email the customer's email as stored with the order.
 * @param secret `CUSTOMER_ID_SECRET` (at least 16 characters in the configuration).
 * @returns 16 lower-case hex digits, e.g. `5c1e0b3f9a4d27e8`.
 */
export function customerSearchId(email: string, secret: string): string {
  return createHmac('sha256', secret)
    .update(email.trim().toLowerCase(), 'utf8')
    .digest('hex')
    .slice(0, CUSTOMER_ID_LENGTH);
}
