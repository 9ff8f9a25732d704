/**
 * Decorators that tell the OpenAPI document what an operation can refuse and who may call it. They leave marks on
 * the operation (internal `x-of-*` extensions) that the document builder (./openapi-document.ts) turns into
 * problem+json responses, one schema per problem type, and security requirements, then removes.
 *
 * The problem types, their statuses, members and headers come from their definitions (./problem-details.ts,
 * `defineProblemTypes`); a decorator only names which types an operation can answer with, and what each means there.
 * The types every operation of a kind can answer (validation, body parsing, authentication, a database outage) are
 * named by their own definitions (`appliesTo`), not here.
 */
import { DECORATORS } from '@nestjs/swagger';
import { ProblemTypes, type ProblemTypeDefinition } from './problem-details.js';

/** The internal extensions the decorators leave on an operation; the document builder reads and removes them. */
export const OPERATION_MARKS = {
  /** {@link ProblemUseMark}[]: the problem types the operation names. */
  problems: 'x-of-problems',
  /** The scope the operation needs (absent: any valid key). */
  requiredScope: 'x-of-required-scope',
  /** `true`: no API key needed. */
  public: 'x-of-public',
} as const;

/** A problem type an operation names, as stored on the operation. */
export interface ProblemUseMark {
  /** The problem type's URI. */
  type: string;
  /** What it means for this operation (default: the type's description). */
  description?: string;
  /** The status it is sent with here; needed only for `about:blank` (a type without statuses of its own). */
  status?: number;
}

/** A problem type as an operation names it: the definition, or the definition with what it means there. */
export type ProblemUse = ProblemTypeDefinition | { type: ProblemTypeDefinition; description?: string; status?: number };

/**
 * Documents the problem types an operation (or every operation of a controller) can answer with, each at its
 * statuses as its definition says, as `application/problem+json` with the type's schema.
 * @example `@ApiProblems({ type: OrderProblemTypes.OrderNotCancellable, description: 'Past the point of no return' }, ProblemTypes.NotFound)`
 */
export function ApiProblems(...uses: ProblemUse[]): MethodDecorator & ClassDecorator {
  const marks: ProblemUseMark[] = uses.map((use) =>
    'uri' in use
      ? { type: use.uri }
      : {
          type: use.type.uri,
          ...(use.description !== undefined ? { description: use.description } : {}),
          ...(use.status !== undefined ? { status: use.status } : {}),
        },
  );
  return markOperations((extensions) => ({
    ...extensions,
    [OPERATION_MARKS.problems]: [...((extensions[OPERATION_MARKS.problems] as ProblemUseMark[]) ?? []), ...marks],
  }));
}

/**
 * Sets extension metadata on an operation: on the method, or for a class on each of its methods (a class decorator
 * runs after its methods' decorators, so it merges into what they set).
 */
export function markOperations(
  update: (extensions: Record<string, unknown>) => Record<string, unknown>,
): MethodDecorator & ClassDecorator {
  const markMethod = (method: object) => {
    const current = (Reflect.getMetadata(DECORATORS.API_EXTENSION, method) as Record<string, unknown>) ?? {};
    Reflect.defineMetadata(DECORATORS.API_EXTENSION, update(current), method);
  };
  return ((target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (descriptor) {
      markMethod(descriptor.value as object);
      return descriptor;
    }
    const prototype = (target as { prototype: Record<string, unknown> }).prototype;
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const value = Object.getOwnPropertyDescriptor(prototype, name)?.value as unknown;
      if (name !== 'constructor' && typeof value === 'function') markMethod(value);
    }
    return target;
  }) as MethodDecorator & ClassDecorator;
}

/** The 503 of a workflow action (an Update or a start): Temporal or its worker unavailable (`Retry-After` from the type). */
export const TEMPORAL_UNAVAILABLE = {
  type: ProblemTypes.ServiceUnavailable,
  description: 'Temporal or the database is unreachable, or no worker took the action in time',
};

/** The OpenAPI header `Idempotent-Replayed` of a replayed answer. */
export const REPLAYED_HEADER = {
  description: '`true` when this is the stored response of an earlier request with the same Idempotency-Key',
  required: false,
  schema: { type: 'string', enum: ['true'] },
};
