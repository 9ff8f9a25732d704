/**
 * The accounting system: invoices upserted by our external id (`PUT /v1/invoices/:externalId`, PUT semantics:
 * create, or replace with a new version). In development the simulator plays it: 201 created / 200 replaced
 * `{ id: 'acc_inv_<hex>' (stable per external id), externalId, version }`, one `invoice.created` or
 * `invoice.updated` effect per new key. Credit notes (a return's refund against an invoice) the same way:
 * `PUT /v1/credit-notes/:externalId` → 201 / 200 `{ id: 'acc_cn_<hex>', externalId, version }`, one
 * `creditnote.created` or `creditnote.updated` effect per new key.
 */
import { z } from 'zod';
import { defineProvider, SimulatedRefusal } from './kit/define.js';

const minor = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);

/** An invoice as the simulator stores it (`GET /v1/invoices/:externalId`). */
interface StoredInvoice {
  id: string;
  externalId: string;
  version: number;
  createdAt: string;
  updatedAt: string;
  [member: string]: unknown;
}

export const accounting = defineProvider({
  name: 'accounting',
  title: 'Accounting system',
  limits: { callsPerSecond: 50, concurrentCallsPerWorker: 20 },
  operations: {
    upsertInvoice: {
      description: 'Creates or replaces the invoice with this external id (amounts in minor units).',
      method: 'PUT',
      path: '/v1/invoices/:externalId',
      request: z.object({
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
      }),
      response: z.object({ id: z.string().min(1), externalId: z.string(), version: z.number().int() }),
      providerId: (res) => res.id,
      simulate: ({ request, params, state, newId }) => {
        if (request.externalId !== params.externalId) {
          throw new SimulatedRefusal(
            422,
            'external-id-mismatch',
            `Body externalId "${request.externalId}" differs from the path's "${params.externalId}".`,
          );
        }
        const now = new Date().toISOString();
        const previous = state.get(request.externalId) as StoredInvoice | undefined;
        const invoice: StoredInvoice = {
          ...request,
          id: previous?.id ?? newId('acc_inv'),
          version: (previous?.version ?? 0) + 1,
          createdAt: previous?.createdAt ?? now,
          updatedAt: now,
        };
        state.set(invoice.externalId, invoice);
        return {
          status: previous ? 200 : 201,
          body: { id: invoice.id, externalId: invoice.externalId, version: invoice.version },
          effect: previous ? 'invoice.updated' : 'invoice.created',
        };
      },
    },
    upsertCreditNote: {
      description: 'Creates or replaces the credit note with this external id against an invoice (minor units).',
      method: 'PUT',
      path: '/v1/credit-notes/:externalId',
      request: z.object({
        externalId: z.string().min(1).max(255),
        invoiceExternalId: z.string().min(1).max(255),
        orderId: z.string().min(1),
        currency: z.string().regex(/^[A-Z]{3}$/, 'expected an ISO 4217 code of three upper-case letters'),
        totalMinor: minor,
        lines: z.array(
          z.object({
            sku: z.string().min(1),
            quantity: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
            amountMinor: minor,
          }),
        ),
      }),
      response: z.object({ id: z.string().min(1), externalId: z.string(), version: z.number().int() }),
      providerId: (res) => res.id,
      simulate: ({ request, params, state, newId }) => {
        if (request.externalId !== params.externalId) {
          throw new SimulatedRefusal(
            422,
            'external-id-mismatch',
            `Body externalId "${request.externalId}" differs from the path's "${params.externalId}".`,
          );
        }
        const now = new Date().toISOString();
        const stateKey = `credit-note:${request.externalId}`;
        const previous = state.get(stateKey) as StoredInvoice | undefined;
        const note: StoredInvoice = {
          ...request,
          id: previous?.id ?? newId('acc_cn'),
          version: (previous?.version ?? 0) + 1,
          createdAt: previous?.createdAt ?? now,
          updatedAt: now,
        };
        state.set(stateKey, note);
        return {
          status: previous ? 200 : 201,
          body: { id: note.id, externalId: note.externalId, version: note.version },
          effect: previous ? 'creditnote.updated' : 'creditnote.created',
        };
      },
    },
  },
  reads: {
    creditNote: {
      path: '/v1/credit-notes/:externalId',
      simulate: ({ params, state }) => {
        const note = state.get(`credit-note:${params.externalId ?? ''}`);
        if (!note) {
          throw new SimulatedRefusal(404, 'not-found', `No credit note with externalId "${params.externalId}".`);
        }
        return { status: 200, body: note };
      },
    },
    invoice: {
      path: '/v1/invoices/:externalId',
      simulate: ({ params, state }) => {
        const invoice = state.get(params.externalId ?? '');
        if (!invoice) {
          throw new SimulatedRefusal(404, 'not-found', `No invoice with externalId "${params.externalId}".`);
        }
        return { status: 200, body: invoice };
      },
    },
  },
});
