/**
 * Rate limits per client with @nestjs/throttler: every authenticated request counts against its client's limit
 * (`RATE_LIMIT_MAX` requests per `RATE_LIMIT_WINDOW_MS`, all routes together, all keys of the client together).
 * Over the limit → 429 `rate-limited` problem+json with `Retry-After` (seconds). Requests without a client
 * (public routes called without a key) are not limited. Registered as APP_GUARD after the authentication guard,
 * which sets `req.apiClient`.
 *
 * The counters live in this process (the throttler's in-memory storage): with N API instances a client can reach
 * N times the limit. A shared storage (e.g. Redis) plugs in through ThrottlerModule's `storage` option.
 */
import { type ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard, type ThrottlerLimitDetail } from '@nestjs/throttler';
import type { Request } from 'express';
import { RateLimitedProblem } from './auth-problems.js';

@Injectable()
export class ClientThrottlerGuard extends ThrottlerGuard {
  /** Only authenticated requests are limited. */
  protected override async shouldSkip(context: ExecutionContext): Promise<boolean> {
    return context.getType() !== 'http' || context.switchToHttp().getRequest<Request>().apiClient === undefined;
  }

  /** The client id, not the IP address: every key of a client shares its limit. */
  protected override async getTracker(req: Record<string, unknown>): Promise<string> {
    return (req as unknown as Request).apiClient!.id;
  }

  /** One counter per client and throttler across every route (the default key is per route). */
  protected override generateKey(_context: ExecutionContext, tracker: string, throttlerName: string): string {
    return `${throttlerName}:${tracker}`;
  }

  /** @throws RateLimitedProblem 429 (the base class has already set `Retry-After`). */
  protected override async throwThrottlingException(
    _context: ExecutionContext,
    detail: ThrottlerLimitDetail,
  ): Promise<void> {
    throw new RateLimitedProblem(detail.tracker, detail.limit, detail.ttl, detail.timeToBlockExpire);
  }
}
