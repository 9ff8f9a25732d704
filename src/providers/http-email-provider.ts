/**
 * The email provider client: `EmailProvider` (activities/ports.ts) over HTTP against the email API
 * (`POST /v1/messages`), the simulator in development, a hosted provider in production.
 */
import type { EmailMessage, EmailProvider, EmailSendResult } from '../../activities/ports.js';
import { ProviderError } from '../../activities/provider-error.js';
import { callProvider, type ProviderHttpOptions } from './provider-http.js';

/** Options of {@link HttpEmailProvider}. */
export interface HttpEmailProviderOptions extends ProviderHttpOptions {
  /** Sender address; when unset the provider's default sender is used. */
  from?: string;
}

/**
 * Sends email through `POST <baseUrl>/v1/messages` with body
 * `{ from?, to, subject, text, metadata? }`, expecting 2xx `{ id: string, ... }`.
 */
export class HttpEmailProvider implements EmailProvider {
  constructor(private readonly options: HttpEmailProviderOptions) {}

  /**
   * Sends `message` once per `idempotencyKey`: the key goes out as `Idempotency-Key` on every attempt, so
   * retries (ours or Temporal's) are de-duplicated by the provider and return the same `messageId`.
   * @param idempotencyKey Derived from the work, e.g. `order-confirmation:<orderId>`; at most 255 characters.
   * @returns `{ messageId }`, the provider's id, e.g. `msg_3f2a...`.
   * @throws ProviderError `unavailable` (5xx, 408, 425, 429, timeout after `timeoutMs` ms, network error, an
   *   answer without an `id`), `conflict` (409: same key still in flight), `unauthorized` (401/403),
   *   `rejected` (other 4xx, e.g. 422 invalid address).
   */
  async send(message: EmailMessage, idempotencyKey: string): Promise<EmailSendResult> {
    const { status, body } = await callProvider(this.options, {
      provider: 'email',
      method: 'POST',
      path: '/v1/messages',
      idempotencyKey,
      body: {
        ...(this.options.from === undefined ? {} : { from: this.options.from }),
        to: message.to,
        subject: message.subject,
        text: message.text,
        ...(message.metadata === undefined ? {} : { metadata: message.metadata }),
      },
    });
    const id = (body as { id?: unknown } | undefined)?.id;
    if (typeof id !== 'string' || id === '') {
      throw new ProviderError(
        `email provider POST /v1/messages → ${status} without a message id`,
        'unavailable',
        status,
      );
    }
    return { messageId: id };
  }
}
