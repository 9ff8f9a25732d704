/**
 * Inventory: the catalogue with stock, absolute stock adjustments and the movement ledger.
 *
 * Idempotency layer 3 (README, Guarantees): an adjustment writes its movement (`adjust:<sku>:<requestId>`) and the
 * new on-hand in one transaction, after locking the product row; a replay finds the movement and changes
 * nothing.
 */
import { Inject, Injectable } from '@nestjs/common';
import type { InventoryMovement, Prisma, Product } from '../../prisma/generated/client.js';
import { ProblemException } from '../common/problem-details.js';
import { IdempotencyProblemType } from '../idempotency/idempotency-key.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import type { MovementView, ProductView } from './inventory.dto.js';
import { InventoryProblemType } from './inventory-problems.js';

/** Most movements returned by {@link InventoryService.movements}. */
export const MOVEMENTS_LIMIT = 100;

/** Options of {@link InventoryService.setOnHand}. */
export interface SetOnHandOptions {
  /**
   * Names the adjustment: the movement id is `adjust:<sku>:<requestId>`. The request's client-scoped
   * `Idempotency-Key` (`<client>:<key>`), or a fresh UUID.
   */
  requestId: string;
  /** Runs first inside the adjustment's transaction with the movement id (the idempotency claim). */
  inTransaction?: (tx: Prisma.TransactionClient, movementId: string) => Promise<void>;
}

/** Result of {@link InventoryService.setOnHand}. */
export interface SetOnHandResult {
  product: ProductView;
  /** True when the movement of this request id already existed: nothing was changed. */
  replayed: boolean;
}

@Injectable()
export class InventoryService {
  constructor(@Inject(PRISMA) private readonly prisma: PrismaClient) {}

  /** Every product with its stock, ordered by SKU. */
  async list(): Promise<ProductView[]> {
    const products = await this.prisma.product.findMany({ orderBy: { sku: 'asc' } });
    return products.map(toProductView);
  }

  /**
   * Sets the on-hand stock of `sku` to the absolute value `onHand` (units) and records an `adjustment`
   * movement `adjust:<sku>:<requestId>` with `on_hand_delta = onHand - previous`, in one transaction that
   * first locks the product row (`SELECT … FOR UPDATE`). The movement stores the absolute value it set
   * (`on_hand_after`). If that movement already exists (a replayed request id) for the same value, nothing
   * changes and the current product is returned; for another value the request is refused (422).
   * @param options.requestId names the movement (see {@link SetOnHandOptions}).
   * @param options.inTransaction runs first in the transaction; its writes commit or roll back with the movement.
   * @throws ProblemException 404 for an unknown SKU; 409 `stock-below-reserved` when `onHand` is below the
   *   reserved quantity; 422 `idempotency-key-reused` when the key already set another value.
   */
  async setOnHand(sku: string, onHand: number, options: SetOnHandOptions): Promise<SetOnHandResult> {
    const movementId = `adjust:${sku}:${options.requestId}`;
    return this.prisma.$transaction(async (tx) => {
      await options.inTransaction?.(tx, movementId);
      const locked = await tx.$queryRaw<{ on_hand: number; reserved: number }[]>`
        SELECT on_hand, reserved FROM products WHERE sku = ${sku} FOR UPDATE`;
      const current = locked[0];
      if (!current) throw ProblemException.notFound(`Product ${sku}`);

      const replay = await tx.inventoryMovement.findUnique({
        where: { id: movementId },
        select: { onHandAfter: true },
      });
      if (replay && replay.onHandAfter !== null && replay.onHandAfter !== onHand) {
        // draft-ietf-httpapi-idempotency-key-header: a key reused with a different payload is a 422.
        throw new ProblemException({
          type: IdempotencyProblemType.KeyReused,
          detail: `This Idempotency-Key already set ${sku} to ${replay.onHandAfter}; this request asks for ${onHand}`,
        });
      }
      if (replay) {
        return { product: toProductView(await tx.product.findUniqueOrThrow({ where: { sku } })), replayed: true };
      }
      if (onHand < current.reserved) {
        throw new ProblemException({
          type: InventoryProblemType.StockBelowReserved,
          detail: `On-hand stock of ${sku} cannot be set to ${onHand}: ${current.reserved} units are reserved for accepted orders`,
          extensions: { sku, reserved: current.reserved, requestedOnHand: onHand },
        });
      }
      await tx.inventoryMovement.create({
        data: {
          id: movementId,
          sku,
          reason: 'adjustment',
          onHandDelta: onHand - current.on_hand,
          reservedDelta: 0,
          onHandAfter: onHand,
        },
      });
      const product = await tx.product.update({ where: { sku }, data: { onHand } });
      return { product: toProductView(product), replayed: false };
    });
  }

  /**
   * The product that movement `movementId` adjusted, as it is now; null when there is no such movement.
   */
  async productOfMovement(movementId: string): Promise<ProductView | null> {
    const movement = await this.prisma.inventoryMovement.findUnique({
      where: { id: movementId },
      select: { product: true },
    });
    return movement ? toProductView(movement.product) : null;
  }

  /**
   * The ledger of `sku`, newest first, at most {@link MOVEMENTS_LIMIT} rows.
   * @throws ProblemException 404 for an unknown SKU.
   */
  async movements(sku: string): Promise<MovementView[]> {
    const product = await this.prisma.product.findUnique({ where: { sku }, select: { sku: true } });
    if (!product) throw ProblemException.notFound(`Product ${sku}`);
    const rows = await this.prisma.inventoryMovement.findMany({
      where: { sku },
      orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
      take: MOVEMENTS_LIMIT,
    });
    return rows.map(toMovementView);
  }
}

function toProductView(p: Product): ProductView {
  return {
    sku: p.sku,
    name: p.name,
    priceMinor: p.priceMinor,
    currency: p.currency,
    onHand: p.onHand,
    reserved: p.reserved,
    available: p.onHand - p.reserved,
  };
}

function toMovementView(m: InventoryMovement): MovementView {
  return {
    id: m.id,
    sku: m.sku,
    orderId: m.orderId,
    reason: m.reason,
    onHandDelta: m.onHandDelta,
    reservedDelta: m.reservedDelta,
    onHandAfter: m.onHandAfter,
    createdAt: m.createdAt.toISOString(),
  };
}
