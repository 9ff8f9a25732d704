/**
 * Seeds the demo catalogue: a few products with stock. Idempotent: existing products are left as they
 * are (their stock is never reset), and each product's opening stock is recorded once as the
 * `seed:<sku>` movement of the inventory ledger, in the same transaction as the product row.
 * Run: `DATABASE_URL=... npx tsx prisma/seed.ts` (npm start runs it after the migrations).
 */
import { createPrismaClient } from '../src/prisma/prisma.js';

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
  } finally {
    await prisma.$disconnect();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
