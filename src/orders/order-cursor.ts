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

const cursorPayload = z.tuple([z.iso.datetime(), z.uuid()]);

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
