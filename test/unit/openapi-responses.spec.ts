/**
 * The strict response validator of test/helpers/openapi-responses.ts (used by test/e2e/openapi-client.e2e-spec.ts)
 * refuses what a document does not promise: an undocumented member, `null` where the schema has no `null` type, a
 * missing required header, a header of the wrong form, an undocumented status or media type.
 */
import { describe, expect, it } from 'vitest';
import { type Exchange, responseValidator } from '../helpers/openapi-responses.js';

const document = {
  openapi: '3.1.0',
  paths: {
    '/orders/{id}': {
      get: {
        responses: {
          '200': {
            description: 'ok',
            headers: { 'Retry-After': { required: true, schema: { type: 'integer', minimum: 0 } } },
            content: { 'application/json': { schema: { $ref: '#/components/schemas/Order' } } },
          },
        },
      },
    },
  },
  components: {
    schemas: {
      Order: {
        type: 'object',
        properties: {
          id: { type: 'string', format: 'uuid' },
          failure: { anyOf: [{ $ref: '#/components/schemas/Failure' }, { type: 'null' }] },
          name: { type: 'string', example: 'Ada' },
        },
        required: ['id', 'failure'],
        additionalProperties: false,
      },
      Failure: { type: 'object', properties: { code: { type: 'string' } }, required: ['code'] },
    },
  },
};

const ID = '3f0c2a5e-8b1d-4c8e-9d4f-0a1b2c3d4e5f';

function exchange(overrides: Partial<Exchange> & { body?: string; headers?: Headers } = {}): Exchange {
  return {
    method: 'GET',
    url: `http://127.0.0.1/orders/${ID}?x=1`,
    status: 200,
    headers: new Headers({ 'content-type': 'application/json; charset=utf-8', 'retry-after': '5' }),
    body: JSON.stringify({ id: ID, failure: null }),
    ...overrides,
  };
}

describe('responseValidator', () => {
  const { check } = responseValidator(document);

  it('accepts a response the document describes (null where the schema allows it)', () => {
    expect(check(exchange())).toEqual([]);
    expect(check(exchange({ body: JSON.stringify({ id: ID, failure: { code: 'x' }, name: 'Ada' }) }))).toEqual([]);
  });

  it('refuses an undocumented member, a wrong null, a bad format', () => {
    expect(check(exchange({ body: JSON.stringify({ id: ID, failure: null, extra: 1 }) }))).toEqual([
      expect.stringContaining('must NOT have additional properties'),
    ]);
    expect(check(exchange({ body: JSON.stringify({ id: ID, failure: null, name: null }) }))).toEqual([
      expect.stringContaining('must be string'),
    ]);
    expect(check(exchange({ body: JSON.stringify({ id: 'nope', failure: null }) }))).toEqual([
      expect.stringContaining('must match format "uuid"'),
    ]);
  });

  it('refuses a missing or malformed required header', () => {
    expect(check(exchange({ headers: new Headers({ 'content-type': 'application/json' }) }))).toEqual([
      expect.stringContaining('required header Retry-After missing'),
    ]);
    expect(
      check(exchange({ headers: new Headers({ 'content-type': 'application/json', 'retry-after': 'soon' }) })),
    ).toEqual([expect.stringContaining('header Retry-After: soon')]);
  });

  it('refuses an undocumented status, media type or operation', () => {
    expect(check(exchange({ status: 404 }))).toEqual([expect.stringContaining('status not documented')]);
    expect(
      check(exchange({ headers: new Headers({ 'content-type': 'application/problem+json', 'retry-after': '1' }) })),
    ).toEqual([expect.stringContaining('media type application/problem+json not documented')]);
    expect(check(exchange({ method: 'DELETE' }))).toEqual([expect.stringContaining('no such operation')]);
  });
});
