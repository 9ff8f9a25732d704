/**
 * API clients and keys for tests. The global setup stores three clients with one key each in the template
 * database ({@link createTestApiKeys}); suites read them with {@link testKeys} and call the API with {@link api}:
 * - `shop` (the default of {@link api}, `startTestStack().http` and `ApiSuite.http()`): orders:write, orders:read,
 *   orders:cancel, inventory:write;
 * - `otherShop`: orders:write, orders:read, orders:cancel (a second customer-facing client);
 * - `operator`: operator;
 * - `warehouse`: warehouse (the simulated warehouse's key).
 */
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Server } from 'node:http';
import request from 'supertest';
import { inject } from 'vitest';
import { ApiKeyEnv } from '../../src/auth/api-key.js';
import { ApiKeyStore } from '../../src/auth/api-key.store.js';
import { CLIENT_SCOPES, Scope } from '../../src/auth/scopes.js';
import { createPrismaClient } from '../../src/prisma/prisma.js';

/** One stored key: its client and the key itself. */
export interface TestApiKey {
  client: string;
  key: string;
}

/** The keys of the global setup. */
export interface TestApiKeys {
  shop: TestApiKey;
  otherShop: TestApiKey;
  operator: TestApiKey;
  /** Scope `warehouse`: reports orders packed (the test stack's simulated warehouse uses it). */
  warehouse: TestApiKey;
}

/** Creates the test clients and keys in the database at `url` (the template). */
export async function createTestApiKeys(url: string): Promise<TestApiKeys> {
  const prisma = createPrismaClient(url, 2);
  try {
    const store = new ApiKeyStore(prisma);
    const make = async (clientId: string, scopes: readonly Scope[]): Promise<TestApiKey> => {
      const created = await store.createKey({ clientId, scopes, env: ApiKeyEnv.Dev, label: 'tests' });
      return { client: clientId, key: created.key };
    };
    return {
      shop: await make('test-shop', [...CLIENT_SCOPES, Scope.InventoryWrite]),
      otherShop: await make('test-other-shop', CLIENT_SCOPES),
      operator: await make('test-ops', [Scope.Operator]),
      warehouse: await make('test-warehouse', [Scope.Warehouse]),
    };
  } finally {
    await prisma.$disconnect();
  }
}

/** The keys stored by the global setup (call inside a test file). */
export function testKeys(): TestApiKeys {
  return inject('apiKeys');
}

/** `Bearer <key>`. */
export function bearer(key: string): string {
  return `Bearer ${key}`;
}

/**
 * A supertest agent on the API that sends `Authorization: Bearer <key>` (default: the `shop` key) with every
 * request; `.set('Authorization', …)` or `.unset('Authorization')` on one request overrides it.
 */
export function api(app: NestExpressApplication | Server, key: string = testKeys().shop.key) {
  const server = 'getHttpServer' in app ? (app.getHttpServer() as Server) : app;
  return request.agent(server).set('Authorization', bearer(key));
}
