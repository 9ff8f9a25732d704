/**
 * Idempotency layer 1 (README, Guarantees): `Idempotency-Key` (draft-ietf-httpapi-idempotency-key-header) on
 * `POST /orders` and `PUT /inventory/:sku`, stored in `idempotency_records`, keyed by (client, key): two clients
 * never share a key space, so nothing is replayed across clients. The protocol around it (header, fingerprint,
 * replay headers) is {@link IdempotencyInterceptor}'s.
 *
 * Claim first: the record is inserted as `processing` inside the transaction that stores the resource (through
 * the {@link IdempotencyClaim} hook), with a fresh `claim_id`, so the resource and its record commit together or
 * not at all. When the response is built the record becomes `completed` with the response, and only the record
 * with that claim id: a late completion never writes into a record another request claimed after this one's
 * was removed. A later request with the same (client, key):
 * - different fingerprint → 422 `idempotency-key-reused` (whatever the record's state);
 * - `completed` → the stored status, headers and body are replayed (`Idempotent-Replayed: true`); nothing is
 *   stored and nothing is started again;
 * - `processing` → 409 `idempotency-key-in-use` with `Retry-After: 1`, unless the record is stale (older
 *   than {@link IDEMPOTENCY_STALE_AFTER_MS}: the process died between the commit and the completion); then
 *   the response is rebuilt from the stored resource, the record completed and the response replayed;
 * - expired → counts as absent: deleted (conditionally) and the request proceeds.
 * Retention: `expires_at` is NULL while `processing` (such a record is never purged, however long its request
 * runs) and `completed_at + IDEMPOTENCY_RETENTION_MS` once completed.
 * Concurrent first requests race on the primary key (client, key): exactly one transaction commits; the
 * others fail with a unique violation (P2002), roll their resource back, and are answered from the winner's
 * record (409 while it is processing, the replay once it is completed).
 * A request whose transaction fails (e.g. unknown SKU) stores nothing, the key included, so a corrected
 * request with the same key proceeds.
 */
import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { Prisma } from '../../prisma/generated/client.js';
import { ProblemException } from '../common/problem-details.js';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import type { SqlQueries } from '../../activities/ports.js';
import type { PgSqlClient } from '../database/sql-client.js';
import { PRISMA, SQL } from '../prisma/prisma.module.js';
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

/** Where the service reads the time; tests inject a controlled clock under {@link IDEMPOTENCY_CLOCK}. */
export type Clock = () => Date;

/** Optional Nest token of the service's {@link Clock} (default: the system clock). */
export const IDEMPOTENCY_CLOCK = Symbol('IDEMPOTENCY_CLOCK');

/** A `processing` record older than this, ms, belongs to a request that died after its commit. */
export const IDEMPOTENCY_STALE_AFTER_MS = 60_000;

/** `Retry-After` of the 409 answered while a key is in use, seconds. */
export const IDEMPOTENCY_RETRY_AFTER_SECONDS = 1;

/** Rows deleted per statement by {@link IdempotencyService.purgeExpired}. */
export const IDEMPOTENCY_PURGE_BATCH_SIZE = 1000;

/** How many times {@link IdempotencyService.execute} re-reads the record after losing a race. */
const MAX_ATTEMPTS = 3;

/** An idempotent request: the client that sent it, its key and its fingerprint ({@link requestFingerprint}). */
export interface IdempotentRequest {
  /** The authenticated client (`api_clients.id`): the key's namespace. */
  clientId: string;
  key: string;
  fingerprint: string;
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
export type IdempotencyClaim = (tx: SqlQueries, resourceId: string) => Promise<void>;

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
 * True for a unique-constraint violation (SQLSTATE 23505, https://www.postgresql.org/docs/current/errcodes-appendix.html):
 * Prisma's P2002; a raw query's P2010 whose driver adapter error says `UniqueConstraintViolation` (observed on Prisma
 * 6.19 with adapter-pg 7.10); or node-postgres's error with `code` 23505.
 */
export function isUniqueViolation(err: unknown): boolean {
  if (err instanceof Prisma.PrismaClientKnownRequestError) {
    const cause = (err.meta?.driverAdapterError as { cause?: { kind?: unknown } } | undefined)?.cause;
    return err.code === 'P2002' || (err.code === 'P2010' && cause?.kind === 'UniqueConstraintViolation');
  }
  return typeof err === 'object' && err !== null && (err as { code?: unknown }).code === '23505';
}

type IdempotencyRow = Prisma.IdempotencyRecordGetPayload<object>;

@Injectable()
export class IdempotencyService {
  private readonly logger = new Logger(IdempotencyService.name);

  private readonly now: Clock;

  constructor(
    @Inject(PRISMA) private readonly prisma: PrismaClient,
    @Inject(SQL) private readonly sql: PgSqlClient,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Optional() @Inject(IDEMPOTENCY_CLOCK) clock?: Clock,
  ) {
    this.now = clock ?? (() => new Date());
  }

  /**
   * Runs `handler.perform` at most once per (client, key) within the retention, or answers from the record.
   * @returns the new response (`replayed: false`) or the stored one (`replayed: true`).
   * @throws IdempotencyKeyReusedException 422 when the key was used with another payload.
   * @throws IdempotencyKeyInUseException 409 while the first request with the key is in flight.
   * @throws whatever `perform` throws (its transaction rolled back, so nothing was stored).
   */
  async execute(request: IdempotentRequest, handler: IdempotentHandler): Promise<IdempotentOutcome> {
    const { clientId, key, fingerprint } = request;
    for (let attempt = 1; ; attempt++) {
      const existing = await this.find(clientId, key);
      if (existing) {
        const outcome = await this.answerFromRecord(existing, request, handler);
        if (outcome) return outcome;
      }

      const claimId = randomUUID();
      let claimed = false;
      const claim: IdempotencyClaim = async (tx, resourceId) => {
        if (claimed) throw new Error('The idempotency claim was called twice');
        await tx.$executeRaw`
          INSERT INTO idempotency_records (client_id, key, claim_id, fingerprint, status, resource_id, created_at)
          VALUES (${clientId}, ${key}, ${claimId}::uuid, ${fingerprint}, ${IdempotencyStatus.Processing}, ${resourceId},
                  ${this.now()})`;
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
      await this.completeQuietly({ clientId, key, claimId }, response);
      return { response, replayed: false };
    }
  }

  /** The record of (`clientId`, `key`), or null: one statement on node-postgres (the hot path of every POST). */
  private async find(clientId: string, key: string): Promise<IdempotencyRow | null> {
    const rows = await this.sql.$queryRaw<IdempotencyRow[]>`
      SELECT client_id AS "clientId", key, claim_id::text AS "claimId", fingerprint, status,
             response_status AS "responseStatus", response_body AS "responseBody",
             response_headers AS "responseHeaders", resource_id AS "resourceId", created_at AS "createdAt",
             completed_at AS "completedAt", expires_at AS "expiresAt"
      FROM idempotency_records WHERE client_id = ${clientId} AND key = ${key}`;
    return rows[0] ?? null;
  }

  /**
   * Deletes completed records past their retention (`expires_at < now`; a `processing` record has no
   * `expires_at` and is never deleted), {@link IDEMPOTENCY_PURGE_BATCH_SIZE} rows per statement, rows locked by a
   * running request skipped. Idempotent; safe to run from several processes.
   * @param now reference time, default the current time.
   * @param maxBatches upper bound of statements in one call (default 100), so one call stays short.
   * @returns the number of deleted records.
   */
  async purgeExpired(now: Date = this.now(), maxBatches = 100): Promise<number> {
    let total = 0;
    for (let batch = 0; batch < maxBatches; batch++) {
      const deleted = await this.prisma.$executeRaw`
        DELETE FROM "idempotency_records"
        WHERE ("client_id", "key") IN (
          SELECT "client_id", "key" FROM "idempotency_records"
          WHERE "status" = 'completed' AND "expires_at" < ${now}
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
    const now = this.now();
    const where = { clientId: record.clientId, key: record.key };
    if (record.expiresAt !== null && record.expiresAt < now) {
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
        where: { ...where, status: IdempotencyStatus.Processing, claimId: record.claimId },
      });
      return null;
    }
    this.logger.warn(
      { ...where, resourceId: record.resourceId },
      'Completing a stale idempotency record from its stored resource',
    );
    await this.complete({ ...where, claimId: record.claimId }, response);
    // Whoever completed it first (its own request, late, or a concurrent recovery) stored the response to replay.
    const completed = await this.find(where.clientId, where.key);
    return {
      response:
        completed?.status === IdempotencyStatus.Completed && completed.claimId === record.claimId
          ? storedResponse(completed)
          : response,
      replayed: true,
    };
  }

  /**
   * Stores the response into the record of this claim and marks it `completed`, with `expires_at` = now +
   * retention. No-op when that record is completed already, or gone (purged, recovered and replaced): a
   * completion never writes into another claim's record.
   */
  private async complete(claim: ClaimRef, response: StoredResponse): Promise<void> {
    const completedAt = this.now();
    const expiresAt = new Date(completedAt.getTime() + this.config.IDEMPOTENCY_RETENTION_MS);
    // One statement (Prisma's updateMany wraps its UPDATE in a transaction of its own). An absent body stays NULL.
    const body = response.body === undefined ? null : JSON.stringify(response.body);
    await this.sql.$executeRaw`
      UPDATE idempotency_records
      SET status = ${IdempotencyStatus.Completed}, response_status = ${response.status},
          response_headers = ${JSON.stringify(response.headers)}::json, response_body = ${body}::json,
          completed_at = ${completedAt}, expires_at = ${expiresAt}
      WHERE client_id = ${claim.clientId} AND key = ${claim.key} AND claim_id = ${claim.claimId}
        AND status = ${IdempotencyStatus.Processing}`;
  }

  /**
   * {@link complete} after the resource was committed: a failure here must not fail the request (the
   * resource exists); the record stays `processing` and the stale-record recovery completes it later.
   */
  private async completeQuietly(claim: ClaimRef, response: StoredResponse): Promise<void> {
    try {
      await this.complete(claim, response);
    } catch (err) {
      this.logger.error(
        { err, clientId: claim.clientId, key: claim.key },
        `Could not complete idempotency record "${claim.key}"; retries get 409 until it is recovered after ${IDEMPOTENCY_STALE_AFTER_MS} ms`,
      );
    }
  }
}

/** The record of one claim: (client, key) and the claim's id. */
interface ClaimRef {
  clientId: string;
  key: string;
  claimId: string;
}

function storedResponse(record: IdempotencyRow): StoredResponse {
  return {
    status: record.responseStatus ?? 200,
    headers: (record.responseHeaders ?? {}) as Record<string, string>,
    body: record.responseBody,
  };
}
