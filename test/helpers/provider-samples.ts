/**
 * One sample call per operation of every registered provider (providers/index.ts), for the specs that run each
 * operation generically (the provider client, the simulators): a valid request and what it must look like on the
 * wire, a request the provider refuses, and a valid answer. Written by hand for the providers of this repository on
 * purpose (the expected path and body are not computed with the code under test); an operation added later gets its
 * sample from its definition's `example` (what `npm run new:step` writes), so adding a provider edits no test. An
 * operation with neither fails {@link operationSamples} (and so those specs) until one is written.
 *
 * An operation that acts on what another created (a capture of an authorization: its example names the operation in
 * `after`) has a chained sample: its request, path and body come from the earlier operations' answers. Against a
 * recording server the examples' answers serve; against the simulator, {@link liveSample} performs the earlier
 * operations first, each time under keys of its own (`setup:<hash of the key>:<operation>`), so every key of a test acts on an
 * effect of its own.
 */
import { createHash } from 'node:crypto';
import { PROVIDER_LIST } from '../../providers/index.js';
import {
  operationPath,
  withoutPathParams,
  type OperationDefinition,
  type ProviderDefinition,
} from '../../providers/kit/define.js';

/** A sample call of one operation. */
export interface OperationSample {
  provider: ProviderDefinition;
  /** The operation's name in the provider's definition (the client's method). */
  name: string;
  operation: OperationDefinition;
  /** `<provider>.<operation>`, e.g. `email.send`. */
  id: string;
  /** The client's settings for this provider (e.g. `{ from }`). */
  settings: Record<string, string>;
  /** Operations of the same provider that must have acted first (their answers feed this one's request). */
  after: string[];
  /** A valid request, as a step builds it (a chained sample: from its earlier operations' example answers). */
  request: Record<string, unknown>;
  /** The JSON body the client must send for it (the settings applied). */
  body: Record<string, unknown>;
  /** The path the client must call under its base URL, `:params` filled and percent-encoded. */
  path: string;
  /** A request the provider refuses (422), and what the refusal's detail names. */
  invalid: { request: Record<string, unknown>; detail: RegExp };
  /** A valid 2xx answer (status and body) and the provider id the client must read from it. */
  answer: { status: number; body: Record<string, unknown>; providerId: string };
  /** The request, body and path of a chained sample from the earlier operations' answer bodies (by name). */
  from(earlier: Readonly<Record<string, unknown>>): Pick<OperationSample, 'request' | 'body' | 'path'>;
}

type Sample = Omit<OperationSample, 'provider' | 'operation' | 'id' | 'name' | 'after' | 'from'> &
  Partial<Pick<OperationSample, 'after' | 'from'>>;

const message = {
  to: 'ada@example.com',
  subject: 'Your order 42',
  text: 'Thanks for your order.',
  metadata: { orderId: '42' },
};

const shipment = {
  reference: 'ord_42',
  recipient: { email: 'ada@example.com', name: 'Ada Lovelace' },
  items: [
    { sku: 'TEE-BLK-M', quantity: 2 },
    { sku: 'MUG-WHT', quantity: 1 },
  ],
};

const returnLabel = {
  reference: 'RMA-000042',
  shipmentReference: 'ord_42',
  sender: { email: 'ada@example.com', name: 'Ada' },
  items: [{ sku: 'TEE-BLK-M', quantity: 1 }],
};

const creditNote = {
  externalId: 'RMA-000042',
  invoiceExternalId: 'INV-000042',
  orderId: 'ord_42',
  currency: 'EUR',
  totalMinor: 1999,
  lines: [{ sku: 'TEE-BLK-M', quantity: 1, amountMinor: 1999 }],
};

const invoice = {
  externalId: 'INV/2026 #4',
  orderId: 'ord_42',
  customerEmail: 'ada@example.com',
  currency: 'EUR',
  totalMinor: 2_598,
  issuedAt: '2026-11-29T10:00:00.000Z',
  lines: [{ sku: 'SKU-1', quantity: 2, unitPriceMinor: 1_299 }],
};

/** The samples by `<provider>.<operation>`. */
export const SAMPLES: Readonly<Record<string, Sample>> = {
  'email.send': {
    settings: { from: 'orders@shop.example' },
    request: message,
    body: { from: 'orders@shop.example', ...message },
    path: '/v1/messages',
    invalid: { request: { ...message, to: 'not-an-address' }, detail: /\bto\b/ },
    answer: { status: 202, body: { id: 'msg_1', status: 'queued', to: message.to }, providerId: 'msg_1' },
  },
  'carrier.createShipment': {
    settings: {},
    request: shipment,
    body: shipment,
    path: '/v1/shipments',
    invalid: { request: { ...shipment, recipient: { email: 'not-an-address' } }, detail: /recipient/ },
    answer: {
      status: 201,
      body: { id: 'shp_1', trackingNumber: '1Z0000000000000001', status: 'label_created' },
      providerId: 'shp_1',
    },
  },
  'carrier.createReturnLabel': {
    settings: {},
    request: returnLabel,
    body: returnLabel,
    path: '/v1/return-labels',
    invalid: { request: { ...returnLabel, sender: { email: 'not-an-address' } }, detail: /sender/ },
    answer: {
      status: 201,
      body: {
        id: 'rl_1',
        trackingNumber: '1Z0000000000000002',
        labelUrl: 'https://carrier.example/labels/rl_1.pdf',
        status: 'label_created',
      },
      providerId: 'rl_1',
    },
  },
  'accounting.upsertCreditNote': {
    settings: {},
    request: creditNote,
    body: creditNote,
    path: '/v1/credit-notes/RMA-000042',
    invalid: { request: { ...creditNote, currency: 'euro' }, detail: /ISO 4217/ },
    answer: {
      status: 201,
      body: { id: 'acc_cn_1', externalId: creditNote.externalId, version: 1 },
      providerId: 'acc_cn_1',
    },
  },
  'accounting.upsertInvoice': {
    settings: {},
    request: invoice,
    body: invoice,
    path: '/v1/invoices/INV%2F2026%20%234',
    invalid: { request: { ...invoice, currency: 'euro' }, detail: /ISO 4217/ },
    answer: {
      status: 201,
      body: { id: 'acc_inv_1', externalId: invoice.externalId, version: 1 },
      providerId: 'acc_inv_1',
    },
  },
};

/**
 * A sample of every operation of `providers`, in registry order.
 * @throws Error naming each operation that has no sample in {@link SAMPLES}.
 */
export function operationSamples(providers: readonly ProviderDefinition[] = PROVIDER_LIST): OperationSample[] {
  const missing: string[] = [];
  const samples = providers.flatMap((provider) =>
    (Object.entries(provider.operations) as Array<[string, OperationDefinition]>).flatMap(([name, operation]) => {
      const id = `${provider.name}.${name}`;
      const sample = SAMPLES[id] ?? fromExample(provider, operation);
      if (!sample) {
        missing.push(id);
        return [];
      }
      const fixed = { request: sample.request, body: sample.body, path: sample.path };
      return [{ after: [], from: () => fixed, ...sample, provider, name, operation, id }];
    }),
  );
  if (missing.length > 0) {
    throw new Error(`test/helpers/provider-samples.ts has no sample for ${missing.join(', ')}: add one`);
  }
  return samples;
}

/**
 * The sample of an operation from its definition's `example`: the request as given (or, for an operation with
 * `after`, from the earlier operations' example answers), its body and path as the client builds them (the provider's
 * default settings applied, the path's members left out of the body when the operation says so), a JSON array as the
 * request it refuses (every operation's request is an object), and the example's answer.
 * @returns undefined when the operation has no example.
 */
function fromExample(provider: ProviderDefinition, operation: OperationDefinition): Sample | undefined {
  const example = operation.example;
  if (!example) return undefined;
  const settings = Object.fromEntries(Object.entries(provider.settings ?? {}).map(([n, s]) => [n, s.default]));
  const after = [...(example.after ?? [])];
  const from = (earlier: Readonly<Record<string, unknown>>) => {
    const request = (example.requestFrom ? example.requestFrom(earlier) : example.request) as Record<string, unknown>;
    if (request === undefined) throw new Error(`the example of ${provider.name} has neither request nor requestFrom`);
    const full = (operation.withSettings ? operation.withSettings(request, settings) : request) as Record<
      string,
      unknown
    >;
    const body = (operation.paramsInBody === false ? withoutPathParams(operation.path, full) : full) as Record<
      string,
      unknown
    >;
    return { request, body, path: operationPath(operation.path, full) };
  };
  const exampleAnswers = Object.fromEntries(
    after.map((name) => [name, provider.operations[name]?.example?.answer.body]),
  );
  return {
    settings,
    after,
    from,
    ...from(exampleAnswers),
    invalid: { request: [] as unknown as Record<string, unknown>, detail: /expected object/i },
    answer: {
      status: example.answer.status,
      body: example.answer.body as Record<string, unknown>,
      providerId: operation.providerId(operation.response.parse(example.answer.body)),
    },
  };
}

/**
 * `sample` ready to send under `key`: as it is, or for a chained sample, with its request, body and path from the
 * answers of its earlier operations, performed first through `perform` (each under `setup:<hash of key>:<operation>`,
 * recursively for their own chains).
 * @param perform sends one sample's body to its path under a key and returns the answer body (a 2xx).
 */
export async function liveSample(
  sample: OperationSample,
  samples: readonly OperationSample[],
  key: string,
  perform: (earlier: OperationSample, key: string) => Promise<unknown>,
): Promise<OperationSample> {
  if (sample.after.length === 0) return sample;
  const earlier: Record<string, unknown> = {};
  for (const name of sample.after) {
    const before = samples.find((s) => s.provider === sample.provider && s.name === name);
    if (!before) throw new Error(`${sample.id}: its example runs after ${name}, which has no sample`);
    const setupKey = `setup:${createHash('sha256').update(key).digest('hex').slice(0, 16)}:${name}`;
    earlier[name] = await perform(await liveSample(before, samples, setupKey, perform), setupKey);
  }
  return { ...sample, ...sample.from(earlier) };
}

/** True for the key of an effect {@link liveSample} caused (not the test's own). */
export function isSetupKey(key: string): boolean {
  return key.startsWith('setup:');
}
