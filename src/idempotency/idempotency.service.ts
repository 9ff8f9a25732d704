/**
 * Idempotency layer 1 (README, Guarantees): `Idempotency-Key` on `POST /orders`
 * (draft-ietf-httpapi-idempotency-key-header), stored in `idempotency_records`.
 *
 * Claim first: the record is inserted as `processing` inside the transaction that stores the order (through
 * the {@link IdempotencyClaim} hook), so the order and its record commit together or not at all. When the
 * response is built (after the workflow start attempt) the record becomes `completed` with the response.
 * A later request with the same (scope, key):
 * - different payload fingerprint → 422 `idempotency-key-reused` (whatever the record's state);
 * - `completed` → the stored status, headers and body are replayed (`Idempotent-Replayed: true`); nothing is
 *   stored and no workflow is started again;
 * - `processing` → 409 `idempotency-key-in-use` with `Retry-After: 1`, unless the record is stale (older
 *   than {@link IDEMPOTENCY_STALE_AFTER_MS}: the process died between the commit and the completion); then
 *   the response is rebuilt from the stored resource, the record completed and the response replayed;
 * - expired (`expires_at` < now) → counts as absent: deleted (conditionally) and the request proceeds.
 * Concurrent first requests race on the primary key (scope, key): exactly one transaction commits; the
 * others fail with a unique violation (P2002), roll their order back, and are answered from the winner's
 * record (409 while it is processing, the replay once it is completed).
 * A request whose transaction fails (e.g. unknown SKU) stores nothing, the key included, so a corrected
 * request with the same key proceeds.
 *
 * The scope is `anonymous` for every request until the API authenticates clients; it will then be the
 * client identity, so two clients never share a key space.
 */
import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { Prisma } from '../../prisma/generated/client.js';
import { ProblemException } from '../common/problem-details.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { PRISMA } from '../prisma/prisma.module.js';
import type { PrismaClient } from '../prisma/prisma.js';
import { IdempotencyProblemType } from './idempotency-key.js';

/** States of an idempotency record (the CHECK constraint of `idempotency_records.status`). */
export const IdempotencyStatus = {
  /** Claimed together with the resource; the response is not stored yet. */
  Processing: 'processing',
  /** The response is stored and is replayed for retries. */
  Completed: 'completed',
} as const;
export type IdempotencyStatus = (typeof IdempotencyStatus)[keyof typeof IdempotencyStatus];

/** Scope of every key until requests are authenticated. */
export const ANONYMOUS_SCOPE = 'anonymous';

/** A `processing` record older than this, ms, belongs to a request that died after its commit. */
export const IDEMPOTENCY_STALE_AFTER_MS = 60_000;

/** `Retry-After` of the 409 answered while a key is in use, seconds. */
export const IDEMPOTENCY_RETRY_AFTER_SECONDS = 1;

/** Rows deleted per statement by {@link IdempotencyService.purgeExpired}. */
export const IDEMPOTENCY_PURGE_BATCH_SIZE = 1000;

/** How many times {@link IdempotencyService.execute} re-reads the record after losing a race. */
const MAX_ATTEMPTS = 3;

/** An idempotent request: its key, the payload fingerprint ({@link requestFingerprint}) and the scope. */
export interface IdempotentRequest {
  key: string;
  fingerprint: string;
  /** Default {@link ANONYMOUS_SCOPE}. */
  scope?: string;
}

/** A response as stored and replayed: status, headers (at least `Location`) and JSON body. */
export interface StoredResponse {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

/** What {@link IdempotencyService.execute} answers: the response and whether it is a replay. */
export interface IdempotentOutcome {
  response: StoredResponse;
  replayed: boolean;
}

/**
 * Inserts the `processing` record. Call it exactly once, inside the transaction that creates the resource
 * and before the resource's own writes (claim first), with the id of the resource being created.
 * @throws Prisma.PrismaClientKnownRequestError P2002 when a record for the key exists or another transaction
 *   holding the key commits; let it propagate so the transaction rolls back.
 */
export type IdempotencyClaim = (tx: Prisma.TransactionClient, resourceId: string) => Promise<void>;

/** The request-specific parts of {@link IdempotencyService.execute}. */
export interface IdempotentHandler {
  /** Creates the resource, calling `claim` inside its transaction, and returns the response to store. */
  perform(claim: IdempotencyClaim): Promise<StoredResponse>;
  /** Rebuilds the response from a stored resource (stale-record recovery); null if the resource is gone. */
  recover(resourceId: string): Promise<StoredResponse | null>;
}

/** 409 `idempotency-key-in-use`; the controller adds `Retry-After: {@link retryAfterSeconds}`. */
export class IdempotencyKeyInUseException extends ProblemException {
  readonly retryAfterSeconds = IDEMPOTENCY_RETRY_AFTER_SECONDS;

  constructor(key: string) {
    super({
      status: 409,
      type: IdempotencyProblemType.KeyInUse,
      title: 'Idempotency key in use',
      detail: `A request with Idempotency-Key "${key}" is still being processed; retry in ${IDEMPOTENCY_RETRY_AFTER_SECONDS} s to get its response`,
    });
  }
}

/** 422 `idempotency-key-reused`: the key belongs to a request with a different payload. */
export class IdempotencyKeyReusedException extends ProblemException {
  constructor(key: string) {
    super({
      status: 422,
      type: IdempotencyProblemType.KeyReused,
      title: 'Idempotency key reused with a different payload',
      detail: `Idempotency-Key "${key}" was already used for a request with a different body; use a new key for a new request`,
    });
  }
}

/**
 * Canonical JSON of a value: object keys sorted (by UTF-16 code units, as in RFC 8785), no whitespace,
 * arrays in order, `undefined` members left out, numbers and strings as `JSON.stringify` writes them.
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  });
}

/** SHA-256 (lower-case hex) of {@link canonicalJson} of the request body as the client sent it. */
export function requestFingerprint(body: unknown): string {
  return createHash('sha256')
    .update(canonicalJson(body ?? null), 'utf8')
    .digest('hex');
}

/** True for Prisma's unique-constraint violation (P2002). */
export function isUniqueViolation(err: unknown): boolean {
  return err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002';
}

type IdempotencyRow = Prisma.IdempotencyRecordGetPayload<object>;

@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);

  constructor(
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
  ) {}

  /**
   * Runs `handler.perform` at most once per (scope, key) within the retention, or answers from the record.
   * @returns the new response (`replayed: false`) or the stored one (`replayed: true`).
   * @throws IdempotencyKeyReusedException 422 when the key was used with another payload.
   * @throws IdempotencyKeyInUseException 409 while the first request with the key is in flight.
   * @throws whatever `perform` throws (its transaction rolled back, so nothing was stored).
   */
  async execute(request: IdempotentRequest, handler: IdempotentHandler): Promise<IdempotentOutcome> {
    const scope = request.scope ?? ANONYMOUS_SCOPE;
    const { key, fingerprint } = request;
    for (let attempt = 1; ; attempt++) {
      const existing = await this.prisma.idempotencyRecord.findUnique({ where: { scope_key: { scope, key } } });
      if (existing) {
        const outcome = await this.answerFromRecord(existing, request, handler);
        if (outcome) return outcome;
      }

      let claimed = false;
      const claim: IdempotencyClaim = async (tx, resourceId) => {
        if (claimed) throw new Error('The idempotency claim was called twice');
        const createdAt = new Date();
        await tx.idempotencyRecord.create({
          data: {
            scope,
            key,
            fingerprint,
            status: IdempotencyStatus.Processing,
            resourceId,
            createdAt,
            expiresAt: new Date(createdAt.getTime() + this.config.IDEMPOTENCY_RETENTION_MS),
          },
        });
        claimed = true;
      };

      let response: StoredResponse;
      try {
        response = await handler.perform(claim);
      } catch (err) {
        // Lost the race for the key: the winner's record decides (409, replay or 422).
        if (isUniqueViolation(err) && !claimed && attempt < MAX_ATTEMPTS) continue;
        throw err;
      }
      if (!claimed) throw new Error('IdempotentHandler.perform did not call the idempotency claim');
      await this.completeQuietly(scope, key, response);
      return { response, replayed: false };
    }
  }

  /**
   * Deletes records past their retention (`expires_at < now`), {@link IDEMPOTENCY_PURGE_BATCH_SIZE} rows per
   * statement, rows locked by a running request skipped. Idempotent; safe to run from several processes.
   * @param now reference time, default the current time.
   * @param maxBatches upper bound of statements in one call (default 100), so one call stays short.
   * @returns the number of deleted records.
   */
  async purgeExpired(now: Date = new Date(), maxBatches = 100): Promise<number> {
    let total = 0;
    for (let batch = 0; batch < maxBatches; batch++) {
      const deleted = await this.prisma.$executeRaw`
        DELETE FROM "idempotency_records"
        WHERE ("scope", "key") IN (
          SELECT "scope", "key" FROM "idempotency_records"
          WHERE "expires_at" < ${now}
          ORDER BY "expires_at"
          LIMIT ${IDEMPOTENCY_PURGE_BATCH_SIZE}
          FOR UPDATE SKIP LOCKED
        )`;
      total += deleted;
      if (deleted < IDEMPOTENCY_PURGE_BATCH_SIZE) break;
    }
    return total;
  }

  /**
   * Answers a request from an existing record, or returns null when the record counts as absent (it expired,
   * or it is a stale `processing` record whose resource no longer exists) and was deleted.
   */
  private async answerFromRecord(
    record: IdempotencyRow,
    request: IdempotentRequest,
    handler: IdempotentHandler,
  ): Promise<IdempotentOutcome | null> {
    const now = new Date();
    const where = { scope: record.scope, key: record.key };
    if (record.expiresAt < now) {
      // Conditional: a fresh record made by a concurrent request after this one expired is kept.
      await this.prisma.idempotencyRecord.deleteMany({ where: { ...where, expiresAt: { lt: now } } });
      return null;
    }
    if (record.fingerprint !== request.fingerprint) throw new IdempotencyKeyReusedException(record.key);
    if (record.status === IdempotencyStatus.Completed) return { response: storedResponse(record), replayed: true };

    const stale = now.getTime() - record.createdAt.getTime() > IDEMPOTENCY_STALE_AFTER_MS;
    if (!stale) throw new IdempotencyKeyInUseException(record.key);

    const response = record.resourceId ? await handler.recover(record.resourceId) : null;
    if (!response) {
      // The record and its resource commit together, so only a deleted resource gets here: nothing remains
      // that the key protects, so the key counts as unused.
      this.logger.warn(where, 'Stale idempotency record without its resource; deleting it');
      await this.prisma.idempotencyRecord.deleteMany({
        where: { ...where, status: IdempotencyStatus.Processing, createdAt: record.createdAt },
      });
      return null;
    }
    this.logger.warn(
      { ...where, resourceId: record.resourceId },
      'Completing a stale idempotency record from its stored resource',
    );
    await this.complete(record.scope, record.key, response);
    // Whoever completed it first (this request or a concurrent recovery) stored the response to replay.
    const completed = await this.prisma.idempotencyRecord.findUnique({ where: { scope_key: where } });
    return {
      response: completed?.status === IdempotencyStatus.Completed ? storedResponse(completed) : response,
      replayed: true,
    };
  }

  /** Stores the response of a `processing` record and marks it `completed` (no-op if already completed). */
  private async complete(scope: string, key: string, response: StoredResponse): Promise<void> {
    await this.prisma.idempotencyRecord.updateMany({
      where: { scope, key, status: IdempotencyStatus.Processing },
      data: {
        status: IdempotencyStatus.Completed,
        responseStatus: response.status,
        responseHeaders: response.headers,
        responseBody: response.body as Prisma.InputJsonValue,
        completedAt: new Date(),
      },
    });
  }

  /**
   * {@link complete} after the resource was committed: a failure here must not fail the request (the
   * resource exists); the record stays `processing` and the stale-record recovery completes it later.
   */
  private async completeQuietly(scope: string, key: string, response: StoredResponse): Promise<void> {
    try {
      await this.complete(scope, key, response);
    } catch (err) {
      this.logger.error(
        { err, scope, key },
        `Could not complete idempotency record "${key}"; retries get 409 until it is recovered after ${IDEMPOTENCY_STALE_AFTER_MS} ms`,
      );
    }
  }
}

function storedResponse(record: IdempotencyRow): StoredResponse {
  return {
    status: record.responseStatus ?? 200,
    headers: (record.responseHeaders ?? {}) as Record<string, string>,
    body: record.responseBody,
  };
}
