/**
 * OpenAPI documentation of authenticated routes: the bearer scheme (RFC 6750) and the 401, 403 and 429
 * problem+json answers every such route can give.
 */
import { applyDecorators } from '@nestjs/common';
import { ApiBearerAuth, ApiResponse } from '@nestjs/swagger';
import { ApiProblemResponses } from '../common/api-problem-responses.decorator.js';
import { PROBLEM_JSON } from '../common/problem-details.js';

/** Name of the security scheme in the OpenAPI document (see bootstrap's `addBearerAuth`). */
export const API_KEY_SECURITY = 'api-key';

/** Documents a controller (or route) that needs `Authorization: Bearer <API key>`. */
export function ApiAuthResponses(): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiBearerAuth(API_KEY_SECURITY),
    ApiProblemResponses({
      401: 'No API key, or a key that is unknown or revoked (`unauthorized`; see `WWW-Authenticate`)',
      403: 'The API key lacks the scope this operation needs (`forbidden`; extension `requiredScope`)',
    }),
    ApiResponse({
      status: 429,
      description: "Over the client's rate limit (`rate-limited`)",
      headers: { 'Retry-After': { description: 'Seconds to wait before retrying', schema: { type: 'integer' } } },
      content: { [PROBLEM_JSON]: { schema: { $ref: '#/components/schemas/ProblemDetails' } } },
    }),
  );
}
