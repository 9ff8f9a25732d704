/**
 * Strict validation of HTTP exchanges against an OpenAPI 3.1 document: Ajv in its JSON Schema 2020-12 mode (the
 * dialect of OpenAPI 3.1) with strict mode on and the formats checked (ajv-formats). For each exchange:
 * - the operation (method + path template) and the status (or `default`) must be documented;
 * - a body must come with a documented media type and validate against its schema (`additionalProperties: false`
 *   where the document says so: an undocumented member fails);
 * - every header the response declares `required` must be there, and every declared header that is there must
 *   match its schema (`Retry-After` an integer, `Idempotent-Replayed` `true`).
 */
import { Ajv2020, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

/** One request and the response it got, as a client saw it. */
export interface Exchange {
  method: string;
  /** The request URL (absolute or a path; the query is ignored). */
  url: string;
  status: number;
  headers: Headers;
  /** The response body as text ('' when none). */
  body: string;
}

type Json = Record<string, unknown>;
interface ResponseObject {
  headers?: Record<string, { required?: boolean; schema?: Json }>;
  content?: Record<string, { schema?: Json }>;
}

/** `#/components/schemas/X` → `#/$defs/X`, so a response schema compiles with the components as its `$defs`. */
function toDefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toDefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      k === '$ref' && typeof v === 'string' ? v.replace('#/components/schemas/', '#/$defs/') : toDefs(v),
    ]),
  );
}

/** A validator of exchanges against `document`; `check` returns what is wrong (empty when the exchange conforms). */
export function responseValidator(document: Json) {
  const ajv = new Ajv2020({ strict: true, allErrors: true, allowUnionTypes: true });
  addFormats.default(ajv);
  ajv.addKeyword('example'); // OpenAPI's own (deprecated in 3.1 Schema Objects, still allowed)
  const defs = toDefs((document.components as Json | undefined)?.schemas ?? {}) as Json;
  const compiled = new Map<string, ValidateFunction>();
  const compile = (key: string, schema: Json) => {
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajv.compile({ ...(toDefs(schema) as Json), $defs: defs });
      compiled.set(key, validate);
    }
    return validate;
  };
  const paths = Object.entries(document.paths as Record<string, Record<string, Json>>).map(([template, item]) => ({
    template,
    item,
    pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}$`),
  }));

  return {
    /** What is wrong with `exchange` according to the document (empty: it conforms). */
    check(exchange: Exchange): string[] {
      const path = new URL(exchange.url, 'http://localhost').pathname;
      const method = exchange.method.toLowerCase();
      const where = `${exchange.method} ${path} → ${exchange.status}`;
      const found = paths.find((p) => p.pattern.test(path) && p.item[method]);
      if (!found) return [`${where}: no such operation in the document`];
      const responses = (found.item[method] as { responses: Record<string, ResponseObject> }).responses;
      const statusKey = String(exchange.status) in responses ? String(exchange.status) : 'default';
      const response = responses[statusKey];
      if (!response) return [`${where}: status not documented`];
      const problems: string[] = [];

      for (const [name, header] of Object.entries(response.headers ?? {})) {
        const value = exchange.headers.get(name);
        if (value === null) {
          if (header.required) problems.push(`${where}: required header ${name} missing`);
          continue;
        }
        const schema = header.schema ?? {};
        const parsed = schema.type === 'integer' && /^\d+$/.test(value) ? Number(value) : value;
        const validate = compile(`${found.template} ${method} ${statusKey} header ${name}`, schema);
        if (!validate(parsed)) problems.push(`${where}: header ${name}: ${value} ${ajv.errorsText(validate.errors)}`);
      }

      if (exchange.body === '') return problems;
      const mediaType = (exchange.headers.get('content-type') ?? '').split(';')[0]!.trim();
      const content = response.content?.[mediaType];
      if (!content) {
        problems.push(`${where}: media type ${mediaType || '(none)'} not documented`);
        return problems;
      }
      if (!content.schema || !mediaType.endsWith('json')) return problems;
      const validate = compile(`${found.template} ${method} ${statusKey} ${mediaType}`, content.schema);
      if (!validate(JSON.parse(exchange.body))) {
        problems.push(`${where}: body ${ajv.errorsText(validate.errors)}: ${exchange.body.slice(0, 300)}`);
      }
      return problems;
    },
  };
}

/**
 * A `fetch` that records every exchange (the response body read as text, then handed on as a new Response), for
 * {@link responseValidator}.
 */
export function recordingFetch(exchanges: Exchange[]): typeof fetch {
  return async (input, init) => {
    const request = new Request(input, init);
    const response = await fetch(request);
    const body = await response.text();
    exchanges.push({
      method: request.method,
      url: request.url,
      status: response.status,
      headers: response.headers,
      body,
    });
    return new Response(response.status === 204 || response.status === 304 ? null : body, {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
