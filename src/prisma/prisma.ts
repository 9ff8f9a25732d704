/**
 * Creates the Prisma client used by the API, the worker, scripts and tests.
 * Prisma 6.19 with `engineType = "client"` talks to PostgreSQL through the `pg` driver adapter
 * (`@prisma/adapter-pg`), so no Rust query engine is downloaded.
 */
import { PrismaPg } from '@prisma/adapter-pg';
import { PrismaClient } from '../../prisma/generated/client.js';

/**
 * @param databaseUrl PostgreSQL connection string, e.g. `postgresql://postgres@127.0.0.1:5432/orders`.
 * @param poolSize maximum pool connections (default 10).
 */
export function createPrismaClient(databaseUrl: string, poolSize = 10): PrismaClient {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: databaseUrl, max: poolSize }) });
}

export { PrismaClient };
