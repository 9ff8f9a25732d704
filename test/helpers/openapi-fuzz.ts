/**
 * A schema-driven HTTP fuzzer over an OpenAPI 3 document, in the manner of Schemathesis (which cannot be installed
 * here: no Python registry), built on fast-check (https://fast-check.dev) for the generation:
 *
 * - Positive cases: parameters and bodies generated from the operation's own schemas (types, formats, lengths,
 *   bounds, enums, patterns, required members), with known resource ids mixed in so the operations reach their
 *   business logic.
 * - Negative cases: a valid body with one node replaced by an arbitrary or hostile JSON value (null, -0, 1e308,
 *   2^31, 2^53+2, NUL, lone surrogates, 10 000 characters, year 0000, `__proto__`), an unknown or `__proto__`
 *   member added, a required member removed; arbitrary JSON; malformed JSON; another media type; junk, repeated or
 *   oversized query parameters; unencoded and malformed path segments; odd Idempotency-Key values; methods the path
 *   does not declare.
 *
 * Each response is checked against the document: no 5xx, the status among the operation's documented responses
 * (405 with `Allow` for an undeclared method), every 4xx/5xx a problem document (`application/problem+json` with
 * `type`, `title`, and `status` equal to the response's), every 2xx JSON.
 */
import fc from 'fast-check';

/** The part of a JSON Schema (OpenAPI 3.1's 2020-12 dialect, and 3.0's `nullable`) the generator reads. */
export interface Schema {
  $ref?: string;
  /** One type, or several (`['string', 'null']`). */
  type?: string | string[];
  const?: unknown;
  format?: string;
  enum?: unknown[];
  nullable?: boolean;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  pattern?: string;
}

interface Parameter {
  name: string;
  in: 'path' | 'query' | 'header';
  required?: boolean;
  schema?: Schema;
}

interface Operation {
  parameters?: Parameter[];
  requestBody?: { content?: Record<string, { schema?: Schema }> };
  responses: Record<string, unknown>;
}

/** A minimal OpenAPI document. */
export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

/** One generated request. */
export interface FuzzRequest {
  /** `${METHOD} ${template}`, e.g. `POST /orders/{id}/cancel`. */
  operation: string;
  method: string;
  /** Path with its parameters filled in, query string included. */
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Documented statuses of the operation; for an undeclared method `['405']`. */
  expected: string[];
  /** Documented media types per status (a 2xx must be JSON only where the document says so). */
  mediaTypes?: Record<string, string[]>;
}

/** Values the fuzzer may use for path parameters by name (existing resources), filled in at send time. */
export type KnownValues = Record<string, () => string | undefined>;

/** Values the fuzzer mixes into body members by name (e.g. `sku`: the catalogue), so bodies reach business rules. */
export type KnownMembers = Record<string, readonly unknown[]>;

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

function resolve(schema: Schema, doc: OpenApiDocument): Schema {
  let s = schema;
  for (let i = 0; s.$ref && i < 10; i++) s = doc.components?.schemas?.[s.$ref.split('/').pop()!] ?? {};
  return s;
}

/** Values hostile to parsers, databases and validators. */
const hostile: fc.Arbitrary<unknown> = fc.constantFrom(
  null,
  -0,
  0.5,
  1e308,
  -1e308,
  2 ** 31,
  2 ** 31 - 1,
  -(2 ** 31) - 1,
  2 ** 53 + 2,
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x'.repeat(10_000),
  '0000-01-01T00:00:00Z',
  '-271821-04-20T00:00:00Z',
  '__proto__',
  "'; DROP TABLE orders; --",
  '%00',
  '😀'.repeat(100),
  true,
  [],
  {},
  [null],
);

/** Arbitrary JSON values, hostile ones included. */
export const anyJson: fc.Arbitrary<unknown> = fc.oneof(fc.jsonValue({ maxDepth: 3 }), hostile);

/** A generator of values valid for `schema` (as far as a JSON Schema can say; business rules aside). */
export function fromSchema(
  schema: Schema,
  doc: OpenApiDocument,
  depth = 0,
  members: KnownMembers = {},
): fc.Arbitrary<unknown> {
  const s = resolve(schema, doc);
  let arb: fc.Arbitrary<unknown>;
  if (Array.isArray(s.type)) {
    return fc.oneof(...s.type.map((type) => fromSchema({ ...s, type }, doc, depth, members)));
  }
  if ('const' in s) arb = fc.constant(s.const);
  else if (s.type === 'null') arb = fc.constant(null);
  else if (s.enum) arb = fc.constantFrom(...s.enum);
  else if (s.anyOf || s.oneOf) {
    arb = fc.oneof(...(s.anyOf ?? s.oneOf)!.map((x) => fromSchema(x, doc, depth + 1, members)));
  } else if (s.allOf) {
    arb = fromSchema(Object.assign({}, ...s.allOf.map((x) => resolve(x, doc))), doc, depth + 1, members);
  } else if (s.type === 'string') {
    const maxLength = Math.min(s.maxLength ?? 40, 300);
    const minLength = s.minLength ?? 0;
    if (s.format === 'uuid') arb = fc.uuid();
    else if (s.format === 'email') arb = fc.emailAddress().filter((e) => e.length <= maxLength);
    else if (s.format === 'date-time') arb = fc.date({ noInvalidDate: true }).map((d) => d.toISOString());
    else if (s.pattern) arb = fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length <= maxLength);
    else arb = fc.string({ minLength, maxLength: Math.max(minLength, maxLength), unit: 'grapheme' });
  } else if (s.type === 'integer') {
    arb = fc.integer({ min: s.minimum ?? -(2 ** 31), max: s.maximum ?? 2 ** 31 - 1 });
  } else if (s.type === 'number') arb = fc.double({ noNaN: true, noDefaultInfinity: true });
  else if (s.type === 'boolean') arb = fc.boolean();
  else if (s.type === 'array') {
    arb = fc.array(fromSchema(s.items ?? {}, doc, depth + 1, members), {
      minLength: s.minItems ?? 0,
      maxLength: Math.max(s.minItems ?? 0, Math.min(s.maxItems ?? 4, 4)),
    });
  } else if (s.type === 'object' || s.properties) {
    const props = s.properties ?? {};
    const model: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [name, prop] of Object.entries(props)) {
      const generated = fromSchema(prop, doc, depth + 1, members);
      const list = members[name];
      model[name] = list?.length ? fc.oneof(fc.constantFrom(...list), generated) : generated;
    }
    arb = fc.record(model, { requiredKeys: (s.required ?? []).filter((k) => k in props) });
  } else arb = depth > 2 ? fc.constant(null) : anyJson;
  return s.nullable ? fc.option(arb, { nil: null }) : arb;
}

/** Every node path of a JSON value (the root is `[]`). */
function paths(value: unknown, at: (string | number)[] = []): (string | number)[][] {
  const out = [at];
  if (Array.isArray(value)) value.forEach((v, i) => out.push(...paths(v, [...at, i])));
  else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) out.push(...paths(v, [...at, k]));
  }
  return out;
}

/** Sets an own, enumerable member, even one named `__proto__` (as JSON.parse would). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

/** `value` with one node replaced, a member added (unknown or `__proto__`) or removed. */
function mutate(value: unknown, pick: number, junk: unknown, op: 'replace' | 'add' | 'remove', key: string): unknown {
  const copy: unknown = JSON.parse(JSON.stringify(value ?? null));
  const all = paths(copy);
  const path = all[pick % all.length]!;
  if (path.length === 0) return op === 'replace' ? junk : copy;
  const parent = path.slice(0, -1).reduce<any>((node, k) => node[k], copy); // eslint-disable-line @typescript-eslint/no-explicit-any
  const last = path.at(-1)!;
  if (op === 'replace') parent[last] = junk;
  else if (op === 'remove' && !Array.isArray(parent)) delete parent[last];
  else {
    const target = parent[last];
    if (target && typeof target === 'object' && !Array.isArray(target)) setOwn(target, key, junk);
    else parent[last] = junk;
  }
  return copy;
}

/** A body for `schema`: valid, mutated, arbitrary, malformed or empty; with its media type. */
function bodyFor(
  schema: Schema,
  doc: OpenApiDocument,
  members: KnownMembers,
): fc.Arbitrary<{ text?: string; type: string }> {
  const valid = fromSchema(schema, doc, 0, members);
  const json = (v: unknown) => ({ text: JSON.stringify(v), type: 'application/json' });
  return fc.oneof(
    { weight: 4, arbitrary: valid.map(json) },
    {
      weight: 4,
      arbitrary: fc
        .tuple(
          valid,
          fc.nat(),
          anyJson,
          fc.constantFrom('replace', 'add', 'remove'),
          fc.constantFrom('__proto__', 'constructor', 'extra', 'prototype'),
        )
        .map(([v, pick, junk, op, key]) => json(mutate(v, pick, junk, op as 'replace' | 'add' | 'remove', key))),
    },
    { weight: 1, arbitrary: anyJson.map(json) },
    {
      weight: 1,
      arbitrary: fc.oneof(
        valid.map((v) => ({ text: JSON.stringify(v).slice(0, -1), type: 'application/json' })),
        fc.string().map((t) => ({ text: t, type: 'application/json' })),
        valid.map((v) => ({ text: JSON.stringify(v), type: 'text/plain' })),
        fc.constant({ text: 'a=1&b=2', type: 'application/x-www-form-urlencoded' }),
        fc.constant({ text: undefined, type: 'application/json' }),
        fc.constant({ text: `{"a":"${'y'.repeat(120 * 1024)}"}`, type: 'application/json' }),
      ),
    },
  );
}

/** A value for one parameter: from its schema, or junk; `undefined` leaves an optional one out. */
function parameterValue(p: Parameter, doc: OpenApiDocument, known: KnownValues): fc.Arbitrary<string | undefined> {
  const fromSpec = fromSchema(p.schema ?? { type: 'string' }, doc).map((v) => String(v));
  const junk = fc.oneof(
    fc.string({ maxLength: 80 }),
    fc.constantFrom('', '-1', '0', '1e3', '99999999999999999999', 'null', 'x'.repeat(600), '%', '%FF', '..'),
  );
  const choices: fc.Arbitrary<string | undefined>[] = [fromSpec, fromSpec, junk];
  if (known[p.name]) choices.push(fc.constant(`\u0001known:${p.name}`), fc.constant(`\u0001known:${p.name}`));
  if (p.in === 'header') {
    const headerSafe = fc.string({
      unit: fc.integer({ min: 0x21, max: 0x7e }).map((c) => String.fromCharCode(c)),
      maxLength: 300,
    });
    return fc.oneof(
      fc.constant(undefined),
      fc.uuid(),
      headerSafe,
      headerSafe.map((k) => `"${k}"`),
    );
  }
  // An empty path segment addresses another resource (`/inventory/`), not this operation.
  if (p.in === 'path') return fc.oneof(...choices).filter((v) => v !== undefined && v !== '');
  return p.required ? fc.oneof(...choices) : fc.oneof(fc.constant(undefined), ...choices);
}

/** Generators of requests for every operation of `doc` (and for undeclared methods on its paths). */
export function requestArbitrary(
  doc: OpenApiDocument,
  known: KnownValues,
  members: KnownMembers = {},
): fc.Arbitrary<FuzzRequest> {
  const perOperation: fc.WeightedArbitrary<FuzzRequest>[] = [];
  for (const [template, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) {
        perOperation.push({
          weight: 1,
          arbitrary: fc.constant({
            operation: `${method.toUpperCase()} ${template} (undeclared)`,
            method: method.toUpperCase(),
            url: template.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000'),
            headers: {},
            expected: ['405'],
          }),
        });
        continue;
      }
      const params = op.parameters ?? [];
      const bodySchema = op.requestBody?.content?.['application/json']?.schema;
      perOperation.push({
        weight: 12,
        arbitrary: fc
          .tuple(
            fc.tuple(...params.map((p) => parameterValue(p, doc, known))),
            bodySchema ? bodyFor(bodySchema, doc, members) : fc.constant(undefined),
            fc.boolean(),
          )
          .map(([values, body, repeatQuery]) => {
            let path = template;
            const query: string[] = [];
            const headers: Record<string, string> = {};
            params.forEach((p, i) => {
              const v = values[i];
              if (p.in === 'path') {
                // Encoded (a raw `?`, `#` or `/` would address another resource); sometimes with `%` left raw, so
                // malformed escapes (`%FF`, a lone `%`) reach the router.
                // A segment of only dots is a dot-segment (RFC 3986 §5.2.4): clients and servers resolve it to
                // another path, so it can never address this route's resource. Prefix it to keep it a plain value.
                const raw = encodeURIComponent(v ?? '');
                const encoded = /^\.+$/.test(raw) ? `x${raw}` : raw;
                path = path.replace(`{${p.name}}`, repeatQuery ? encoded.replace(/%25/g, '%') : encoded);
              } else if (v !== undefined && p.in === 'query') {
                query.push(`${encodeURIComponent(p.name)}=${encodeURIComponent(v)}`);
                if (repeatQuery) query.push(`${encodeURIComponent(p.name)}=${encodeURIComponent(v)}`);
              } else if (v !== undefined && p.in === 'header') headers[p.name] = v;
            });
            if (body) headers['content-type'] = body.type;
            return {
              operation: `${method.toUpperCase()} ${template}`,
              method: method.toUpperCase(),
              url: query.length ? `${path}?${query.join('&')}` : path,
              headers,
              body: body?.text,
              expected: Object.keys(op.responses),
              mediaTypes: Object.fromEntries(
                Object.entries(op.responses).map(([code, r]) => [
                  code,
                  Object.keys((r as { content?: Record<string, unknown> }).content ?? {}),
                ]),
              ),
            };
          }),
      });
    }
  }
  return fc.oneof(...perOperation);
}

/** Fills in `known:<name>` placeholders with an existing resource (or a fresh UUID when there is none yet). */
export function fillKnown(url: string, known: KnownValues): string {
  return url.replace(/%01known%3A([A-Za-z]+)/g, (_m, name: string) =>
    encodeURIComponent(known[name]?.() ?? '00000000-0000-4000-8000-000000000000'),
  );
}

/** One response's check result: the reasons it breaks the contract (empty when it conforms). */
export function checkResponse(req: FuzzRequest, res: { status: number; headers: Headers; text: string }): string[] {
  const problems: string[] = [];
  const status = String(res.status);
  if (res.status >= 500) problems.push(`server error ${status}`);
  if (!req.expected.includes(status))
    problems.push(`undocumented status ${status} (documented: ${req.expected.join(', ')})`);
  const type = res.headers.get('content-type') ?? '';
  if (res.status >= 400) {
    if (!type.startsWith('application/problem+json'))
      problems.push(`error without problem+json (${type || 'no type'})`);
    let body: Record<string, unknown> | undefined;
    try {
      body = JSON.parse(res.text) as Record<string, unknown>;
    } catch {
      problems.push('error body is not JSON');
    }
    if (body && (typeof body.type !== 'string' || typeof body.title !== 'string' || body.status !== res.status)) {
      problems.push(`problem document without type/title/status: ${res.text.slice(0, 200)}`);
    }
    if (res.status === 405 && !res.headers.get('allow')) problems.push('405 without Allow');
  } else if (
    res.status !== 204 &&
    req.method !== 'HEAD' &&
    !type.startsWith('application/json') &&
    (req.mediaTypes?.[status] ?? ['application/json']).some((t) => t.includes('json'))
  ) {
    problems.push(`success without JSON (${type || 'no type'})`);
  }
  return problems;
}
