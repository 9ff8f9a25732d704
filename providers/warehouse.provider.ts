/**
 * The warehouse (a 3PL or our own packing floor): takes a pick request for an order, and reports back once the parcel
 * is packed by calling our API (`POST /orders/<reference>/packed` with a warehouse-scoped API key and
 * `Idempotency-Key: packed:<pickId>`). Its operations:
 * - `createPick`: `POST /v1/picks` `{ reference, lines: [{ sku, quantity }] }` → 201 `{ id: 'pick_…', status:
 *   'requested' }`, effect `pick.requested`;
 * - `cancelPick`: `POST /v1/picks/:pickId/cancel` `{}` → 200 `{ id, status: 'cancelled' }`, effect `pick.cancelled`;
 *   or a definite 409 `picking-started` while the warehouse is picking (the pick goes on: nothing cancelled); a packed
 *   parcel that has not left is cancelled (back to the shelf).
 *
 * In development the simulator plays it. Its settings (the simulator's environment, or `POST /warehouse/_sim/settings`):
 * - `WAREHOUSE_PACK_DELAY_MS` (default 3000): after it, the simulator reports the pick packed (0 or negative: never);
 * - `WAREHOUSE_CALLBACK_URL`, `WAREHOUSE_CALLBACK_API_KEY`: where it reports (our API's base URL) and with which key
 *   (scope `warehouse`); unset, the simulator process's `SIMULATOR_CALLBACK_URL` and `SIMULATOR_CALLBACK_API_KEY`
 *   (docker-compose.yml sets those, naming no provider); without either it never reports;
 * - `WAREHOUSE_PICKING_STARTS_MS` (default 0: never by time): after it, picking has started and a cancel is refused.
 * The action `POST /warehouse/_sim/actions/startPicking` `{ reference }` starts picking an order's pick at once (a
 * test's switch). A report that fails (network, 5xx) is retried a few times, each failure logged.
 */
import { z } from 'zod';
import { defineProvider, SimulatedRefusal, type SimulateContext } from './kit/define.js';

/** A pick as the simulator stores it (by id, and its id by `ref:<reference>`). */
interface Pick {
  id: string;
  reference: string;
  lines: Array<{ sku: string; quantity: number }>;
  status: 'requested' | 'picking' | 'packed' | 'cancelled';
  createdAt: string;
}

/** Default `WAREHOUSE_PACK_DELAY_MS`: a few seconds, so `npm start`'s orders complete on their own. */
export const DEFAULT_PACK_DELAY_MS = 3_000;
/**
 * Attempts of one packed report (the first and its retries), and the waits between them: doubling from 1 s, at most
 * 60 s, about 4 min in all (as a 3PL's webhook outlives a restart of our API or workers, or a short outage).
 */
export const REPORT_ATTEMPTS = 10;
const REPORT_RETRY_MS = 1_000;
const REPORT_RETRY_MAX_MS = 60_000;

/** A whole number from a setting, or `fallback` when it is unset or not a number. */
function numberSetting(settings: Readonly<Record<string, string | undefined>>, name: string, fallback: number): number {
  const raw = settings[name]?.trim();
  const value = raw ? Number(raw) : NaN;
  return Number.isFinite(value) ? value : fallback;
}

/** The pick `id`, or a 404 refusal. */
function pickOf(state: Map<string, unknown>, id: string): Pick {
  const pick = state.get(id) as Pick | undefined;
  if (!pick?.id) throw new SimulatedRefusal(404, 'not-found', `No pick "${id}".`);
  return pick;
}

/**
 * True while the warehouse is picking `pick` (by the switch, or by its clock before the parcel is packed): a cancel is
 * refused then. A packed parcel that has not left can still be cancelled (the goods go back to the shelf).
 */
function pickingStarted(pick: Pick, settings: Readonly<Record<string, string | undefined>>): boolean {
  if (pick.status === 'picking') return true;
  const after = numberSetting(settings, 'WAREHOUSE_PICKING_STARTS_MS', 0);
  return pick.status === 'requested' && after > 0 && Date.now() - Date.parse(pick.createdAt) >= after;
}

/**
 * Reports `pick` packed to our API (the simulator's callback): attempt `attempt` now, and on a network failure, a 5xx,
 * a 429 or a 409 (the report under its key still in progress) the next one through `later` (so a reset or the
 * simulator's close cancels it), up to {@link REPORT_ATTEMPTS}; every failure is logged. Any other 4xx is a definite
 * answer: never sent again. A cancelled pick is never reported.
 */
async function reportPacked(
  pick: Pick,
  callback: { url: string; apiKey: string; later: NonNullable<SimulateContext<unknown>['later']> },
  attempt = 1,
): Promise<void> {
  if (pick.status === 'cancelled') return;
  let outcome: string;
  try {
    const res = await fetch(`${callback.url.replace(/\/+$/, '')}/orders/${encodeURIComponent(pick.reference)}/packed`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${callback.apiKey}`,
        'content-type': 'application/json',
        'idempotency-key': `packed:${pick.id}`,
      },
      body: JSON.stringify({ parcels: 1, note: `packed by the simulated warehouse (pick ${pick.id})` }),
      signal: AbortSignal.timeout(10_000),
    });
    await res.text();
    if (res.ok) {
      pick.status = 'packed';
      return;
    }
    outcome = `${res.status}`;
    // A definite answer (the order does not wait for packing, was cancelled, the key is refused): never again.
    if (res.status < 500 && res.status !== 429 && res.status !== 409) {
      console.warn(`warehouse simulator: packed report of ${pick.reference} refused (${outcome}); not retried`);
      return;
    }
  } catch (error) {
    outcome = error instanceof Error ? error.message : String(error);
  }
  console.warn(
    `warehouse simulator: packed report of ${pick.reference} failed (attempt ${attempt}/${REPORT_ATTEMPTS}: ${outcome})`,
  );
  const wait = Math.min(REPORT_RETRY_MS * 2 ** (attempt - 1), REPORT_RETRY_MAX_MS);
  if (attempt < REPORT_ATTEMPTS) callback.later(wait, () => reportPacked(pick, callback, attempt + 1));
}

const line = z.object({ sku: z.string().min(1).max(255), quantity: z.number().int().min(1) });

export const warehouse = defineProvider({
  name: 'warehouse',
  title: 'Warehouse',
  limits: { callsPerSecond: 50, concurrentCallsPerWorker: 20 },
  operations: {
    createPick: {
      description: 'Asks the warehouse to pick and pack an order’s lines (it reports back once packed).',
      method: 'POST',
      path: '/v1/picks',
      request: z.object({ reference: z.string().min(1).max(255), lines: z.array(line).min(1).max(100) }),
      response: z.object({ id: z.string().min(1), status: z.string() }),
      providerId: (res) => res.id,
      simulate: ({ request, state, newId, settings, later }) => {
        const pick: Pick = {
          id: newId('pick'),
          reference: request.reference,
          lines: request.lines,
          status: 'requested',
          createdAt: new Date().toISOString(),
        };
        state.set(pick.id, pick);
        state.set(`ref:${pick.reference}`, pick.id);
        const delay = numberSetting(settings ?? {}, 'WAREHOUSE_PACK_DELAY_MS', DEFAULT_PACK_DELAY_MS);
        const url = settings?.WAREHOUSE_CALLBACK_URL?.trim() || settings?.SIMULATOR_CALLBACK_URL?.trim();
        const apiKey = settings?.WAREHOUSE_CALLBACK_API_KEY?.trim() || settings?.SIMULATOR_CALLBACK_API_KEY?.trim();
        if (delay > 0 && url && apiKey && later) later(delay, () => reportPacked(pick, { url, apiKey, later }));
        return { status: 201, body: { id: pick.id, status: pick.status }, effect: 'pick.requested' };
      },
      example: {
        request: { reference: 'ord_42', lines: [{ sku: 'TEE-BLK-M', quantity: 2 }] },
        answer: { status: 201, body: { id: 'pick_0123456789abcdef01234567', status: 'requested' } },
      },
    },
    cancelPick: {
      description: 'Cancels a pick request; refused (409 picking-started) once the warehouse started picking.',
      method: 'POST',
      path: '/v1/picks/:pickId/cancel',
      paramsInBody: false,
      request: z.object({ pickId: z.string().min(1) }),
      response: z.object({ id: z.string().min(1), status: z.literal('cancelled') }),
      providerId: (res) => res.id,
      simulate: ({ request, state, settings }) => {
        const pick = pickOf(state, request.pickId);
        if (pick.status !== 'cancelled' && pickingStarted(pick, settings ?? {})) {
          throw new SimulatedRefusal(
            409,
            'picking-started',
            `the warehouse started picking order ${pick.reference}; its pick ${pick.id} can no longer be cancelled`,
          );
        }
        pick.status = 'cancelled';
        return { status: 200, body: { id: pick.id, status: pick.status }, effect: 'pick.cancelled' };
      },
      example: {
        after: ['createPick'],
        requestFrom: (earlier) => ({ pickId: String(earlier.createPick.id) }),
        answer: { status: 200, body: { id: 'pick_0123456789abcdef01234567', status: 'cancelled' } },
      },
    },
  },
  reads: {
    pick: {
      path: '/v1/picks/:id',
      simulate: ({ params, state }) => ({ status: 200, body: pickOf(state, params.id ?? '') }),
    },
  },
  simulatorActions: {
    startPicking: {
      description: 'The warehouse starts picking the pick of `{ reference }` (an order id): a cancel is refused then.',
      run: ({ body, state }) => {
        const reference = (body as { reference?: unknown } | null)?.reference;
        const id = typeof reference === 'string' ? state.get(`ref:${reference}`) : undefined;
        if (typeof id !== 'string') throw new SimulatedRefusal(404, 'not-found', `No pick for "${String(reference)}".`);
        const pick = pickOf(state, id);
        if (pick.status === 'requested') pick.status = 'picking';
        return { status: 200, body: pick };
      },
    },
  },
});
