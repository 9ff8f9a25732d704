/**
 * OpenAPI documentation of problem+json error responses (RFC 9457).
 */
import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import type { OpenAPIObject } from '@nestjs/swagger';
import { z } from 'zod';
import { defaultTitle, PROBLEM_JSON, problemDetailsSchema } from './problem-details.js';

/** Name of the ProblemDetails schema in `components.schemas`. */
const PROBLEM_COMPONENT = 'ProblemDetails';

/**
 * Documents each given status as an `application/problem+json` response referencing the `ProblemDetails`
 * component (added to the document by {@link addProblemDetailsComponent}).
 * @param responses status → description, e.g. `{ 400: 'Invalid body', 404: 'No such order' }`.
 */
export function ApiProblemResponses(responses: Record<number, string>): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ...Object.entries(responses).map(([status, description]) =>
      ApiResponse({
        status: Number(status),
        description: description || defaultTitle(Number(status)),
        content: { [PROBLEM_JSON]: { schema: { $ref: `#/components/schemas/${PROBLEM_COMPONENT}` } } },
      }),
    ),
  );
}

/** Adds the `ProblemDetails` schema (from the zod {@link problemDetailsSchema}) to an OpenAPI document. */
export function addProblemDetailsComponent(document: OpenAPIObject): OpenAPIObject {
  const { id: _id, ...schema } = z.toJSONSchema(problemDetailsSchema, { target: 'openapi-3.0' }) as Record<
    string,
    unknown
  >;
  document.components ??= {};
  document.components.schemas = { ...document.components.schemas, [PROBLEM_COMPONENT]: schema };
  return document;
}

/**
 * Responses every operation can give whatever its controller declares, added to each operation of the document
 * that does not list them: 400 for an operation with parameters or a body (validation, malformed JSON, a
 * malformed header), 413 and 415 for an operation with a body (the body parser's limit, the JSON media type), and
 * 503 for every operation (the database cannot be reached right now; `Retry-After` says when to repeat).
 * Without them a schema-driven client (or fuzzer) meets statuses the document never promised.
 */
export const GLOBAL_PROBLEM_RESPONSES = {
  always: {
    503: 'A dependency (the database) is unavailable right now: nothing changed; repeat after `Retry-After` seconds',
  },
  withInput: {
    400:
      'Invalid request: a parameter, header or the body failed validation, or the body is not JSON, is nested too ' +
      'deep or names a member twice',
  },
  withBody: {
    413: 'The body is larger than the JSON body limit (`body-too-large`)',
    415:
      'The body is not sent as `application/json` in UTF-8 (a `+json` variant such as `application/merge-patch+json` ' +
      'included), or with a Content-Encoding the API does not decode (`unsupported-media-type`)',
  },
} as const;

/** Adds {@link GLOBAL_PROBLEM_RESPONSES} (problem+json) to the operations of `document` that lack them. */
export function addGlobalProblemResponses(document: OpenAPIObject): OpenAPIObject {
  for (const item of Object.values(document.paths ?? {})) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch'] as const) {
      const operation = item[method];
      if (!operation) continue;
      const hasBody = operation.requestBody !== undefined;
      const hasInput = hasBody || (operation.parameters?.length ?? 0) > 0 || (item.parameters?.length ?? 0) > 0;
      const add = {
        ...GLOBAL_PROBLEM_RESPONSES.always,
        ...(hasInput ? GLOBAL_PROBLEM_RESPONSES.withInput : {}),
        ...(hasBody ? GLOBAL_PROBLEM_RESPONSES.withBody : {}),
      };
      for (const [status, description] of Object.entries(add)) {
        operation.responses[status] ??= {
          description,
          content: { [PROBLEM_JSON]: { schema: { $ref: `#/components/schemas/${PROBLEM_COMPONENT}` } } },
        };
      }
    }
  }
  return document;
}
