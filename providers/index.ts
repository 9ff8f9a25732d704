/**
 * The provider registry: every provider this service calls, defined once (./<name>.provider.ts). The worker builds a
 * client and a task queue for each, the configuration reads `<NAME>_PROVIDER_URL`, `<NAME>_PROVIDER_API_KEY` and its
 * settings, the one simulator process serves each under `/<name>`, and the tests get a fake of each. Adding a
 * provider is one file and two lines here, above the markers (`npm run new:step -- <step> --provider <name>` writes them).
 */
import { accounting } from './accounting.provider.js';
import { carrier } from './carrier.provider.js';
import { email } from './email.provider.js';
import type { ProviderDefinition } from './kit/define.js';
import { payments } from './payments.provider.js';
import { warehouse } from './warehouse.provider.js';
// new:step inserts imports above this line.

/** Every provider, by name. */
export const PROVIDERS = {
  email,
  carrier,
  accounting,
  warehouse,
  payments,
  // new:step inserts providers above this line.
} as const satisfies Record<string, ProviderDefinition>;

/** The name of a registered provider. */
export type ProviderName = keyof typeof PROVIDERS;

/** The registered providers, in registry order. */
export const PROVIDER_LIST: readonly ProviderDefinition[] = Object.values(PROVIDERS);
