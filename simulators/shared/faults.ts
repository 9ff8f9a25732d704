/**
 * The faults a simulated provider can be told to meet (`POST /<name>/_sim/faults`, or `injectFault` in-process):
 * their modes, the validated spec, and a queued fault. See idempotent-simulator.ts for how requests consume them.
 */
import { z } from 'zod';

/** Fault modes: what the next matching effectful request(s) meet. */
export const FaultMode = {
  /** 503 problem+json, no effect. */
  Unavailable: 'unavailable',
  /** Wait `delayMs`, then handle normally (the effect happens even if the client has given up). */
  Slow: 'slow',
  /** Perform the effect and store the response, then destroy the socket without answering. */
  DropResponse: 'drop-response',
  /** 422 problem+json, no effect. */
  Reject: 'reject',
  /** 401 problem+json, no effect. */
  Unauthorized: 'unauthorized',
} as const;
/** One of {@link FaultMode}'s values. */
export type FaultMode = (typeof FaultMode)[keyof typeof FaultMode];

/** Default wait of a `slow` fault, ms. */
export const DEFAULT_SLOW_DELAY_MS = 5_000;

/** Body of `POST /_sim/faults`, validated. */
export const faultSpecSchema = z.object({
  mode: z.enum(['unavailable', 'slow', 'drop-response', 'reject', 'unauthorized']),
  /** How many matching requests consume the fault. Default 1. */
  times: z.number().int().min(1).max(10_000).optional(),
  /** Wait of a `slow` fault, ms. Default 5000. */
  delayMs: z.number().int().min(0).max(600_000).optional(),
  /** Only requests whose `Idempotency-Key` starts with this prefix match. */
  keyPrefix: z.string().min(1).optional(),
});

/** A fault to queue: `{ mode, times?: number (default 1), delayMs?: number ms (default 5000), keyPrefix? }`. */
export type FaultSpec = z.infer<typeof faultSpecSchema>;

/** A queued fault and how many more matching requests will consume it. */
export interface QueuedFault {
  id: string;
  mode: FaultMode;
  /** Matching requests still to consume this fault (> 0 while queued). */
  remaining: number;
  /** Wait of a `slow` fault, ms. */
  delayMs: number;
  keyPrefix?: string;
}
