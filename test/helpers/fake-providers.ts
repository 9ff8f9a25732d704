/**
 * The test fake of every provider, derived from its definition (providers/<name>.provider.ts): the definition's own
 * `simulate` answers, its response schema and its provider id, in memory and without HTTP. They behave like the
 * providers on the point that matters: the same idempotency key yields the same answer and no second effect. They
 * count calls and effects separately, and can be told to fail the next calls the way the simulators do.
 */
import { randomBytes, randomInt } from 'node:crypto';
import { PROVIDER_LIST } from '../../providers/index.js';
import { parseAnswer } from '../../providers/kit/client.js';
import {
  type OperationDefinition,
  type ProviderAnswer,
  type ProviderClient,
  type ProviderClients,
  type ProviderDefinition,
} from '../../providers/kit/define.js';
import { ProviderError, type ProviderFailureKind } from '../../providers/kit/errors.js';

/** One failure queued on a fake. */
interface QueuedFailure {
  kind: ProviderFailureKind;
  status?: number;
  /** The error's message (default `simulated <kind>`): a real client's carries the provider's problem detail. */
  message?: string;
  /** Perform the effect, then lose the answer (a timeout after the provider acted). */
  afterEffect: boolean;
}

/** A fake provider: its client and what it saw. */
export interface FakeProvider {
  name: string;
  /** The client the activities call (one method per operation). */
  client: ProviderClient;
  /** Every call, in order, with its operation, key and request. */
  calls: Array<{ operation: string; key: string; request: unknown }>;
  /** The first answer per key (a first call with a key is an effect; a replay is not). */
  effects: Map<string, ProviderAnswer>;
  /** Delay of every call in ms, to widen race windows. */
  delayMs: number;
  /**
   * The next `times` calls fail with `kind` (after being counted as calls), with HTTP `status` (default 503 for
   * `unavailable`, 409 for `conflict`, 401 for `unauthorized`, 422 for `rejected`) and `message` (default
   * `simulated <kind>`): nothing is performed.
   */
  failNext(kind: ProviderFailureKind, times?: number, status?: number, message?: string): void;
  /** The next call performs its effect, then its answer is lost (a timeout: the outcome looks unknown). */
  dropNextResponse(): void;
}

const STATUS_OF_KIND = { unavailable: 503, conflict: 409, unauthorized: 401, rejected: 422 } as const;

/** The fake of one provider definition. */
export function fakeProvider(provider: ProviderDefinition): FakeProvider {
  const failures: QueuedFailure[] = [];
  const state = new Map<string, unknown>();
  const fake: FakeProvider = {
    name: provider.name,
    client: {},
    calls: [],
    effects: new Map(),
    delayMs: 0,
    failNext(kind, times = 1, status, message) {
      for (let i = 0; i < times; i++)
        failures.push({
          kind,
          status: status ?? STATUS_OF_KIND[kind],
          afterEffect: false,
          ...(message ? { message } : {}),
        });
    },
    dropNextResponse() {
      failures.push({ kind: 'unavailable', afterEffect: true });
    },
  };
  for (const [name, operation] of Object.entries(provider.operations) as Array<[string, OperationDefinition]>) {
    fake.client[name] = async (request: unknown, key: string) => {
      fake.calls.push({ operation: name, key, request });
      if (fake.delayMs) await new Promise((r) => setTimeout(r, fake.delayMs));
      const failure = failures.shift();
      if (failure && !failure.afterEffect) {
        throw new ProviderError(failure.message ?? `simulated ${failure.kind}`, failure.kind, failure.status);
      }
      let answer = fake.effects.get(key);
      if (!answer) {
        const parsed = operation.request.parse(request);
        const simulated = operation.simulate({
          key,
          request: parsed,
          params: paramsOf(operation.path, parsed),
          state,
          newId: (prefix) => `${prefix}_${randomBytes(12).toString('hex')}`,
          randomText: (length, alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ') =>
            Array.from({ length }, () => alphabet[randomInt(alphabet.length)]).join(''),
        });
        answer = parseAnswer(provider.name, operation, name, simulated.status, simulated.body);
        fake.effects.set(key, answer);
      }
      if (failure) throw new ProviderError('simulated timeout after the effect', 'unavailable');
      return answer;
    };
  }
  return fake;
}

/** The path parameters an operation's route would have for `request`. */
function paramsOf(path: string, request: unknown): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [, name] of path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)) {
    params[name!] = String((request as Record<string, unknown>)[name!]);
  }
  return params;
}

/** A fake of every registered provider, by name, and the clients to hand to the activities. */
export function fakeProviders(providers: readonly ProviderDefinition[] = PROVIDER_LIST): {
  fakes: Record<string, FakeProvider>;
  clients: ProviderClients;
} {
  const fakes = Object.fromEntries(providers.map((p) => [p.name, fakeProvider(p)]));
  return { fakes, clients: Object.fromEntries(Object.values(fakes).map((f) => [f.name, f.client])) };
}
