/**
 * Problem Details (RFC 9457) for the provider simulators: the error body shape, an error class handlers
 * throw, and the writer that answers with `Content-Type: application/problem+json`.
 */
import type { Response } from 'express';

/** Media type of an RFC 9457 problem document. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/** Base of the `type` URIs used by the simulators (RFC 2606 reserved `.example` domain: not dereferenceable). */
export const PROBLEM_TYPE_BASE = 'https://order-fulfilment.example/problems/';

/**
 * An RFC 9457 problem document: `{ type, title, status, detail, ...extensions }`.
 * `type` is a URI identifying the problem kind, `title` a short human summary of that kind, `status` the
 * HTTP status code (integer), `detail` an explanation specific to this occurrence.
 */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail: string;
  /** Extension members (RFC 9457 §3.2), e.g. `errors` for validation issues. */
  [extension: string]: unknown;
}

/**
 * An error a simulator route throws to answer with a problem document instead of a result. No effect is
 * recorded and no response is stored for the idempotency key when a handler throws it.
 */
export class HttpProblem extends Error {
  /**
   * @param status HTTP status code (4xx/5xx).
   * @param slug Last path segment of the problem `type` URI, e.g. `validation-failed`.
   * @param title Short summary of the problem kind.
   * @param detail Occurrence-specific explanation (becomes the message too).
   * @param extensions Extra members merged into the document (RFC 9457 §3.2).
   */
  constructor(
    readonly status: number,
    readonly slug: string,
    readonly title: string,
    readonly detail: string,
    readonly extensions: Record<string, unknown> = {},
  ) {
    super(detail);
    this.name = 'HttpProblem';
  }

  /** The RFC 9457 document of this problem. */
  toJSON(): ProblemDetails {
    return problem(this.status, this.slug, this.title, this.detail, this.extensions);
  }
}

/**
 * Builds a problem document.
 * @param status HTTP status code.
 * @param slug Suffix of the `type` URI under {@link PROBLEM_TYPE_BASE}.
 */
export function problem(
  status: number,
  slug: string,
  title: string,
  detail: string,
  extensions: Record<string, unknown> = {},
): ProblemDetails {
  return { ...extensions, type: `${PROBLEM_TYPE_BASE}${slug}`, title, status, detail };
}

/** Writes `doc` with its status and `Content-Type: application/problem+json`. */
export function sendProblem(res: Response, doc: ProblemDetails): void {
  res.status(doc.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(doc));
}
