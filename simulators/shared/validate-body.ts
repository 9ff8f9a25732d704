/** Request-body validation for the simulators: zod issues become a 422 problem document (RFC 9457). */
import { z } from 'zod';
import { HttpProblem } from './problem.js';

/**
 * Parses `body` with `schema`.
 * @returns the parsed value.
 * @throws HttpProblem 422 `validation-failed`, detail the readable issue list, with an extension
 *   `errors: Array<{ path: string (dot-joined), message: string }>`.
 */
export function validateBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  throw new HttpProblem(422, 'validation-failed', 'Validation failed', z.prettifyError(parsed.error), {
    errors: parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
  });
}
