/**
 * The accounting system client: `AccountingProvider` (activities/ports.ts) over HTTP against
 * `PUT /v1/invoices/:externalId`, the simulator in development, the real system in production.
 */
import type { AccountingInvoice, AccountingProvider, AccountingUpsertResult } from '../../activities/ports.js';
import { ProviderError } from '../../activities/provider-error.js';
import { callProvider, type ProviderHttpOptions } from './provider-http.js';

/** Options of {@link HttpAccountingProvider}: base URL, bearer key and per-request timeout (ms). */
export type HttpAccountingProviderOptions = ProviderHttpOptions;

/**
 * Creates or replaces invoices through `PUT <baseUrl>/v1/invoices/<externalId>` with the invoice as the body
 * (amounts in integer minor units), expecting 200/201 `{ id: string, externalId, version }`.
 */
export class HttpAccountingProvider implements AccountingProvider {
  constructor(private readonly options: HttpAccountingProviderOptions) {}

  /**
   * Upserts `invoice` by `externalId`. The key goes out as `Idempotency-Key` on every attempt, so a retry
   * after a lost response replays the provider's first answer instead of writing again.
   * @param idempotencyKey Derived from the work, e.g. `invoice-sync:<invoiceId>`; at most 255 characters.
   * @returns `{ accountingId }`, the accounting system's id (`acc_inv_...`), stable per `externalId`.
   * @throws ProviderError `unavailable` (5xx, 408, 425, 429, timeout after `timeoutMs` ms, network error, an
   *   answer without an `id`), `conflict` (409: same key still in flight), `unauthorized` (401/403),
   *   `rejected` (other 4xx, e.g. 422 invalid invoice).
   */
  async upsertInvoice(invoice: AccountingInvoice, idempotencyKey: string): Promise<AccountingUpsertResult> {
    const path = `/v1/invoices/${encodeURIComponent(invoice.externalId)}`;
    const { status, body } = await callProvider(this.options, {
      provider: 'accounting',
      method: 'PUT',
      path,
      idempotencyKey,
      body: {
        externalId: invoice.externalId,
        orderId: invoice.orderId,
        customerEmail: invoice.customerEmail,
        currency: invoice.currency,
        totalMinor: invoice.totalMinor,
        issuedAt: invoice.issuedAt,
        lines: invoice.lines.map((l) => ({ sku: l.sku, quantity: l.quantity, unitPriceMinor: l.unitPriceMinor })),
      },
    });
    const id = (body as { id?: unknown } | undefined)?.id;
    if (typeof id !== 'string' || id === '') {
      throw new ProviderError(
        `accounting provider PUT ${path} → ${status} without an invoice id`,
        'unavailable',
        status,
      );
    }
    return { accountingId: id };
  }
}
