/**
 * What an API key may do. A key carries one or more scopes; each route requires one (see the README's
 * "Authentication" table). `operator` satisfies every requirement and lifts the own-orders restriction.
 */

/** The scopes an API key can carry. */
export const Scope = {
  /** `POST /orders`: place orders (they belong to the key's client). */
  OrdersWrite: 'orders:write',
  /** `GET /orders`, `GET /orders/:id`: read and list the client's own orders. */
  OrdersRead: 'orders:read',
  /** `POST /orders/:id/cancel`: cancel the client's own orders. */
  OrdersCancel: 'orders:cancel',
  /** `PUT /inventory/:sku` and `GET /inventory/:sku/movements`: set stock and read the ledger. */
  InventoryWrite: 'inventory:write',
  /**
   * `POST /orders/:id/packed`: a warehouse reports orders packed (any client's order; nothing else). An API key with
   * this scope rather than a signed webhook: see docs/api.md, "The warehouse reports back".
   */
  Warehouse: 'warehouse',
  /** Everything: every client's orders, operator retries, cancelling any order, health details. */
  Operator: 'operator',
} as const;
export type Scope = (typeof Scope)[keyof typeof Scope];

/** Every scope, in the order above. */
export const ALL_SCOPES: readonly Scope[] = Object.values(Scope);

/** The scopes of a customer-facing client key (`npm start`'s development client keys). */
export const CLIENT_SCOPES: readonly Scope[] = [Scope.OrdersWrite, Scope.OrdersRead, Scope.OrdersCancel];

/** True when `value` names a scope. */
export function isScope(value: string): value is Scope {
  return (ALL_SCOPES as readonly string[]).includes(value);
}

/**
 * Parses a comma- or space-separated scope list (`orders:write,orders:read`), de-duplicated, in {@link ALL_SCOPES}
 * order.
 * @throws Error naming the unknown scopes, or when the list is empty.
 */
export function parseScopes(list: string): Scope[] {
  const names = list
    .split(/[\s,]+/)
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !isScope(n));
  if (unknown.length > 0) {
    throw new Error(`Unknown scope(s): ${unknown.join(', ')}; known: ${ALL_SCOPES.join(', ')}`);
  }
  if (names.length === 0) throw new Error(`No scope given; known: ${ALL_SCOPES.join(', ')}`);
  return ALL_SCOPES.filter((s) => names.includes(s));
}

/** True when a key with `granted` scopes may do what `required` allows (`operator` allows everything). */
export function hasScope(granted: readonly string[], required: Scope): boolean {
  return granted.includes(Scope.Operator) || granted.includes(required);
}
