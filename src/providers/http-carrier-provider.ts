/**
 * The carrier client: `CarrierProvider` (activities/ports.ts) over HTTP against `POST /v1/shipments`, the
 * simulator in development, a parcel carrier's API in production.
 */
import type { CarrierProvider, ShipmentRequest, ShipmentResult } from '../../activities/ports.js';
import { ProviderError } from '../../activities/provider-error.js';
import { callProvider, type ProviderHttpOptions } from './provider-http.js';

/** Options of {@link HttpCarrierProvider}: base URL, bearer key and per-request timeout (ms). */
export type HttpCarrierProviderOptions = ProviderHttpOptions;

/**
 * Creates shipments through `POST <baseUrl>/v1/shipments` with body
 * `{ reference, recipient: { email, name? }, items: [{ sku, quantity }] }`, expecting 2xx
 * `{ id: string, trackingNumber: string, status, reference, idempotencyKey }`.
 */
export class HttpCarrierProvider implements CarrierProvider {
  constructor(private readonly options: HttpCarrierProviderOptions) {}

  /**
   * Creates the shipment once per `idempotencyKey`: the key goes out as `Idempotency-Key` on every attempt,
   * so a retry after a lost response gets the carrier's first answer (same id, same tracking number) and no
   * second shipment.
   * @param idempotencyKey Derived from the work, `shipment:<orderId>`; at most 255 characters.
   * @returns `{ shipmentId, trackingNumber }`, e.g. `{ shipmentId: 'shp_3f2a...', trackingNumber: '1Z...' }`.
   * @throws ProviderError `unavailable` (5xx, 408, 425, 429, timeout after `timeoutMs` ms, network error, an
   *   answer without `id` or `trackingNumber`), `conflict` (409: same key still in flight), `unauthorized`
   *   (401/403), `rejected` (other 4xx, e.g. 422 invalid recipient).
   */
  async createShipment(request: ShipmentRequest, idempotencyKey: string): Promise<ShipmentResult> {
    const { status, body } = await callProvider(this.options, {
      provider: 'carrier',
      method: 'POST',
      path: '/v1/shipments',
      idempotencyKey,
      body: {
        reference: request.reference,
        recipient: {
          email: request.recipient.email,
          ...(request.recipient.name === undefined ? {} : { name: request.recipient.name }),
        },
        items: request.items.map((i) => ({ sku: i.sku, quantity: i.quantity })),
      },
    });
    const answer = body as { id?: unknown; trackingNumber?: unknown } | undefined;
    const id = answer?.id;
    const trackingNumber = answer?.trackingNumber;
    if (typeof id !== 'string' || id === '' || typeof trackingNumber !== 'string' || trackingNumber === '') {
      throw new ProviderError(
        `carrier provider POST /v1/shipments → ${status} without a shipment id and tracking number`,
        'unavailable',
        status,
      );
    }
    return { shipmentId: id, trackingNumber };
  }
}
