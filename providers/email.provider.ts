/**
 * The email provider: a hosted transactional-email API (`POST /v1/messages`). In development the simulator plays
 * it: 202 `{ id: 'msg_<hex>', status: 'queued', to, idempotencyKey }`, one `email.sent` effect per new key.
 */
import { z } from 'zod';
import { defineProvider, SimulatedRefusal } from './kit/define.js';

/** A message as the simulator stores it (`GET /v1/messages/:id`). */
interface StoredMessage {
  id: string;
  status: 'queued';
  idempotencyKey: string;
  createdAt: string;
  from?: string;
  to: string;
  subject: string;
  text: string;
  metadata?: Record<string, string>;
}

export const email = defineProvider({
  name: 'email',
  title: 'Email provider',
  limits: { callsPerSecond: 100, concurrentCallsPerWorker: 20 },
  settings: {
    from: {
      env: 'EMAIL_FROM',
      description: 'Sender address of the emails.',
      default: 'orders@shop.example',
      schema: z.email(),
      requiredInProduction: true,
    },
  },
  operations: {
    send: {
      description: 'Sends one email; replays its first answer for a repeated key.',
      method: 'POST',
      path: '/v1/messages',
      request: z.object({
        from: z.email().optional(),
        to: z.email(),
        subject: z.string().min(1).max(998),
        text: z.string(),
        metadata: z.record(z.string(), z.string()).optional(),
      }),
      response: z.object({ id: z.string().min(1), status: z.string(), to: z.string() }),
      providerId: (res) => res.id,
      withSettings: (req, settings) => (settings.from ? { from: settings.from, ...req } : req),
      simulate: ({ key, request, state, newId }) => {
        const message: StoredMessage = {
          id: newId('msg'),
          status: 'queued',
          idempotencyKey: key,
          createdAt: new Date().toISOString(),
          ...request,
        };
        state.set(message.id, message);
        return {
          status: 202,
          body: { id: message.id, status: message.status, to: message.to, idempotencyKey: key },
          effect: 'email.sent',
        };
      },
    },
  },
  reads: {
    message: {
      path: '/v1/messages/:id',
      simulate: ({ params, state }) => {
        const message = state.get(params.id ?? '');
        if (!message) throw new SimulatedRefusal(404, 'not-found', `No message with id "${params.id}".`);
        return { status: 200, body: message };
      },
    },
  },
});
