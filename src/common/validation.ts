/**
 * Request validation with Standard Schemas (zod 4): the global StandardSchemaValidationPipe validates
 * every `@Body({ schema })`, `@Query({ schema })` and `@Param({ schema })`, and its exception factory turns
 * the issues into a 400 `validation-error` problem (RFC 9457) with an `errors` extension.
 */
import { StandardSchemaValidationPipe, type StandardSchemaValidationPipeOptions } from '@nestjs/common';
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

/** The global validation pipe: Standard Schema validation, transformed values, problem+json errors. */
export function createValidationPipe(): StandardSchemaValidationPipe {
  return new StandardSchemaValidationPipe({ transform: true, exceptionFactory: validationExceptionFactory });
}
