/**
 * Query of `GET /orders?limit=20&cursor=...&status=...` and path params of `GET /orders/:id`.
 */
import { z } from 'zod';
import { decodeOrderCursor } from './order-cursor.js';
import { orderStatusSchema } from './order-response.dto.js';

/** Page size limits of `GET /orders`. */
export const ORDER_PAGE = { defaultLimit: 20, maxLimit: 100 } as const;

/** `GET /orders` query: `limit` (1..100, default 20), opaque `cursor`, optional `status` filter. */
export const listOrdersQuerySchema = z.object({
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(ORDER_PAGE.maxLimit)
    .default(ORDER_PAGE.defaultLimit)
    .meta({ description: `Page size, 1..${ORDER_PAGE.maxLimit}` }),
  cursor: z
    .string()
    .max(512)
    .transform((value, ctx) => {
      const cursor = decodeOrderCursor(value);
      if (!cursor) {
        ctx.addIssue({ code: 'custom', message: 'Invalid cursor: pass the nextCursor of a previous page unchanged' });
        return z.NEVER;
      }
      return cursor;
    })
    .optional()
    .meta({ description: 'The `nextCursor` of the previous page' }),
  status: orderStatusSchema.optional(),
});

/** A validated `GET /orders` query (the cursor decoded). */
export type ListOrdersQuery = z.output<typeof listOrdersQuerySchema>;

/** `GET /orders/:id` path params: the id must be a UUID. */
export const orderIdParamsSchema = z.object({ id: z.uuid().meta({ description: 'Order id (UUID)' }) });
