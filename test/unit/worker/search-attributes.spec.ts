/**
 * ensureSearchAttributes against fake gRPC services: the cases a real test server cannot produce here
 * (Temporal Cloud refusing the OperatorService, a name registered with another type, a lagging cache).
 */
import { describe, expect, it } from 'vitest';
import {
  ensureSearchAttributes,
  INDEXED_VALUE_TYPES,
  projectSearchAttributes,
  SearchAttributesNotRegisteredError,
  type SearchAttributeConnection,
} from '../../../src/worker/order-worker.js';

const grpcError = (code: number, message: string) => Object.assign(new Error(message), { code });
const PERMISSION_DENIED = 7;
const UNIMPLEMENTED = 12;
const INVALID_ARGUMENT = 3;

/** A namespace whose attributes become listed and queryable `lagPolls` list calls after being added. */
function fakeServer(opts: {
  registered?: Record<string, number>;
  refuseList?: number;
  refuseAdd?: number;
  lagPolls?: number;
}) {
  const registered = new Map(Object.entries(opts.registered ?? {}));
  const pending = new Map<string, number>();
  let lag = 0;
  const calls = { list: 0, add: [] as Record<string, number>[], count: [] as string[] };
  const connection: SearchAttributeConnection = {
    operatorService: {
      async listSearchAttributes() {
        calls.list++;
        if (opts.refuseList) throw grpcError(opts.refuseList, 'Request unauthorized.');
        if (pending.size > 0 && lag-- <= 0) {
          for (const [k, v] of pending) registered.set(k, v);
          pending.clear();
        }
        return { customAttributes: Object.fromEntries(registered) } as never;
      },
      async addSearchAttributes(req) {
        calls.add.push({ ...(req.searchAttributes as Record<string, number>) });
        if (opts.refuseAdd) throw grpcError(opts.refuseAdd, 'Request unauthorized.');
        lag = opts.lagPolls ?? 0;
        for (const [k, v] of Object.entries(req.searchAttributes ?? {})) pending.set(k, v as number);
        return {} as never;
      },
    },
    workflowService: {
      async countWorkflowExecutions(req) {
        calls.count.push(req.query ?? '');
        const name = (req.query ?? '').split(' ')[0]!;
        if (!registered.has(name)) throw grpcError(INVALID_ARGUMENT, `invalid query: unknown ${name}`);
        return { count: 0 } as never;
      },
    },
  };
  return { connection, calls, registered };
}

const all = projectSearchAttributes();
const keyword = INDEXED_VALUE_TYPES.KEYWORD;

describe('ensureSearchAttributes', () => {
  it('registers every contract key with the IndexedValueType of its type', async () => {
    const { connection, calls } = fakeServer({});
    expect(await ensureSearchAttributes(connection, 'default', { pollIntervalMs: 1 })).toEqual(all.map((a) => a.name));
    expect(calls.add).toEqual([Object.fromEntries(all.map((a) => [a.name, INDEXED_VALUE_TYPES[a.type]]))]);
    expect(keyword).toBe(2);
  });

  it('waits until the added attributes are listed and queryable', async () => {
    const { connection, calls } = fakeServer({ lagPolls: 3 });
    await ensureSearchAttributes(connection, 'default', { pollIntervalMs: 1 });
    expect(calls.list).toBeGreaterThanOrEqual(4);
  });

  it('adds only what is missing and nothing when all are there', async () => {
    const first = all[0]!;
    const { connection, calls } = fakeServer({ registered: { [first.name]: INDEXED_VALUE_TYPES[first.type] } });
    await ensureSearchAttributes(connection, 'default', { pollIntervalMs: 1 });
    expect(Object.keys(calls.add[0]!)).not.toContain(first.name);

    const full = fakeServer({ registered: Object.fromEntries(all.map((a) => [a.name, INDEXED_VALUE_TYPES[a.type]])) });
    expect(await ensureSearchAttributes(full.connection, 'default')).toEqual([]);
    expect(full.calls.add).toEqual([]);
  });

  it.each([
    ['PERMISSION_DENIED', PERMISSION_DENIED],
    ['UNIMPLEMENTED', UNIMPLEMENTED],
  ])(
    'gives one clear error naming every attribute when AddSearchAttributes is refused (%s, e.g. Temporal Cloud)',
    async (_, code) => {
      const { connection } = fakeServer({ refuseAdd: code });
      const error = await ensureSearchAttributes(connection, 'shop.a1b2c', { pollIntervalMs: 1 }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(SearchAttributesNotRegisteredError);
      const message = (error as Error).message;
      for (const attribute of all) expect(message).toContain(`${attribute.name} (Keyword)`);
      expect(message).toMatch(/namespace settings/);
      expect(message).toMatch(/Custom Search Attributes/);
      expect(message).toContain('tcld namespace search-attributes add');
    },
  );

  it('checks by visibility query alone when the OperatorService is refused: fine when present, one error when not', async () => {
    const present = fakeServer({
      refuseList: PERMISSION_DENIED,
      registered: Object.fromEntries(all.map((a) => [a.name, keyword])),
    });
    expect(await ensureSearchAttributes(present.connection, 'shop.a1b2c')).toEqual([]);

    const absent = fakeServer({ refuseList: PERMISSION_DENIED });
    await expect(ensureSearchAttributes(absent.connection, 'shop.a1b2c')).rejects.toThrow(
      SearchAttributesNotRegisteredError,
    );
    expect(absent.calls.add).toEqual([]);
  });

  it('refuses a name registered with another type', async () => {
    const first = all[0]!;
    const { connection } = fakeServer({ registered: { [first.name]: INDEXED_VALUE_TYPES.TEXT } });
    await expect(ensureSearchAttributes(connection, 'default')).rejects.toThrow(new RegExp(`${first.name} is Text`));
  });

  it('gives up after the timeout when the attributes never become usable', async () => {
    const { connection } = fakeServer({ lagPolls: 1_000_000 });
    await expect(ensureSearchAttributes(connection, 'default', { timeoutMs: 50, pollIntervalMs: 5 })).rejects.toThrow(
      /not usable within 50 ms/,
    );
  });
});
