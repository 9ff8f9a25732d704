/**
 * Which orders a caller may see and act on: its own client's, or every client's (`operator` keys, and the API's
 * own internal reads). Orders of other clients answer 404, as if they did not exist.
 */
import type { Prisma } from '../../prisma/generated/client.js';
import type { AuthenticatedClient } from '../auth/api-key.store.js';
import { hasScope, Scope } from '../auth/scopes.js';

/** A caller's view of orders. */
export type OrderAccess =
  /** Only the orders of this client. */
  | { clientId: string }
  /** Every order (operators; internal use such as idempotency recovery). */
  | { allClients: true };

/** Every order: for operators and internal reads. */
export const ALL_ORDERS: OrderAccess = { allClients: true };

/** The access of an authenticated caller: all orders with `operator`, else its own client's. */
export function orderAccessOf(client: AuthenticatedClient): OrderAccess {
  return hasScope(client.scopes, Scope.Operator) ? ALL_ORDERS : { clientId: client.id };
}

/** The Prisma filter of `access` (empty for all orders). */
export function orderAccessWhere(access: OrderAccess): Prisma.OrderWhereInput {
  return 'clientId' in access ? { clientId: access.clientId } : {};
}
