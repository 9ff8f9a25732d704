/**
 * The API's OpenAPI 3.1 document (served at `/docs-json`, shown at `/docs`): what @nestjs/swagger reads from the
 * controllers, with
 * - every zod schema converted as JSON Schema 2020-12 (OpenAPI 3.1's dialect: `null` is a type, so a nullable member
 *   is `anyOf: [X, {type: 'null'}]` and validators and generators agree on it), shared schemas (`.meta({ id })`) as
 *   components;
 * - one schema per registered problem type (`<Key>Problem`: `type` fixed to its URI, `status` to its statuses, its
 *   extension members), and on each operation the problem+json responses of the types it names
 *   ({@link ApiProblems}) and of those that apply to every operation of its kind (`appliesTo`), grouped by status,
 *   with the headers the types carry (`Retry-After`, `WWW-Authenticate`) and an example per type;
 * - the security scheme of opaque API keys (HTTP Bearer), each operation's requirement with the scope it needs as the
 *   requirement's role (OpenAPI 3.1 §4.8.30: roles for non-OAuth schemes), `operator` as the alternative that
 *   satisfies every scope, and `security: []` on public routes;
 * - operationIds that read as a client's method names (`createOrder`, `listOrders`): the method name and the
 *   controller's resource unless the route names its own ({@link clientOperationId}).
 */
import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, type OpenAPIObject, SwaggerModule } from '@nestjs/swagger';
import { z } from 'zod';
import { Scope } from '../auth/scopes.js';
import type { AppConfig } from '../config/config.js';
import { OPERATION_MARKS, type ProblemUseMark } from './api-problem-responses.decorator.js';
import {
  defaultTitle,
  type OperationKind,
  PROBLEM_JSON,
  type ProblemHeader,
  type ProblemTypeDefinition,
  problemTypeOf,
  registeredProblemTypes,
} from './problem-details.js';

/** Name of the security scheme in the OpenAPI document. */
export const API_KEY_SECURITY = 'api-key';

/** What the document says about the service (the package's name, version and licence). */
export interface DocumentInfo {
  version: string;
  license: string;
}

type Json = Record<string, unknown>;
type Operation = Json & { responses: Record<string, Json>; parameters?: unknown[]; requestBody?: unknown };

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options'] as const;

/**
 * Builds the document of `app` (its controllers must be registered: call after `NestFactory.create`).
 * @throws Error when an operation names an unregistered problem type, `about:blank` without a status, or declares an
 *   error response outside {@link ApiProblems}.
 */
export function createOpenApiDocument(app: INestApplication, config: AppConfig, info: DocumentInfo): OpenAPIObject {
  const document = SwaggerModule.createDocument(app, documentBase(config, info), {
    operationIdFactory: clientOperationId,
    standardSchemaConverter: toJsonSchema2020,
  });
  return finishDocument(document);
}

/**
 * The operationId of a route that names none: its method name, then the controller's resource, singular unless the
 * method lists (`OrdersController.cancel` → `cancelOrder`, `OrdersController.list` → `listOrders`,
 * `HealthController.check` → `checkHealth`). Routes whose method name does not read so set `operationId` in
 * `@ApiOperation`.
 */
export function clientOperationId(controllerKey: string, methodKey: string): string {
  const resource = controllerKey.replace(/Controller$/, '');
  const noun = methodKey.startsWith('list') ? resource : resource.replace(/s$/, '');
  return `${methodKey}${noun}`;
}

/** A zod schema as JSON Schema 2020-12, its `.meta({ id })` schemas as components (Nest rewrites the `$ref`s). */
function toJsonSchema2020(
  schema: unknown,
  { schemaType }: { schemaType: 'input' | 'output' },
): { schema: unknown; components: Record<string, unknown> } | undefined {
  if (!(schema instanceof z.ZodType)) return undefined;
  const {
    $schema: _dialect,
    $defs,
    ...root
  } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io: schemaType,
    unrepresentable: 'any',
  }) as Json;
  return { schema: root, components: ($defs as Record<string, unknown>) ?? {} };
}

function documentBase(config: AppConfig, info: DocumentInfo) {
  return new DocumentBuilder()
    .setOpenAPIVersion('3.1.0')
    .setTitle('Order fulfilment API')
    .setDescription(
      'Accepts orders (202 + Location) and fulfils each with a Temporal workflow of the steps `GET /steps` lists ' +
        '(reserve inventory, invoice, confirmation email, shipment, accounting sync). Money is in integer minor ' +
        'currency units; times are ISO 8601 strings. Errors are RFC 9457 problem details ' +
        '(application/problem+json): each `type` URI has its own schema (`<Name>Problem`) with its extension members. ' +
        'Every operation except `/health` and `/metrics` needs an API key; the scope it needs is the role in its ' +
        'security requirement (`operator` satisfies every scope).',
    )
    .setVersion(info.version)
    .setLicense(info.license, `https://spdx.org/licenses/${info.license}.html`)
    .addServer(config.PUBLIC_URL ?? '/', config.PUBLIC_URL ? 'This API' : 'This API (the host serving this document)')
    .addBearerAuth(
      {
        type: 'http',
        scheme: 'bearer',
        // Nest's default says JWT; these keys are opaque random strings.
        bearerFormat: undefined,
        description:
          'An opaque API key (`of_live_…`, `of_dev_…`; not a JWT) sent as `Authorization: Bearer <key>` (RFC 6750). ' +
          'Each key belongs to a client and carries scopes (' +
          Object.values(Scope)
            .map((s) => `\`${s}\``)
            .join(', ') +
          '); an operation lists the scope it needs as its requirement’s role, with `operator` as the alternative. ' +
          'Create keys with `npm run keys -- create`; `npm start` prints development keys.',
      },
      API_KEY_SECURITY,
    )
    .build();
}

/** Problem schemas and responses, security requirements; removes the decorators' marks. */
function finishDocument(document: OpenAPIObject): OpenAPIObject {
  document.components ??= {};
  const schemas = (document.components.schemas ??= {}) as Record<string, unknown>;
  for (const definition of registeredProblemTypes()) Object.assign(schemas, problemSchemas(definition));

  for (const item of Object.values(document.paths ?? {}) as Record<string, Operation | undefined>[]) {
    for (const method of METHODS) {
      const operation = item[method];
      if (!operation) continue;
      const kinds = operationKinds(operation, item);
      addProblemResponses(operation, kinds);
      operation.security = securityOf(operation);
      for (const mark of Object.values(OPERATION_MARKS)) delete operation[mark];
    }
  }
  return document;
}

/** The kinds of operation `operation` is, for the problem types that apply to every operation of a kind. */
function operationKinds(operation: Operation, item: Json): Set<OperationKind> {
  const hasBody = operation.requestBody !== undefined;
  const hasInput =
    hasBody || (operation.parameters?.length ?? 0) > 0 || ((item.parameters as unknown[] | undefined)?.length ?? 0) > 0;
  const kinds = new Set<OperationKind>(['every']);
  if (hasInput) kinds.add('with-input');
  if (hasBody) kinds.add('with-body');
  if (operation[OPERATION_MARKS.public] !== true) kinds.add('authenticated');
  if (operation[OPERATION_MARKS.requiredScope] !== undefined) kinds.add('scoped');
  return kinds;
}

/** The security requirement: none when public, else the scope (or `operator`), else any valid key. */
function securityOf(operation: Operation): Record<string, string[]>[] {
  if (operation[OPERATION_MARKS.public] === true) return [];
  const scope = operation[OPERATION_MARKS.requiredScope] as Scope | undefined;
  if (scope === undefined) return [{ [API_KEY_SECURITY]: [] }];
  return [...new Set([scope, Scope.Operator])].map((role) => ({ [API_KEY_SECURITY]: [role] }));
}

interface ResolvedUse {
  definition: ProblemTypeDefinition;
  status: number;
  description: string;
}

/** The problem uses of `operation`: those it names first, then those of its kinds; one per type and status. */
function problemUses(operation: Operation, kinds: Set<OperationKind>): ResolvedUse[] {
  const named = (operation[OPERATION_MARKS.problems] as ProblemUseMark[] | undefined) ?? [];
  const uses: ResolvedUse[] = [];
  const add = (definition: ProblemTypeDefinition, status: number | undefined, description: string | undefined) => {
    const statuses = status !== undefined ? [status] : definition.statuses;
    if (statuses.length === 0) throw new Error(`${definition.uri} needs the status it is documented with`);
    for (const s of statuses) {
      if (uses.some((u) => u.definition === definition && u.status === s)) continue;
      uses.push({ definition, status: s, description: description ?? definition.description });
    }
  };
  for (const mark of named) {
    const definition = problemTypeOf(mark.type);
    if (!definition) throw new Error(`ApiProblems names ${mark.type}, which no defineProblemTypes registered`);
    add(definition, mark.status, mark.description);
  }
  for (const definition of registeredProblemTypes()) {
    for (const applies of definition.appliesTo ?? []) {
      if (kinds.has(applies.operations)) add(definition, applies.status, applies.description);
    }
  }
  return uses;
}

/**
 * Adds the problem+json responses of `operation`, one per status: the schema of its only type, or `oneOf` its types;
 * the union of their headers, required when every type at that status sends it.
 * @throws Error when the operation already declares an error response at such a status another way.
 */
function addProblemResponses(operation: Operation, kinds: Set<OperationKind>): void {
  const byStatus = new Map<number, ResolvedUse[]>();
  for (const use of problemUses(operation, kinds)) byStatus.set(use.status, [...(byStatus.get(use.status) ?? []), use]);
  for (const [status, uses] of [...byStatus].sort(([a], [b]) => a - b)) {
    if (operation.responses[String(status)] !== undefined) {
      throw new Error(`${status} of ${String(operation.operationId)} is declared outside ApiProblems`);
    }
    const refs = uses.map((u) => ({ $ref: `#/components/schemas/${u.definition.name}` }));
    const headers: Record<string, Json> = {};
    for (const use of uses) {
      for (const [name, header] of Object.entries(use.definition.headers ?? {})) {
        const sentByEveryType = uses.every((u) => {
          const own = u.definition.headers?.[name];
          return own !== undefined && own.required !== false;
        });
        headers[name] = headerObject(header, sentByEveryType);
      }
    }
    operation.responses[String(status)] = {
      description: uses.map((u) => `\`${slug(u.definition)}\`: ${u.description}`).join('\n\n'),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      content: {
        [PROBLEM_JSON]: {
          schema: refs.length === 1 ? refs[0] : { oneOf: refs },
          examples: Object.fromEntries(
            uses.map((u) => [
              slug(u.definition),
              { summary: u.definition.title, value: exampleOf(u.definition, status) },
            ]),
          ),
        },
      },
    };
  }
}

function headerObject(header: ProblemHeader, required: boolean): Json {
  return { description: header.description, required, schema: header.schema ?? { type: 'string' } };
}

/** The last path segment of a type URI (`order-not-cancellable`), or `about:blank`. */
function slug(definition: ProblemTypeDefinition): string {
  return definition.uri.slice(definition.uri.lastIndexOf('/') + 1);
}

/** An occurrence of the type at `status`, from its definition's example. */
function exampleOf(definition: ProblemTypeDefinition, status: number): Json {
  const title = definition.statuses.length === 0 ? defaultTitle(status) : definition.title;
  return { type: definition.uri, title, status, instance: '/orders', ...definition.example };
}

/**
 * The schema of a problem type (and the shared schemas it references, e.g. `ValidationErrorItem`, `OrderStatus`):
 * the standard members with `type` and `status` fixed by the definition, its extension members, nothing else.
 */
function problemSchemas(definition: ProblemTypeDefinition): Record<string, unknown> {
  const status = definition.statuses[0] ?? definition.appliesTo?.find((a) => a.status !== undefined)?.status ?? 400;
  const schema = z
    .object({
      type: z.literal(definition.uri).meta({ description: 'The problem type (RFC 9457 §3.1.1)' }),
      title: z.string().meta({
        description: definition.statuses.length === 0 ? 'The reason phrase of the status' : 'The type’s title',
        example: definition.statuses.length === 0 ? defaultTitle(status) : definition.title,
      }),
      status:
        definition.statuses.length === 0
          ? z.int().min(400).max(599).meta({ description: 'The HTTP status' })
          : z.literal(definition.statuses as [number, ...number[]]).meta({ description: 'The HTTP status' }),
      detail: z.string().optional().meta({ description: 'What happened this time' }),
      instance: z.string().optional().meta({ description: 'The request path', example: '/orders' }),
      ...definition.extensions,
    })
    .meta({ title: definition.title, description: definition.description, examples: [exampleOf(definition, status)] });
  const {
    $schema: _dialect,
    $defs,
    ...root
  } = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io: 'output',
    unrepresentable: 'any',
  }) as Json;
  return rewriteRefs({ ...(($defs as Json | undefined) ?? {}), [definition.name]: root }) as Record<string, unknown>;
}

/** `#/$defs/X` → `#/components/schemas/X`, everywhere in `value`. */
function rewriteRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(rewriteRefs);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, child]) => [
      key,
      key === '$ref' && typeof child === 'string'
        ? child.replace('#/$defs/', '#/components/schemas/')
        : rewriteRefs(child),
    ]),
  );
}
