/**
 * Request validation with Standard Schemas (zod 4): the global StandardSchemaValidationPipe validates
 * every `@Body({ schema })`, `@Query({ schema })` and `@Param({ schema })`, and its exception factory turns
 * the issues into a 400 `validation-error` problem (RFC 9457) with an `errors` extension.
 *
 * Members named `__proto__`, `constructor` or `prototype`: `JSON.parse` keeps each as an own property, and Nest's pipe
 * deletes such keys before validation (`stripProtoKeys`, a prototype-pollution guard), so the strict schemas never
 * saw them and a body with one was accepted (`{"customer":{"email":…,"constructor":{…}}}` → 202) while every other
 * unknown member was refused. zod itself refuses them, and every other name of Object.prototype (`toString`,
 * `hasOwnProperty`, …), like any unknown member: a strict object checks the input's own keys against its shape
 * (`keySet.has(key)`), never the inherited ones. Here, for every body schema at once, a body with one of the three
 * names anywhere is refused before Nest strips it, naming its path, with zod's own wording for an unknown member.
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

/** Member names Nest's pipe deletes before validation (its `stripProtoKeys`); refused here instead. */
export const STRIPPED_MEMBER_NAMES: readonly string[] = ['__proto__', 'constructor', 'prototype'];

/**
 * Every own member of a parsed JSON value named in {@link STRIPPED_MEMBER_NAMES}, as validation errors: `path` is the
 * dotted path of the object holding it (`''` for the root), as zod reports an unknown member; outer levels first.
 * Walks breadth first with its own queue (no recursion).
 */
export function strippedMemberErrors(value: unknown): ValidationErrorItem[] {
  const errors: ValidationErrorItem[] = [];
  const queue: Array<{ node: unknown; path: string }> = [{ node: value, path: '' }];
  for (let i = 0; i < queue.length; i++) {
    const { node, path } = queue[i]!;
    if (typeof node !== 'object' || node === null) continue;
    const isArray = Array.isArray(node);
    for (const key of Object.keys(node)) {
      if (!isArray && STRIPPED_MEMBER_NAMES.includes(key)) {
        errors.push({ path, message: `Unrecognized key: "${key}"` });
      }
      queue.push({ node: (node as Record<string, unknown>)[key], path: path ? `${path}.${key}` : key });
    }
  }
  return errors;
}

/**
 * The pipe with `__proto__`, `constructor` and `prototype` members in a body refused (400) instead of silently
 * removed; the schema's own issues are reported with them.
 */
class RequestValidationPipe extends StandardSchemaValidationPipe {
  /** @throws ProblemException 400 `validation-error` for a body with such a member, or failed validation. */
  override async transform<T>(value: T, metadata: ArgumentMetadata): Promise<T> {
    if (metadata.type !== 'body' || !metadata.schema) return super.transform(value, metadata);
    const stripped = strippedMemberErrors(value);
    if (stripped.length === 0) return super.transform(value, metadata);
    let others: ValidationErrorItem[] = [];
    try {
      await super.transform(value, metadata);
    } catch (err) {
      if (!(err instanceof ProblemException)) throw err;
      others = (err.problem.errors as ValidationErrorItem[] | undefined) ?? [];
    }
    throw ProblemException.validation([...stripped, ...others]);
  }
}

/** The global validation pipe: Standard Schema validation, transformed values, problem+json errors. */
export function createValidationPipe(): StandardSchemaValidationPipe {
  return new RequestValidationPipe({ transform: true, exceptionFactory: validationExceptionFactory });
}
