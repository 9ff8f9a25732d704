/**
 * A shop written against the SDK that @hey-api/openapi-ts generates from the API's OpenAPI document
 * (./generated/hey-api, made by test/e2e/openapi-client.e2e-spec.ts). It is compiled with `tsc --strict`
 * (./tsconfig.json) and run against the app: what an integrator would write, with nothing typed by hand.
 *
 * It reads the catalogue and the steps, places an order with an Idempotency-Key and replays it, reuses the key for
 * another body, polls the order until it is final, cancels one order before its confirmation and one after it,
 * asks an operator retry of an order that does not wait, pages the order list, and meets the errors a client must
 * handle (400, 401, 403, 404, 413, 422), narrowing each problem by its `type` to read its extension members.
 */
import { createClient, createConfig } from './generated/hey-api/client';
import {
  cancelOrder,
  checkHealth,
  createOrder,
  getOrder,
  getSteps,
  listInventory,
  listOrders,
  retryOrder,
  setStock,
} from './generated/hey-api/sdk.gen';
import type { Order, OrderStatus } from './generated/hey-api/types.gen';

/** What the shop needs to run. */
export interface ShopSetup {
  baseUrl: string;
  /** A client key with orders:write, orders:read, orders:cancel and inventory:write. */
  shopKey: string;
  /** An operator key. */
  operatorKey: string;
  /** The fetch every request goes through (the test records the exchanges). */
  fetch: typeof fetch;
  /**
   * Makes the next order's confirmation wait (the test delays the email provider), so a cancel sent after
   * `confirmationDelayed(id)` resolves reaches the order before the point of no return.
   */
  delayNextConfirmation(): void;
  confirmationDelayed(orderId: string): Promise<void>;
}

/** What happened, for the test's assertions. */
export interface ShopOutcome {
  placed: Order;
  replayedId: string;
  replayedHeader: string | null;
  location: string | null;
  reusedKeyProblem: string;
  finalStatus: OrderStatus;
  cancelledStatus: OrderStatus;
  notCancellableStatus: OrderStatus;
  notAwaitingRetry: { orderStatus: OrderStatus; waitingFor: string | null };
  pagedIds: string[];
  unknownSkus: string[];
  validationPaths: string[];
  notFound: string;
  unauthorizedChallenge: string | null;
  forbiddenScope: string;
  tooLargeStatus: number;
  health: string;
}

/** Fails the run with what the API answered. */
function fail(what: string, answer: unknown): never {
  throw new Error(`${what}: ${JSON.stringify(answer)}`);
}

const FINAL: readonly OrderStatus[] = ['completed', 'failed', 'cancelled'];

/** Runs the shop; throws when an answer is not the one the document promises for the case. */
export async function runShop(setup: ShopSetup): Promise<ShopOutcome> {
  const shop = createClient(createConfig({ baseUrl: setup.baseUrl, fetch: setup.fetch, auth: () => setup.shopKey }));
  const ops = createClient(createConfig({ baseUrl: setup.baseUrl, fetch: setup.fetch, auth: () => setup.operatorKey }));
  const anonymous = createClient(createConfig({ baseUrl: setup.baseUrl, fetch: setup.fetch }));

  const health = await checkHealth({ client: anonymous });
  if (!health.data) fail('health', health.error);

  const steps = await getSteps({ client: shop });
  if (!steps.data) fail('steps', steps.error);
  const inventory = await listInventory({ client: shop });
  if (!inventory.data) fail('inventory', inventory.error);
  const product = inventory.data.find((p) => p.available >= 5);
  if (!product) fail('no product with stock', inventory.data);

  // Place with an Idempotency-Key, then replay the same request.
  const key = crypto.randomUUID();
  const body = { customer: { email: 'ada@example.com', name: 'Ada' }, lines: [{ sku: product.sku, quantity: 1 }] };
  const placed = await createOrder({ client: shop, body, headers: { 'Idempotency-Key': key } });
  if (!placed.data) fail('place', placed.error);
  const replay = await createOrder({ client: shop, body, headers: { 'Idempotency-Key': key } });
  if (!replay.data) fail('replay', replay.error);
  const reused = await createOrder({
    client: shop,
    body: { ...body, lines: [{ sku: product.sku, quantity: 2 }] },
    headers: { 'Idempotency-Key': key },
  });
  if (reused.error?.type !== 'https://order-fulfilment.dev/problems/idempotency-key-reused') {
    fail('same key, other body', reused.error);
  }

  // Poll until the order is final.
  let current: Order = placed.data;
  const deadline = Date.now() + 45_000;
  while (!FINAL.includes(current.status)) {
    if (Date.now() > deadline) fail('order not final in time', current);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const read = await getOrder({ client: shop, path: { id: current.id } });
    if (!read.data) fail('poll', read.error);
    current = read.data;
  }

  // Too late to cancel: the problem names the order's status.
  const late = await cancelOrder({ client: shop, path: { id: current.id }, body: { reason: 'changed my mind' } });
  if (late.error?.type !== 'https://order-fulfilment.dev/problems/order-not-cancellable') fail('late cancel', late);
  const notCancellableStatus = late.error.orderStatus;

  // In time to cancel: the confirmation waits, so the cancel is honoured.
  setup.delayNextConfirmation();
  const second = await createOrder({ client: shop, body, headers: { 'Idempotency-Key': crypto.randomUUID() } });
  if (!second.data) fail('second order', second.error);
  await setup.confirmationDelayed(second.data.id);
  const cancel = await cancelOrder({
    client: shop,
    path: { id: second.data.id },
    body: { reason: 'changed my mind' },
    headers: { 'Idempotency-Key': crypto.randomUUID() },
  });
  if (!cancel.data) fail('cancel', cancel.error);

  // An operator retry of an order that waits for none.
  const retry = await retryOrder({ client: ops, path: { id: current.id }, body: {} });
  if (retry.error?.type !== 'https://order-fulfilment.dev/problems/order-not-awaiting-retry') fail('retry', retry);
  const notAwaitingRetry = { orderStatus: retry.error.orderStatus, waitingFor: retry.error.waitingFor };

  // Page through the shop's orders, one per page.
  const pagedIds: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await listOrders({ client: shop, query: { limit: 1, ...(cursor ? { cursor } : {}) } });
    if (!page.data) fail('page', page.error);
    pagedIds.push(...page.data.items.map((o) => o.id));
    cursor = page.data.nextCursor ?? undefined;
  } while (cursor && pagedIds.length < 10);

  // The errors a client handles.
  const unknown = await createOrder({ client: shop, body: { ...body, lines: [{ sku: 'NO-SUCH-SKU', quantity: 1 }] } });
  if (unknown.error?.type !== 'https://order-fulfilment.dev/problems/unknown-sku') fail('unknown SKU', unknown);
  const unknownSkus = unknown.error.skus;

  const invalid = await createOrder({ client: shop, body: { ...body, lines: [{ sku: product.sku, quantity: 0 }] } });
  if (invalid.error?.type !== 'https://order-fulfilment.dev/problems/validation-error') fail('invalid', invalid);
  const validationPaths = invalid.error.errors.map((e) => e.path);

  const missing = await getOrder({ client: shop, path: { id: crypto.randomUUID() } });
  if (missing.error?.type !== 'https://order-fulfilment.dev/problems/not-found') fail('missing order', missing);

  const noKey = await listOrders({ client: anonymous });
  if (noKey.error?.type !== 'https://order-fulfilment.dev/problems/unauthorized') fail('no key', noKey);

  const forbidden = await retryOrder({ client: shop, path: { id: current.id } });
  if (forbidden.error?.type !== 'https://order-fulfilment.dev/problems/forbidden') fail('forbidden', forbidden);

  const unknownProduct = await setStock({ client: shop, path: { sku: 'NO-SUCH-SKU' }, body: { onHand: 1 } });
  if (unknownProduct.error?.type !== 'https://order-fulfilment.dev/problems/not-found') fail('stock', unknownProduct);

  const huge = await createOrder({
    client: shop,
    body: { ...body, lines: [{ sku: 'X'.repeat(200_000), quantity: 1 }] },
  });
  if (!huge.error) fail('a body over the limit', huge.data);

  return {
    placed: placed.data,
    replayedId: replay.data.id,
    replayedHeader: replay.response.headers.get('Idempotent-Replayed'),
    location: placed.response.headers.get('Location'),
    reusedKeyProblem: reused.error.type,
    finalStatus: current.status,
    cancelledStatus: cancel.data.status,
    notCancellableStatus,
    notAwaitingRetry,
    pagedIds,
    unknownSkus,
    validationPaths,
    notFound: missing.error.detail ?? '',
    unauthorizedChallenge: noKey.response.headers.get('WWW-Authenticate'),
    forbiddenScope: forbidden.error.requiredScope,
    tooLargeStatus: huge.response.status,
    health: health.data.status,
  };
}
