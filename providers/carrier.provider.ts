/**
 * The parcel carrier: creates a shipment with a label and a tracking number (`POST /v1/shipments`). In development
 * the simulator plays it: 201 `{ id: 'shp_<24 hex>', trackingNumber: '1Z<16 upper-case alphanumerics>', status:
 * 'label_created', reference, idempotencyKey }`, one `shipment.created` effect per new key. A return gets a prepaid
 * return label the same way (`POST /v1/return-labels`): 201 `{ id: 'rl_<24 hex>', trackingNumber, labelUrl, status:
 * 'label_created' }`, one `returnlabel.created` effect per new key.
 */
import { z } from 'zod';
import { defineProvider, SimulatedRefusal } from './kit/define.js';

export const carrier = defineProvider({
  name: 'carrier',
  title: 'Parcel carrier',
  limits: { callsPerSecond: 50, concurrentCallsPerWorker: 20 },
  operations: {
    createShipment: {
      description: 'Creates one shipment (label and tracking number) for our reference.',
      method: 'POST',
      path: '/v1/shipments',
      request: z.object({
        reference: z.string().min(1).max(255),
        recipient: z.object({ email: z.email(), name: z.string().min(1).max(200).optional() }),
        items: z
          .array(z.object({ sku: z.string().min(1).max(255), quantity: z.number().int().min(1) }))
          .min(1)
          .max(100),
      }),
      response: z.object({ id: z.string().min(1), trackingNumber: z.string().min(1), status: z.string() }),
      providerId: (res) => res.id,
      simulate: ({ key, request, state, newId, randomText }) => {
        const shipment = {
          ...request,
          id: newId('shp'),
          trackingNumber: `1Z${randomText(16)}`,
          status: 'label_created',
          idempotencyKey: key,
          createdAt: new Date().toISOString(),
        };
        state.set(shipment.id, shipment);
        return {
          status: 201,
          body: {
            id: shipment.id,
            trackingNumber: shipment.trackingNumber,
            status: shipment.status,
            reference: shipment.reference,
            idempotencyKey: key,
          },
          effect: 'shipment.created',
        };
      },
    },
    createReturnLabel: {
      description: 'Creates one prepaid return label (tracking number and label address) for a return.',
      method: 'POST',
      path: '/v1/return-labels',
      request: z.object({
        reference: z.string().min(1).max(255),
        shipmentReference: z.string().min(1).max(255),
        sender: z.object({ email: z.email(), name: z.string().min(1).max(200).optional() }),
        items: z
          .array(z.object({ sku: z.string().min(1).max(255), quantity: z.number().int().min(1) }))
          .min(1)
          .max(100),
      }),
      response: z.object({
        id: z.string().min(1),
        trackingNumber: z.string().min(1),
        labelUrl: z.url(),
        status: z.string(),
      }),
      providerId: (res) => res.id,
      simulate: ({ key, request, state, newId, randomText }) => {
        const label = {
          ...request,
          id: newId('rl'),
          trackingNumber: `1Z${randomText(16)}`,
          status: 'label_created',
          idempotencyKey: key,
          createdAt: new Date().toISOString(),
        };
        state.set(label.id, label);
        const { id, trackingNumber, status } = label;
        const labelUrl = `https://carrier.example/labels/${id}.pdf`;
        return { status: 201, body: { id, trackingNumber, labelUrl, status }, effect: 'returnlabel.created' };
      },
    },
  },
  reads: {
    returnLabel: {
      path: '/v1/return-labels/:id',
      simulate: ({ params, state }) => {
        const label = state.get(params.id ?? '');
        if (!label) throw new SimulatedRefusal(404, 'not-found', `No return label with id "${params.id}".`);
        return { status: 200, body: label };
      },
    },
    shipment: {
      path: '/v1/shipments/:id',
      simulate: ({ params, state }) => {
        const shipment = state.get(params.id ?? '');
        if (!shipment) throw new SimulatedRefusal(404, 'not-found', `No shipment with id "${params.id}".`);
        return { status: 200, body: shipment };
      },
    },
  },
});
