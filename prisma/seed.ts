/**
 * Seeds the demo catalogue: a few products with stock. Idempotent: existing products are left as they
 * are (their stock is never reset), and each product's opening stock is recorded once as the
 * `seed:<sku>` movement of the inventory ledger, in the same transaction as the product row.
 *
 * With `SEED_SIMULATOR_API_KEY` set (an `of_dev_…` key; docker-compose.yml sets one, the simulators'
 * `SIMULATOR_CALLBACK_API_KEY`), the seed also registers that key for the client `dev-warehouse` (scope `warehouse`)
 * unless it already works, so the simulated warehouse's packed reports are accepted; never under NODE_ENV=production. `npm start` does not need it: it makes its own keys (scripts/lib/dev-api-keys.ts).
 * Run: `DATABASE_URL=... npx tsx prisma/seed.ts` (npm start runs it after the migrations).
 */
import { ApiKeyEnv, isApiKeyFormat } from '../src/auth/api-key.js';
import { ApiKeyStore } from '../src/auth/api-key.store.js';
import { Scope } from '../src/auth/scopes.js';
import { createPrismaClient, type PrismaClient } from '../src/prisma/prisma.js';

/** The demo catalogue. Prices in integer minor units (cents), stock in units. */
export const CATALOGUE = [
  { sku: 'TEE-BLK-M', name: 'Organic cotton tee, black, M', priceMinor: 2499, currency: 'EUR', onHand: 120 },
  { sku: 'TEE-WHT-L', name: 'Organic cotton tee, white, L', priceMinor: 2499, currency: 'EUR', onHand: 80 },
  { sku: 'HOODIE-GRY-M', name: 'Heavyweight hoodie, grey, M', priceMinor: 6900, currency: 'EUR', onHand: 40 },
  { sku: 'MUG-ENAMEL', name: 'Enamel camp mug', priceMinor: 1450, currency: 'EUR', onHand: 200 },
  { sku: 'CAP-CANVAS', name: 'Canvas cap', priceMinor: 2200, currency: 'EUR', onHand: 25 },
  { sku: 'POSTER-A2', name: 'Limited print poster, A2 (numbered)', priceMinor: 4000, currency: 'EUR', onHand: 5 },
] as const;

async function main(): Promise<void> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error('DATABASE_URL is not set');
  const prisma = createPrismaClient(url, 2);
  try {
    let created = 0;
    for (const p of CATALOGUE) {
      await prisma.$transaction(async (tx) => {
        const inserted = await tx.$executeRaw`
          INSERT INTO products (sku, name, price_minor, currency, on_hand, reserved, updated_at)
          VALUES (${p.sku}, ${p.name}, ${p.priceMinor}, ${p.currency}, ${p.onHand}, 0, now())
          ON CONFLICT (sku) DO NOTHING`;
        if (inserted === 1) {
          created++;
          await tx.$executeRaw`
            INSERT INTO inventory_movements (id, sku, reason, on_hand_delta, reserved_delta, on_hand_after)
            VALUES (${`seed:${p.sku}`}, ${p.sku}, 'seed', ${p.onHand}, 0, ${p.onHand})
            ON CONFLICT (id) DO NOTHING`;
        }
      });
    }
    console.log(`seed: ${created} product(s) created, ${CATALOGUE.length - created} already present`);
    const simulatorKey = process.env.SEED_SIMULATOR_API_KEY?.trim();
    if (simulatorKey && process.env.NODE_ENV === 'production') {
      console.log('seed: SEED_SIMULATOR_API_KEY ignored under NODE_ENV=production (no development key is seeded)');
    } else if (simulatorKey) {
      await seedSimulatorKey(prisma, simulatorKey);
    }
  } finally {
    await prisma.$disconnect();
  }
}

/**
 * Registers `key` for the development warehouse client (scope `warehouse`) unless it already authenticates.
 * @throws Error when `key` is not an `of_dev_…` key (a live key is never seeded from the environment).
 */
async function seedSimulatorKey(prisma: PrismaClient, key: string): Promise<void> {
  if (!isApiKeyFormat(key) || !key.startsWith('of_dev_')) {
    throw new Error('SEED_SIMULATOR_API_KEY is not a development key (of_dev_ and 43 letters, digits, - or _)');
  }
  const store = new ApiKeyStore(prisma);
  if (await store.authenticate(key)) {
    console.log("seed: the simulators' callback key is registered already");
    return;
  }
  await store.createKey({
    clientId: 'dev-warehouse',
    clientName: 'Development warehouse (the simulator reports packed)',
    scopes: [Scope.Warehouse],
    env: ApiKeyEnv.Dev,
    label: 'docker compose (development)',
    key,
  });
  console.log('seed: registered the warehouse key of SEED_SIMULATOR_API_KEY (client dev-warehouse)');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
