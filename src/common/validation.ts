/**
 * Request validation with Standard Schemas (zod 4): the global StandardSchemaValidationPipe validates
 * every `@Body({ schema })`, `@Query({ schema })` and `@Param({ schema })`, and its exception factory turns
 * the issues into a 400 `validation-error` problem (RFC 9457) with an `errors` extension.
 *
 * `__proto__` members: `JSON.parse` keeps `"__proto__"` as an own property, and Nest's pipe deletes such keys before
 * validation (a prototype-pollution guard), so a body with one was accepted while every other unknown member was
 * rejected. Here a body with a `__proto__` member anywhere is refused like any unknown member, naming its path.
 */
import {
  type ArgumentMetadata,
  StandardSchemaValidationPipe,
  type StandardSchemaValidationPipeOptions,
} from '@nestjs/common';
import { ProblemException, type ValidationErrorItem } from './problem-details.js';

/**
 * A Standard Schema issue (`{ message, path? }`), typed through Nest's pipe options so that
 * `@standard-schema/spec` need not be a direct dependency.
 */
export type SchemaIssue = Parameters<NonNullable<StandardSchemaValidationPipeOptions['exceptionFactory']>>[0][number];

/** Dotted path of an issue: `['lines', 0, 'quantity']` → `lines.0.quantity`; the root is `''`. */
export function issuePath(issue: SchemaIssue): string {
  return (issue.path ?? [])
    .map((segment) => String(typeof segment === 'object' && segment !== null ? segment.key : segment))
    .join('.');
}

/** Maps Standard Schema issues to the `errors` extension items. */
export function issuesToErrors(issues: readonly SchemaIssue[]): ValidationErrorItem[] {
  return issues.map((issue) => ({ path: issuePath(issue), message: issue.message }));
}

/**
 * The `exceptionFactory` of the global validation pipe.
 * @returns a 400 {@link ProblemException} of type `validation-error` listing every issue.
 */
export function validationExceptionFactory(issues: readonly SchemaIssue[]): ProblemException {
  return ProblemException.validation(issuesToErrors(issues));
}

/** Dotted paths of every own `__proto__` member in a parsed JSON value (`''` for the root object). */
export function protoKeyPaths(value: unknown, path: string[] = [], found: string[] = []): string[] {
  if (typeof value !== 'object' || value === null) return found;
  if (!Array.isArray(value) && Object.hasOwn(value, '__proto__')) found.push(path.join('.'));
  for (const [key, child] of Object.entries(value)) protoKeyPaths(child, [...path, key], found);
  return found;
}

/** The pipe with `__proto__` members in a body refused (400) instead of silently removed. */
class RequestValidationPipe extends StandardSchemaValidationPipe {
  /** @throws ProblemException 400 `validation-error` for a body with a `__proto__` member, or failed validation. */
  override async transform<T>(value: T, metadata: ArgumentMetadata): Promise<T> {
    if (metadata.type === 'body' && metadata.schema) {
      const paths = protoKeyPaths(value);
      if (paths.length > 0) {
        throw ProblemException.validation(paths.map((path) => ({ path, message: 'Unrecognized key: "__proto__"' })));
      }
    }
    return super.transform(value, metadata);
  }
}

/** The global validation pipe: Standard Schema validation, transformed values, problem+json errors. */
export function createValidationPipe(): StandardSchemaValidationPipe {
  return new RequestValidationPipe({ transform: true, exceptionFactory: validationExceptionFactory });
}
