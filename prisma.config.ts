/**
 * Prisma CLI configuration (Prisma 6.19, JavaScript schema engine + driver adapter).
 *
 * Runs fully offline: no Rust engine is downloaded. The adapter is `@prisma/adapter-pg` 7.10,
 * because adapter-pg 6.19 cannot read PostgreSQL's `name` column type (prisma/orm#27403).
 * `DATABASE_URL` must name the target database, e.g. `postgresql://postgres@127.0.0.1:5432/orders`.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { defineConfig } from 'prisma/config';

// Prisma 6.19 tries to download a query engine for any command when DATABASE_URL is unset, even for
// `prisma generate` (offline that fails). The default matches src/config/config.ts.
process.env.DATABASE_URL ??= 'postgresql://postgres@127.0.0.1:5432/order_fulfilment';

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: 'prisma/schema.prisma',
  migrations: { path: 'prisma/migrations', seed: 'tsx prisma/seed.ts' },
  adapter: async () => new PrismaPg({ connectionString: process.env.DATABASE_URL }),
});
