/**
 * The simulated providers' ledgers and the check every run that places orders ends with: one effect per key in every
 * ledger, and every order's key at each provider every order calls (the demo, the bench, the scale-out test).
 */
import { PROVIDER_LIST } from '../../providers/index.js';
import { providerLedgerUrl, providersEveryOrderCalls } from './stack-definition.js';

const ORDER_ID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/;

/** One provider's ledger: effects per idempotency key. */
export type ProviderLedger = { provider: string; countsByKey: Record<string, number> };

/** Reads every provider's ledger. @throws Error when a ledger does not answer 200 within 10 s. */
export async function readLedgers(simulatorUrl: string, providers = PROVIDER_LIST): Promise<ProviderLedger[]> {
  const read = async (provider: string): Promise<ProviderLedger> => {
    const res = await fetch(providerLedgerUrl(simulatorUrl, provider), { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`GET ${res.url} answered ${res.status}`);
    return { provider, countsByKey: ((await res.json()) as ProviderLedger).countsByKey ?? {} };
  };
  return Promise.all(providers.map((p) => read(p.name)));
}

/** The effects a ledger holds for one order: its keys naming the order id, and their counts. */
export const orderEffects = (ledger: ProviderLedger, orderId: string): Record<string, number> =>
  Object.fromEntries(Object.entries(ledger.countsByKey).filter(([key]) => key.includes(orderId)));

/** One ledger's check: `notOnce` keys with ≠ 1 effect; with `coverageRequired`, a key for every order of `orderIds`. */
export function checkLedger(ledger: ProviderLedger, orderIds: ReadonlySet<string>) {
  const counts = Object.entries(ledger.countsByKey);
  const covered = new Set(counts.map(([key]) => ORDER_ID.exec(key)?.[0]).filter((id) => id && orderIds.has(id)));
  const coverageRequired = providersEveryOrderCalls().some((p) => p.name === ledger.provider);
  const notOnce = counts.filter(([, c]) => c !== 1).length;
  const ok = notOnce === 0 && (!coverageRequired || covered.size === orderIds.size);
  const [keys, effects] = [counts.length, counts.reduce((n, [, c]) => n + c, 0)];
  return { provider: ledger.provider, keys, effects, notOnce, ordersCovered: covered.size, coverageRequired, ok };
}

/** `email ledger: 12 keys, 12 effects, 0 keys with ≠ 1 effect, 12 of 12 orders`. */
export function describeLedgerCheck(c: ReturnType<typeof checkLedger>, orders: number): string {
  const coverage = `${c.ordersCovered} of ${orders} orders${c.coverageRequired ? '' : ' (not every order calls it)'}`;
  return `${c.provider} ledger: ${c.keys} keys, ${c.effects} effects, ${c.notOnce} keys with ≠ 1 effect, ${coverage}`;
}
