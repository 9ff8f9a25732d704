/**
 * In-memory providers for unit tests. They behave like the real ones on the point that matters:
 * the same idempotency key yields the same id and no second effect. They count calls and effects
 * separately, and can be told to fail the next N calls.
 */
import { randomBytes } from 'node:crypto';
import type {
  AccountingInvoice,
  AccountingProvider,
  CarrierProvider,
  EmailMessage,
  EmailProvider,
  ShipmentRequest,
  ShipmentResult,
} from '../../activities/ports.js';
import { ProviderError, type ProviderFailureKind } from '../../activities/provider-error.js';

abstract class FakeProvider<TReq, TRes> {
  /** Every call, in order, with its key. */
  readonly calls: Array<{ key: string; request: TReq }> = [];
  /** Effects per key (a first call with a key is an effect; a replay is not). */
  readonly effects = new Map<string, TRes>();
  private failures: Array<{ kind: ProviderFailureKind; status?: number; afterEffect: boolean }> = [];
  /** Delay of every call in ms, to widen race windows. */
  delayMs = 0;

  /**
   * The next `times` calls fail with `kind` (after being counted as calls), with HTTP `status` (default 503
   * for `unavailable`, 409 for `conflict`, 401 for `unauthorized`, 422 for `rejected`).
   */
  failNext(kind: ProviderFailureKind, times = 1, status?: number): void {
    const byKind = { unavailable: 503, conflict: 409, unauthorized: 401, rejected: 422 } as const;
    for (let i = 0; i < times; i++) this.failures.push({ kind, status: status ?? byKind[kind], afterEffect: false });
  }

  /** The next call performs its effect, then its answer is lost (a timeout: the outcome looks unknown). */
  dropNextResponse(): void {
    this.failures.push({ kind: 'unavailable', afterEffect: true });
  }

  protected async handle(key: string, request: TReq, make: () => TRes): Promise<TRes> {
    this.calls.push({ key, request });
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const failure = this.failures.shift();
    if (failure && !failure.afterEffect) {
      throw new ProviderError(`simulated ${failure.kind}`, failure.kind, failure.status);
    }
    const existing = this.effects.get(key);
    const response = existing ?? make();
    this.effects.set(key, response);
    if (failure) throw new ProviderError('simulated timeout after the effect', 'unavailable');
    return response;
  }
}

/** Email provider fake. */
export class FakeEmailProvider extends FakeProvider<EmailMessage, { messageId: string }> implements EmailProvider {
  send(message: EmailMessage, idempotencyKey: string) {
    return this.handle(idempotencyKey, message, () => ({ messageId: `msg_${this.effects.size + 1}` }));
  }
}

/** Accounting system fake. */
export class FakeAccountingProvider
  extends FakeProvider<AccountingInvoice, { accountingId: string }>
  implements AccountingProvider
{
  upsertInvoice(invoice: AccountingInvoice, idempotencyKey: string) {
    return this.handle(idempotencyKey, invoice, () => ({ accountingId: `acc_${invoice.externalId}` }));
  }
}

/**
 * Carrier fake: shipment ids `shp_<12 hex>` and tracking numbers `1Z<16 upper-case hex>`, random (tracking
 * numbers are unique in the database across a suite's fakes), one pair per key.
 */
export class FakeCarrierProvider extends FakeProvider<ShipmentRequest, ShipmentResult> implements CarrierProvider {
  createShipment(request: ShipmentRequest, idempotencyKey: string) {
    return this.handle(idempotencyKey, request, () => ({
      shipmentId: `shp_${randomBytes(6).toString('hex')}`,
      trackingNumber: `1Z${randomBytes(8).toString('hex').toUpperCase()}`,
    }));
  }
}
