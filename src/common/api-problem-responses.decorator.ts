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
