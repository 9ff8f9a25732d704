/**
 * The opaque keyset cursor of `GET /orders`: base64url (RFC 4648 §5) of the JSON `[createdAt, id]` of the
 * last order of a page. The next page holds the orders strictly after it in (createdAt DESC, id DESC) order.
 */
import { z } from 'zod';

/** Position of the last order of a page. */
export interface OrderCursor {
  createdAt: Date;
  id: string;
}

/**
 * The earliest position a cursor may name. ISO 8601 has a year 0000 (1 BC), PostgreSQL's timestamps have none:
 * `0000-01-01` fails there with "date/time field value out of range" (a 500), so a cursor before year 1 is refused
 * here. Cursors this API makes hold order creation times, far inside the range.
 */
export const MIN_CURSOR_TIME = new Date('0001-01-01T00:00:00Z');

const cursorPayload = z.tuple([
  z.iso.datetime().refine((s) => new Date(s) >= MIN_CURSOR_TIME, 'out of range: before year 1'),
  z.uuid(),
]);

/** Encodes a cursor; the result is URL-safe. */
export function encodeOrderCursor(cursor: OrderCursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAt.toISOString(), cursor.id]), 'utf8').toString('base64url');
}

/** Decodes a cursor made by {@link encodeOrderCursor}; returns null for anything else (never throws). */
export function decodeOrderCursor(value: string): OrderCursor | null {
  if (!/^[A-Za-z0-9_-]+$/.test(value)) return null;
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
  } catch {
    return null;
  }
  const parsed = cursorPayload.safeParse(json);
  return parsed.success ? { createdAt: new Date(parsed.data[0]), id: parsed.data[1] } : null;
}
