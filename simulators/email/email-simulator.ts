/**
 * The email provider simulator: a hosted transactional-email API in miniature.
 *
 * - `POST /v1/messages` (effectful; `Idempotency-Key` and bearer token required) body
 *   `{ from?: string (email), to: string (email), subject: string, text: string, metadata?: Record<string, string> }`
 *   → 202 `{ id: 'msg_<hex>', status: 'queued', to, idempotencyKey }`; one `email.sent` effect per new key.
 *   An invalid body → 422 problem+json listing the issues.
 * - `GET /v1/messages/:id` → 200 the stored message, or 404 problem+json.
 *
 * Plus the `/_sim` control API of {@link startIdempotentSimulator}.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { startIdempotentSimulator, type RunningSimulator } from '../shared/idempotent-simulator.js';
import { HttpProblem } from '../shared/problem.js';
import { validateBody } from '../shared/validate-body.js';

/** Kind of the ledger effect recorded for each accepted message. */
export const EMAIL_SENT_EFFECT = 'email.sent';

/** Body of `POST /v1/messages`. */
export const sendMessageSchema = z.object({
  from: z.email().optional(),
  to: z.email(),
  subject: z.string().min(1).max(998),
  text: z.string(),
  metadata: z.record(z.string(), z.string()).optional(),
});

/** A validated `POST /v1/messages` body. */
export type SendMessageBody = z.infer<typeof sendMessageSchema>;

/** A message as the simulator stores it (the answer of `GET /v1/messages/:id`). */
export interface StoredMessage extends SendMessageBody {
  /** `msg_<24 hex>`. */
  id: string;
  status: 'queued';
  idempotencyKey: string;
  /** ISO 8601. */
  createdAt: string;
}

/** Options of {@link startEmailSimulator}. */
export interface EmailSimulatorOptions {
  /** Bearer token to enforce; when unset any bearer token is accepted. */
  apiKey?: string;
  /** Default `127.0.0.1`. */
  host?: string;
  /** Default 0 (a free port). */
  port?: number;
}

/** A running email simulator, with read access to the messages it accepted. */
export interface RunningEmailSimulator extends RunningSimulator {
  /** Accepted messages in order. Copies. */
  messages(): StoredMessage[];
}

/**
 * Starts the email provider simulator over real HTTP.
 * @throws the listen error (e.g. `EADDRINUSE`).
 */
export async function startEmailSimulator(options: EmailSimulatorOptions = {}): Promise<RunningEmailSimulator> {
  const messages = new Map<string, StoredMessage>();
  const sim = await startIdempotentSimulator({
    name: 'email',
    ...(options.apiKey === undefined ? {} : { apiKey: options.apiKey }),
    ...(options.host === undefined ? {} : { host: options.host }),
    port: options.port ?? 0,
    onReset: () => messages.clear(),
    effectful: [
      {
        method: 'POST',
        path: '/v1/messages',
        handle: ({ key, body }) => {
          const input = validateBody(sendMessageSchema, body);
          const message: StoredMessage = {
            id: `msg_${randomBytes(12).toString('hex')}`,
            status: 'queued',
            idempotencyKey: key,
            createdAt: new Date().toISOString(),
            ...input,
          };
          messages.set(message.id, message);
          return {
            status: 202,
            body: { id: message.id, status: message.status, to: message.to, idempotencyKey: key },
            effects: [EMAIL_SENT_EFFECT],
          };
        },
      },
    ],
    reads: [
      {
        path: '/v1/messages/:id',
        handle: ({ params }) => {
          const message = messages.get(params.id ?? '');
          if (!message) {
            throw new HttpProblem(404, 'not-found', 'Message not found', `No message with id "${params.id}".`);
          }
          return { status: 200, body: message };
        },
      },
    ],
  });
  return { ...sim, messages: () => [...messages.values()].map((m) => ({ ...m })) };
}
