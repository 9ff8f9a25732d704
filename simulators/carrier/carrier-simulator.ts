/**
 * The carrier simulator: a parcel carrier's shipment API in miniature (label creation with a tracking number).
 *
 * - `POST /v1/shipments` (effectful; `Idempotency-Key` and bearer token required) body
 *   `{ reference: string (the shipper's own id, our order id), recipient: { email: string (email), name?: string },
 *   items: [{ sku: string, quantity: integer > 0 }] (1..100 items) }`
 *   → 201 `{ id: 'shp_<24 hex>', trackingNumber: '1Z<16 upper-case alphanumerics>', status: 'label_created',
 *   reference, idempotencyKey }`; one `shipment.created` effect per new key.
 *   An invalid body → 422 problem+json listing the issues.
 * - `GET /v1/shipments/:id` → 200 the stored shipment, or 404 problem+json.
 *
 * Plus the `/_sim` control API of {@link startIdempotentSimulator} (ledger, faults, reset).
 */
import { randomBytes, randomInt } from 'node:crypto';
import { z } from 'zod';
import { startIdempotentSimulator, type RunningSimulator } from '../shared/idempotent-simulator.js';
import { HttpProblem } from '../shared/problem.js';
import { validateBody } from '../shared/validate-body.js';

/** Kind of the ledger effect recorded for each shipment created. */
export const SHIPMENT_CREATED_EFFECT = 'shipment.created';

/** Status of a shipment whose label was just created (the only status this simulator knows). */
export const SHIPMENT_STATUS_LABEL_CREATED = 'label_created';

/** Alphabet of the tracking number's random part. */
const TRACKING_ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';

/** Body of `POST /v1/shipments`. */
export const createShipmentSchema = z.object({
  reference: z.string().min(1).max(255),
  recipient: z.object({
    email: z.email(),
    name: z.string().min(1).max(200).optional(),
  }),
  items: z
    .array(
      z.object({
        sku: z.string().min(1).max(255),
        quantity: z.number().int().min(1).max(Number.MAX_SAFE_INTEGER),
      }),
    )
    .min(1)
    .max(100),
});

/** A validated `POST /v1/shipments` body. */
export type CreateShipmentBody = z.infer<typeof createShipmentSchema>;

/** A shipment as the simulator stores it (the answer of `GET /v1/shipments/:id`). */
export interface StoredShipment extends CreateShipmentBody {
  /** `shp_<24 hex>`. */
  id: string;
  /** `1Z` followed by 16 upper-case letters and digits, unique per shipment. */
  trackingNumber: string;
  status: typeof SHIPMENT_STATUS_LABEL_CREATED;
  idempotencyKey: string;
  /** ISO 8601. */
  createdAt: string;
}

/** Options of {@link startCarrierSimulator}. */
export interface CarrierSimulatorOptions {
  /** Bearer token to enforce; when unset any bearer token is accepted. */
  apiKey?: string;
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
}

/** A running carrier simulator, with read access to the shipments it created. */
export interface RunningCarrierSimulator extends RunningSimulator {
  /** Created shipments in order. Copies. */
  shipments(): StoredShipment[];
}

/** A carrier-style tracking number: `1Z` + 16 random upper-case alphanumerics. */
export function newTrackingNumber(): string {
  let suffix = '';
  for (let i = 0; i < 16; i++) suffix += TRACKING_ALPHABET[randomInt(TRACKING_ALPHABET.length)];
  return `1Z${suffix}`;
}

/**
 * Starts the carrier simulator over real HTTP.
 * @throws the listen error (e.g. `EADDRINUSE`).
 */
export async function startCarrierSimulator(options: CarrierSimulatorOptions = {}): Promise<RunningCarrierSimulator> {
  const shipments = new Map<string, StoredShipment>();
  const copy = (s: StoredShipment): StoredShipment => structuredClone(s);
  const sim = await startIdempotentSimulator({
    name: 'carrier',
    ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
    ...(options.host === undefined ? {} : { host: options.host }),
    port: options.port ?? 0,
    onReset: () => shipments.clear(),
    effectful: [
      {
        method: 'POST',
        path: '/v1/shipments',
        handle: ({ key, body }) => {
          const input = validateBody(createShipmentSchema, body);
          const shipment: StoredShipment = {
            ...input,
            id: `shp_${randomBytes(12).toString('hex')}`,
            trackingNumber: newTrackingNumber(),
            status: SHIPMENT_STATUS_LABEL_CREATED,
            idempotencyKey: key,
            createdAt: new Date().toISOString(),
          };
          shipments.set(shipment.id, shipment);
          return {
            status: 201,
            body: {
              id: shipment.id,
              trackingNumber: shipment.trackingNumber,
              status: shipment.status,
              reference: shipment.reference,
              idempotencyKey: key,
            },
            effects: [SHIPMENT_CREATED_EFFECT],
          };
        },
      },
    ],
    reads: [
      {
        path: '/v1/shipments/:id',
        handle: ({ params }) => {
          const shipment = shipments.get(params.id ?? '');
          if (!shipment) {
            throw new HttpProblem(404, 'not-found', 'Shipment not found', `No shipment with id "${params.id}".`);
          }
          return { status: 200, body: copy(shipment) };
        },
      },
    ],
  });
  return { ...sim, shipments: () => [...shipments.values()].map(copy) };
}
