/**
 * Problem types (RFC 9457) of the inventory API, registered with the API's others (src/common/problem-details.ts) so
 * the OpenAPI document describes them.
 */
import { z } from 'zod';
import { defineProblemTypes, PROBLEM_TYPE_BASE, problemTypeUris } from '../common/problem-details.js';

/** The problem types of the inventory API, by name. */
export const InventoryProblemTypes = defineProblemTypes({
  StockBelowReserved: {
    uri: `${PROBLEM_TYPE_BASE}stock-below-reserved`,
    title: 'Stock below reserved quantity',
    statuses: [409],
    description:
      'A stock change would leave less on hand than is reserved for accepted orders (`reserved`); nothing changed.',
    extensions: {
      sku: z.string(),
      reserved: z.int().meta({ description: 'Units reserved for accepted orders' }),
      requestedOnHand: z.int().meta({ description: 'The on-hand value asked for' }),
    },
    example: {
      detail: 'On-hand stock of MUG-WHT cannot be set to 1: 3 units are reserved for accepted orders',
      sku: 'MUG-WHT',
      reserved: 3,
      requestedOnHand: 1,
    },
  },
});

/** The URIs of {@link InventoryProblemTypes}. */
export const InventoryProblemType = problemTypeUris(InventoryProblemTypes);
