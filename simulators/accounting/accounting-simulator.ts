/**
 * The accounting system simulator: invoices keyed by our invoice number (`externalId`), PUT semantics.
 *
 * - `PUT /v1/invoices/:externalId` (effectful; `Idempotency-Key` and bearer token required) body
 *   `{ externalId, orderId, customerEmail, currency (ISO 4217, 3 upper-case letters), totalMinor (integer >= 0,
 *   minor units), issuedAt (ISO 8601 date-time), lines: [{ sku, quantity (integer > 0), unitPriceMinor
 *   (integer >= 0) }] }` → 201 on create / 200 on replace, `{ id: 'acc_inv_<hex>', externalId, version }`.
 *   `id` is assigned on create and kept by every replace; `version` starts at 1 and grows by 1 per replace.
 *   Effects: `invoice.created` / `invoice.updated`, one per new idempotency key.
 *   An invalid body, or a body `externalId` other than the path's → 422 problem+json.
 * - `GET /v1/invoices/:externalId` → 200 the stored invoice, or 404 problem+json.
 *
 * Plus the `/_sim` control API of {@link startIdempotentSimulator}.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { startIdempotentSimulator, type RunningSimulator } from '../shared/idempotent-simulator.js';
import { HttpProblem } from '../shared/problem.js';
import { validateBody } from '../shared/validate-body.js';

/** Effect kind of a PUT that created the invoice. */
export const INVOICE_CREATED_EFFECT = 'invoice.created';
/** Effect kind of a PUT that replaced an existing invoice. */
export const INVOICE_UPDATED_EFFECT = 'invoice.updated';

const minor = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** Body of `PUT /v1/invoices/:externalId`. Money in integer minor units, never floats. */
export const upsertInvoiceSchema = z.object({
  externalId: z.string().min(1).max(255),
  orderId: z.string().min(1),
  customerEmail: z.email(),
  currency: z.string().regex(/^[A-Z]{3}$/, 'expected an ISO 4217 code of three upper-case letters'),
  totalMinor: minor,
  issuedAt: z.iso.datetime({ offset: true }),
  lines: z.array(
    z.object({
      sku: z.string().min(1),
      quantity: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
      unitPriceMinor: minor,
    }),
  ),
});

/** A validated upsert body. */
export type UpsertInvoiceBody = z.infer<typeof upsertInvoiceSchema>;

/** An invoice as the simulator stores it (the answer of `GET /v1/invoices/:externalId`). */
export interface StoredInvoice extends UpsertInvoiceBody {
  /** `acc_inv_<24 hex>`, stable per externalId. */
  id: string;
  /** 1 on create, +1 per replace. */
  version: number;
  /** ISO 8601. */
  createdAt: string;
  /** ISO 8601. */
  updatedAt: string;
}

/** Options of {@link startAccountingSimulator}. */
export interface AccountingSimulatorOptions {
  /** Bearer token to enforce; when unset any bearer token is accepted. */
  apiKey?: string;
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
}

/** A running accounting simulator, with read access to its invoices. */
export interface RunningAccountingSimulator extends RunningSimulator {
  /** The current invoice of `externalId`, or undefined. A copy. */
  invoice(externalId: string): StoredInvoice | undefined;
  /** Every current invoice, in creation order. Copies. */
  invoices(): StoredInvoice[];
}

/**
 * Starts the accounting system simulator over real HTTP.
 * @throws the listen error (e.g. `EADDRINUSE`).
 */
export async function startAccountingSimulator(
  options: AccountingSimulatorOptions = {},
): Promise<RunningAccountingSimulator> {
  const invoices = new Map<string, StoredInvoice>();
  const copy = (inv: StoredInvoice): StoredInvoice => structuredClone(inv);
  const sim = await startIdempotentSimulator({
    name: 'accounting',
    ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
    ...(options.host === undefined ? {} : { host: options.host }),
    port: options.port ?? 0,
    onReset: () => invoices.clear(),
    effectful: [
      {
        method: 'PUT',
        path: '/v1/invoices/:externalId',
        handle: ({ body, params }) => {
          const input = validateBody(upsertInvoiceSchema, body);
          if (input.externalId !== params.externalId) {
            throw new HttpProblem(
              422,
              'external-id-mismatch',
              'Validation failed',
              `Body externalId "${input.externalId}" differs from the path's "${params.externalId}".`,
            );
          }
          const now = new Date().toISOString();
          const previous = invoices.get(input.externalId);
          const invoice: StoredInvoice = {
            ...input,
            id: previous?.id ?? `acc_inv_${randomBytes(12).toString('hex')}`,
            version: (previous?.version ?? 0) + 1,
            createdAt: previous?.createdAt ?? now,
            updatedAt: now,
          };
          invoices.set(invoice.externalId, invoice);
          return {
            status: previous ? 200 : 201,
            body: { id: invoice.id, externalId: invoice.externalId, version: invoice.version },
            effects: [previous ? INVOICE_UPDATED_EFFECT : INVOICE_CREATED_EFFECT],
          };
        },
      },
    ],
    reads: [
      {
        path: '/v1/invoices/:externalId',
        handle: ({ params }) => {
          const invoice = invoices.get(params.externalId ?? '');
          if (!invoice) {
            throw new HttpProblem(
              404,
              'not-found',
              'Invoice not found',
              `No invoice with externalId "${params.externalId}".`,
            );
          }
          return { status: 200, body: invoice };
        },
      },
    ],
  });
  return {
    ...sim,
    invoice: (externalId) => {
      const inv = invoices.get(externalId);
      return inv && copy(inv);
    },
    invoices: () => [...invoices.values()].map(copy),
  };
}
