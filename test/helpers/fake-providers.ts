/**
 * In-memory providers for unit tests. They behave like the real ones on the point that matters:
 * the same idempotency key yields the same id and no second effect. They count calls and effects
 * separately, and can be told to fail the next N calls.
 */
import type { AccountingInvoice, AccountingProvider, EmailMessage, EmailProvider } from '../../activities/ports.js';
import { ProviderError, type ProviderFailureKind } from '../../activities/provider-error.js';

abstract class FakeProvider<TReq, TRes> {
  /** Every call, in order, with its key. */
  readonly calls: Array<{ key: string; request: TReq }> = [];
  /** Effects per key (a first call with a key is an effect; a replay is not). */
  readonly effects = new Map<string, TRes>();
  private failures: ProviderFailureKind[] = [];
  /** Delay of every call in ms, to widen race windows. */
  delayMs = 0;

  /** The next `times` calls fail with `kind` (after being counted as calls). */
  failNext(kind: ProviderFailureKind, times = 1): void {
    for (let i = 0; i < times; i++) this.failures.push(kind);
  }

  protected async handle(key: string, request: TReq, make: () => TRes): Promise<TRes> {
    this.calls.push({ key, request });
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    const failure = this.failures.shift();
    if (failure) throw new ProviderError(`simulated ${failure}`, failure, failure === 'unavailable' ? 503 : 422);
    const existing = this.effects.get(key);
    if (existing) return existing;
    const response = make();
    this.effects.set(key, response);
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
