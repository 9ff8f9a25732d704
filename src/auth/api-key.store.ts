/**
 * API clients and keys in PostgreSQL (`api_clients`, `api_keys`): creating, listing, revoking and verifying keys.
 * A plain class over a PrismaClient, so the API (through AuthModule), the keys CLI (`npm run keys`), `npm start`'s
 * development keys and the tests share it.
 */
import type { PrismaClient } from '../prisma/prisma.js';
import {
  ApiKeyEnv,
  apiKeyId,
  apiKeyMatches,
  CLIENT_ID_PATTERN,
  generateApiKey,
  hashApiKey,
  isApiKeyFormat,
} from './api-key.js';
import { isScope, type Scope } from './scopes.js';

/** The authenticated caller of a request, as the API sees it (`req.apiClient`). */
export interface AuthenticatedClient {
  /** Client id (`api_clients.id`): owner of the orders it places; the `client` of logs and metrics. */
  id: string;
  /** Id of the key used (`of_live_…` prefix), for logs; never the key itself. */
  keyId: string;
  /** The key's scopes. */
  scopes: readonly Scope[];
}

/** Options of {@link ApiKeyStore.createKey}. */
export interface CreateApiKeyOptions {
  /** Client id; the client is created when it does not exist yet. */
  clientId: string;
  /** Display name of a new client (default: the id). Ignored for an existing client. */
  clientName?: string;
  scopes: readonly Scope[];
  /** Free text shown by `list`, e.g. who holds the key. */
  label?: string;
  /** Default `live`. */
  env?: ApiKeyEnv;
  /**
   * Store this exact key instead of generating one (well-formed, not yet stored): `npm start` re-registers the
   * development keys of `.data/api-keys.json` in a fresh database. Never needed in production.
   */
  key?: string;
}

/** A key as `list` shows it: everything but the secret. */
export interface ApiKeyInfo {
  id: string;
  clientId: string;
  scopes: Scope[];
  label: string | null;
  createdAt: Date;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}

/** A successful {@link ApiKeyStore.createKey}: the key to hand out (shown once) and what is stored. */
export interface CreatedApiKey extends ApiKeyInfo {
  key: string;
}

/** How often `last_used_at` is written for one key at most, ms. */
export const LAST_USED_RESOLUTION_MS = 60_000;

/** Prisma's unique-constraint violation. */
const UNIQUE_VIOLATION = 'P2002';

export class ApiKeyStore {
  constructor(private readonly prisma: PrismaClient) {}

  /**
   * Creates a key for `clientId` (and the client, when new).
   * @throws Error for an invalid client id, no or unknown scopes, a malformed or already stored `key`.
   */
  async createKey(options: CreateApiKeyOptions): Promise<CreatedApiKey> {
    if (!CLIENT_ID_PATTERN.test(options.clientId)) {
      throw new Error(
        `Invalid client id "${options.clientId}": 1-63 of a-z 0-9 . _ -, starting with a letter or digit`,
      );
    }
    if (options.scopes.length === 0) throw new Error('A key needs at least one scope');
    const unknown = options.scopes.filter((s) => !isScope(s));
    if (unknown.length > 0) throw new Error(`Unknown scope(s): ${unknown.join(', ')}`);

    for (let attempt = 1; ; attempt++) {
      let generated: { key: string; id: string; hash: string };
      if (options.key !== undefined) {
        const id = apiKeyId(options.key);
        if (id === null) throw new Error('The given key is not a well-formed API key');
        generated = { key: options.key, id, hash: hashApiKey(options.key) };
      } else {
        generated = generateApiKey(options.env ?? ApiKeyEnv.Live);
      }
      try {
        const row = await this.prisma.$transaction(async (tx) => {
          await tx.apiClient.upsert({
            where: { id: options.clientId },
            create: { id: options.clientId, name: options.clientName ?? options.clientId },
            update: {},
          });
          return tx.apiKey.create({
            data: {
              id: generated.id,
              clientId: options.clientId,
              secretHash: generated.hash,
              scopes: [...new Set(options.scopes)],
              label: options.label ?? null,
            },
          });
        });
        return { ...toInfo(row), key: generated.key };
      } catch (err) {
        const duplicate = (err as { code?: string }).code === UNIQUE_VIOLATION;
        // A key id collision (8 random base64url characters: 48 bits) is astronomically rare; draw again.
        if (duplicate && options.key === undefined && attempt < 3) continue;
        if (duplicate) throw new Error(`A key with id ${generated.id} is already stored`);
        throw err;
      }
    }
  }

  /** Keys, newest first; revoked ones only with `includeRevoked`. */
  async listKeys(filter: { clientId?: string; includeRevoked?: boolean } = {}): Promise<ApiKeyInfo[]> {
    const rows = await this.prisma.apiKey.findMany({
      where: {
        ...(filter.clientId === undefined ? {} : { clientId: filter.clientId }),
        ...(filter.includeRevoked ? {} : { revokedAt: null }),
      },
      orderBy: [{ createdAt: 'desc' }, { id: 'asc' }],
    });
    return rows.map(toInfo);
  }

  /**
   * Revokes the key with this id (or the key itself, given whole). Idempotent: revoking a revoked key keeps its
   * first revocation time.
   * @returns the key's info, or null when there is no such key.
   */
  async revokeKey(idOrKey: string): Promise<ApiKeyInfo | null> {
    const id = apiKeyId(idOrKey) ?? idOrKey;
    await this.prisma.apiKey.updateMany({ where: { id, revokedAt: null }, data: { revokedAt: new Date() } });
    const row = await this.prisma.apiKey.findUnique({ where: { id } });
    return row ? toInfo(row) : null;
  }

  /**
   * Verifies a presented key: well-formed, stored (lookup by key id, constant-time hash comparison) and not
   * revoked. Records `last_used_at` at most every {@link LAST_USED_RESOLUTION_MS} (without waiting for it).
   * @returns the caller, or null when the key is not valid (whatever the reason: the answer is the same 401).
   */
  async authenticate(key: string): Promise<AuthenticatedClient | null> {
    if (!isApiKeyFormat(key)) return null;
    const id = apiKeyId(key)!;
    const row = await this.prisma.apiKey.findUnique({ where: { id } });
    if (!row || row.revokedAt !== null || !apiKeyMatches(key, row.secretHash)) return null;
    const now = Date.now();
    if (row.lastUsedAt === null || now - row.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS) {
      void this.prisma.apiKey
        .updateMany({
          where: { id, OR: [{ lastUsedAt: null }, { lastUsedAt: { lt: new Date(now - LAST_USED_RESOLUTION_MS) } }] },
          data: { lastUsedAt: new Date(now) },
        })
        .catch(() => undefined);
    }
    return { id: row.clientId, keyId: row.id, scopes: row.scopes.filter(isScope) };
  }
}

function toInfo(row: {
  id: string;
  clientId: string;
  scopes: string[];
  label: string | null;
  createdAt: Date;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
}): ApiKeyInfo {
  return {
    id: row.id,
    clientId: row.clientId,
    scopes: row.scopes.filter(isScope),
    label: row.label,
    createdAt: row.createdAt,
    revokedAt: row.revokedAt,
    lastUsedAt: row.lastUsedAt,
  };
}
