/**
 * A shop written against the types openapi-typescript generates from the API's OpenAPI document
 * (./generated/openapi-typescript/schema.d.ts, made by test/e2e/openapi-client.e2e-spec.ts), called through
 * openapi-fetch. Compiled with `tsc --strict` (./tsconfig.json) and run against the app.
 *
 * It places an order with an Idempotency-Key, replays it, reads it back, pages the list, and narrows the problems of
 * an unknown SKU, an unknown order and a missing key by their `type`.
 */
import createClient, { type Middleware } from 'openapi-fetch';
import type { components, paths } from './generated/openapi-typescript/schema';

type Order = components['schemas']['Order'];

/** What the shop needs to run. */
export interface ShopSetup {
  baseUrl: string;
  /** A client key with orders:write and orders:read. */
  shopKey: string;
  /** The fetch every request goes through (the test records the exchanges). */
  fetch: typeof fetch;
}

/** What happened, for the test's assertions. */
export interface ShopOutcome {
  placed: Order;
  replayedId: string;
  read: Order;
  pagedIds: string[];
  unknownSkus: string[];
  notFoundStatus: number;
  unauthorized: string;
}

function fail(what: string, answer: unknown): never {
  throw new Error(`${what}: ${JSON.stringify(answer)}`);
}

/** Runs the shop; throws when an answer is not the one the document promises for the case. */
export async function runShop(setup: ShopSetup): Promise<ShopOutcome> {
  const shop = createClient<paths>({ baseUrl: setup.baseUrl, fetch: setup.fetch });
  const withKey: Middleware = {
    onRequest({ request }) {
      request.headers.set('Authorization', `Bearer ${setup.shopKey}`);
      return request;
    },
  };
  const anonymous = createClient<paths>({ baseUrl: setup.baseUrl, fetch: setup.fetch });
  shop.use(withKey);

  const inventory = await shop.GET('/inventory');
  if (!inventory.data) fail('inventory', inventory.error);
  const product = inventory.data.find((p) => p.available >= 1);
  if (!product) fail('no product with stock', inventory.data);

  const key = crypto.randomUUID();
  const body = { customer: { email: 'grace@example.com' }, lines: [{ sku: product.sku, quantity: 1 }] };
  const placed = await shop.POST('/orders', { body, params: { header: { 'Idempotency-Key': key } } });
  if (!placed.data) fail('place', placed.error);
  const replay = await shop.POST('/orders', { body, params: { header: { 'Idempotency-Key': key } } });
  if (!replay.data) fail('replay', replay.error);

  const read = await shop.GET('/orders/{id}', { params: { path: { id: placed.data.id } } });
  if (!read.data) fail('read', read.error);

  const pagedIds: string[] = [];
  let cursor: string | null = null;
  do {
    const page: Awaited<ReturnType<typeof listPage>> = await listPage(cursor);
    if (!page.data) fail('page', page.error);
    pagedIds.push(...page.data.items.map((o) => o.id));
    cursor = page.data.nextCursor;
  } while (cursor !== null && pagedIds.length < 10);

  const unknown = await shop.POST('/orders', { body: { ...body, lines: [{ sku: 'NO-SUCH-SKU', quantity: 1 }] } });
  if (unknown.error?.type !== 'https://order-fulfilment.dev/problems/unknown-sku') fail('unknown SKU', unknown.error);

  const missing = await shop.GET('/orders/{id}', { params: { path: { id: crypto.randomUUID() } } });
  if (missing.error?.type !== 'https://order-fulfilment.dev/problems/not-found') fail('missing', missing.error);

  const noKey = await anonymous.GET('/orders');
  if (noKey.error?.type !== 'https://order-fulfilment.dev/problems/unauthorized') fail('no key', noKey.error);

  return {
    placed: placed.data,
    replayedId: replay.data.id,
    read: read.data,
    pagedIds,
    unknownSkus: unknown.error.skus,
    notFoundStatus: missing.error.status,
    unauthorized: noKey.error.title,
  };

  function listPage(after: string | null) {
    return shop.GET('/orders', { params: { query: { limit: 2, ...(after !== null ? { cursor: after } : {}) } } });
  }
}
