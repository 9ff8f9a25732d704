/**
 * The error provider clients throw, and how a failed call is classified. A value (a class), so it lives
 * here and not in ports.ts, which holds only types.
 */

/**
 * How a provider call failed:
 * - `unavailable`: 5xx, 408, 425, 429, timeout or network error. Transient: retry.
 * - `conflict`: 409, the same idempotency key is still in flight at the provider. Transient: retry.
 * - `unauthorized`: 401/403. Permanent until credentials change.
 * - `rejected`: any other 4xx (invalid request). Permanent.
 */
export type ProviderFailureKind = 'unavailable' | 'conflict' | 'unauthorized' | 'rejected';

/**
 * Whether a failed call may have produced its effect at the provider:
 * - `false` (definitely not performed): the provider answered with a status that says it did not act on the
 *   request: any 4xx but 409, and 503 (RFC 9110 §15.6.4: the server is "currently unable to handle the
 *   request"); or the request was never sent: the URL is invalid, its host name did not resolve (DNS), the
 *   connection was refused or could not be opened, or the request could not be built (a body that cannot be
 *   serialised as JSON, a path parameter it lacks).
 * - `true` (outcome unknown): a timeout or a connection lost after the request went out, 409 (the same key is
 *   being processed by the provider right now), 500/502/504 and other 5xx (a gateway may have forwarded it),
 *   or a 2xx whose body could not be read.
 * A retry with the same Idempotency-Key settles an unknown outcome: the provider replays the effect if it
 * happened and performs it if not.
 */
export function mayHaveActed(status: number | undefined, kind: ProviderFailureKind, notSent = false): boolean {
  if (notSent) return false;
  if (status === undefined) return true;
  if (status >= 200 && status < 300) return true;
  if (status === 409) return true;
  if (status >= 400 && status < 500) return false;
  if (status === 503) return false;
  return kind !== 'rejected';
}

/** Error thrown by provider clients. `status` is the HTTP status when there was a response. */
export class ProviderError extends Error {
  /** See {@link mayHaveActed}. */
  readonly mayHaveActed: boolean;
  /** The `type` of the provider's problem document (RFC 9457), when it answered with one. */
  readonly problemType?: string;
  /**
   * The provider's problem document (RFC 9457: `type`, `title`, `detail` and extension members such as a payment's
   * `declineCode`), when it answered with one: what a step's business refusal reads (activities/kit/define.ts).
   */
  readonly problem?: Readonly<Record<string, unknown>>;

  /**
   * @param message names the provider, method, path and status.
   * @param kind the failure's class (see {@link ProviderFailureKind}).
   * @param status HTTP status, when there was a response.
   * @param options.notSent true when the request was never sent, so the provider cannot have acted (see
   *   {@link mayHaveActed}).
   * @param options.problem the provider's problem document, when it answered with one.
   */
  constructor(
    message: string,
    readonly kind: ProviderFailureKind,
    readonly status?: number,
    options: { notSent?: boolean; problem?: Readonly<Record<string, unknown>> } = {},
  ) {
    super(message);
    this.name = 'ProviderError';
    this.mayHaveActed = mayHaveActed(status, kind, options.notSent ?? false);
    if (options.problem) {
      this.problem = options.problem;
      if (typeof options.problem.type === 'string') this.problemType = options.problem.type;
    }
  }
}
