/**
 * The simulated providers' ledgers, read from the one simulator process (`<simulatorUrl>/<name>/_sim/ledger`, every
 * provider of providers/index.ts), and the check every run that places orders ends with: exactly one effect per
 * idempotency key in every provider's ledger, and a key for every order at every provider the steps call. Shared by
 * the demo, the bench and the scale-out test, so a new provider is checked without an edit.
 */
import { PROVIDER_LIST } from '../../providers/index.js';
import { providerLedgerUrl, providersEveryOrderCalls } from './stack-definition.js';

/** An order id inside an idempotency key (`shipment:<orderId>`). */
const ORDER_ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

/** One provider's ledger: effects per idempotency key. */
export interface ProviderLedger {
  provider: string;
  countsByKey: Record<string, number>;
}

/** Reads every provider's ledger. @throws Error when a ledger does not answer 200 within 10 s. */
export async function readLedgers(simulatorUrl: string, providers = PROVIDER_LIST): Promise<ProviderLedger[]> {
  return Promise.all(
    providers.map(async (p) => {
      const res = await fetch(providerLedgerUrl(simulatorUrl, p.name), { signal: AbortSignal.timeout(10_000) });
      if (!res.ok) throw new Error(`GET ${res.url} answered ${res.status}`);
      return { provider: p.name, countsByKey: ((await res.json()) as ProviderLedger).countsByKey ?? {} };
    }),
  );
}

/** The effects a ledger holds for one order: its keys naming the order id, and their counts. */
export function orderEffects(ledger: ProviderLedger, orderId: string): Record<string, number> {
  return Object.fromEntries(Object.entries(ledger.countsByKey).filter(([key]) => key.includes(orderId)));
}

/** What {@link checkLedger} found in one ledger. */
export interface LedgerCheck {
  provider: string;
  keys: number;
  effects: number;
  /** Keys with other than exactly one effect. */
  notOnce: number;
  /** Orders of the set with at least one key. */
  ordersCovered: number;
  /** Whether every order must have a key here (a step calls this provider). */
  coverageRequired: boolean;
  ok: boolean;
}

/**
 * Checks one ledger: exactly one effect per key; when every order calls the provider (a step without a condition calls
 * it), a key for every order of `orderIds`
 * (other orders' keys, e.g. of an earlier run against the same simulators, are counted but not required).
 */
export function checkLedger(ledger: ProviderLedger, orderIds: ReadonlySet<string>): LedgerCheck {
  const counts = Object.entries(ledger.countsByKey);
  const covered = new Set(counts.map(([key]) => ORDER_ID.exec(key)?.[0]).filter((id) => id && orderIds.has(id)));
  const coverageRequired = providersEveryOrderCalls().some((p) => p.name === ledger.provider);
  const notOnce = counts.filter(([, c]) => c !== 1).length;
  const ok = notOnce === 0 && (!coverageRequired || covered.size === orderIds.size);
  const effects = counts.reduce((n, [, c]) => n + c, 0);
  return {
    provider: ledger.provider,
    keys: counts.length,
    effects,
    notOnce,
    ordersCovered: covered.size,
    coverageRequired,
    ok,
  };
}

/** `email ledger: 12 keys, 12 effects, 0 keys with ≠ 1 effect, 12 of 12 orders`. */
export function describeLedgerCheck(c: LedgerCheck, orders: number): string {
  const coverage = `${c.ordersCovered} of ${orders} orders${c.coverageRequired ? '' : ' (not every order calls it)'}`;
  return `${c.provider} ledger: ${c.keys} keys, ${c.effects} effects, ${c.notOnce} keys with ≠ 1 effect, ${coverage}`;
}
