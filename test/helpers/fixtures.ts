/**
 * Test data: a small catalogue and orders inserted straight into the database (the API is not needed
 * to test activities and workflows).
 */
import { randomUUID } from 'node:crypto';
import type { PrismaClient } from '../../src/prisma/prisma.js';
import { testKeys } from './api-keys.js';
import { orderWorkflowId } from '../../workflows/order-fulfilment.contract.js';

/** Products every suite starts with: sku → [name, price in cents, on hand]. */
export const TEST_CATALOGUE = {
  'TEE-BLK-M': ['Black tee, M', 1999, 50],
  'MUG-WHT': ['White mug', 1250, 20],
  'CAP-RED': ['Red cap', 1500, 3],
} as const;

export type TestSku = keyof typeof TEST_CATALOGUE;

/** Inserts TEST_CATALOGUE (EUR). */
export async function seedTestCatalogue(prisma: PrismaClient): Promise<void> {
  await prisma.product.createMany({
    data: Object.entries(TEST_CATALOGUE).map(([sku, [name, priceMinor, onHand]]) => ({
      sku,
      name,
      priceMinor,
      currency: 'EUR',
      onHand,
    })),
    skipDuplicates: true,
  });
}

/** Inserts an order with status `received` and returns its id (unit price 100 for SKUs outside TEST_CATALOGUE). */
export async function insertOrder(
  prisma: PrismaClient,
  lines: Array<{ sku: TestSku | (string & {}); quantity: number }>,
  email = 'ada@example.com',
): Promise<string> {
  const id = randomUUID();
  const priced = lines.map((l, i) => ({
    id: randomUUID(),
    lineNo: i + 1,
    sku: l.sku,
    quantity: l.quantity,
    unitPriceMinor: TEST_CATALOGUE[l.sku as TestSku]?.[1] ?? 100,
  }));
  await prisma.order.create({
    data: {
      id,
      customerEmail: email,
      clientId: testKeys().shop.client,
      customerName: 'Ada Lovelace',
      status: 'received',
      currency: 'EUR',
      totalMinor: priced.reduce((sum, l) => sum + l.quantity * l.unitPriceMinor, 0),
      workflowId: orderWorkflowId(id),
      lines: {
        create: priced.map(({ id: lineId, lineNo, sku, quantity, unitPriceMinor }) => ({
          id: lineId,
          lineNo,
          sku,
          quantity,
          unitPriceMinor,
        })),
      },
    },
  });
  return id;
}

/** Stock of one product: [onHand, reserved]. */
export async function stockOf(prisma: PrismaClient, sku: string): Promise<[number, number]> {
  const p = await prisma.product.findUniqueOrThrow({ where: { sku } });
  return [p.onHand, p.reserved];
}
