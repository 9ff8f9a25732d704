/**
 * E2E: the operators' commands of src/cli/ as processes, as an operator runs them (`npm run keys`, or
 * `node dist/src/cli/keys.js` in a container), against a real PostgreSQL database: API keys created, listed and
 * revoked (only their hash stored), the exit codes, and the `CustomerId` of an email.
 */
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiKey } from '../../src/auth/api-key.js';
import { ApiKeyStore } from '../../src/auth/api-key.store.js';
import { loadConfig } from '../../src/config/config.js';
import { customerSearchId } from '../../src/orders/workflow/customer-id.js';
import { createTestDatabase, type TestDatabase } from '../helpers/postgres.js';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db?.drop());

/** Runs `tsx <entry> <args>` with `env` on top of this process's (never rejects). */
const run = (entry: string, args: string[], env: Record<string, string | undefined> = {}) =>
  execa(process.execPath, ['--import', 'tsx', entry, ...args], {
    env: { ...process.env, ...env },
    reject: false,
    timeout: 60_000,
  });

describe('keys (src/cli/keys.ts)', () => {
  it('creates a key that authenticates, lists it, revokes it, and answers 2 for a key it does not know', async () => {
    const env = { DATABASE_URL: db.url };
    const created = await run('src/cli/keys.ts', ['create', '--client', 'acme', '--scopes', 'orders:read'], env);
    expect(created.exitCode).toBe(0);
    const key = /^(of_live_\S+)$/m.exec(created.stdout)?.[1];
    expect(key, created.stdout).toBeDefined();
    const store = new ApiKeyStore(db.prisma);
    const principal = await store.authenticate(key!);
    expect(principal).toMatchObject({ id: 'acme', scopes: ['orders:read'] });
    // Only the hash is stored.
    const row = await db.prisma.apiKey.findFirstOrThrow({ where: { clientId: 'acme' } });
    expect(row.secretHash).toBe(hashApiKey(key!));
    expect(JSON.stringify(row)).not.toContain(key!);

    // npm run keys's wrapper (scripts/keys.ts) with DATABASE_URL set reads the same database.
    const listed = await run('scripts/keys.ts', ['list', '--client', 'acme'], env);
    expect(listed.exitCode).toBe(0);
    expect(listed.stdout).toContain(row.id);
    expect(listed.stdout).toContain('active');

    const revoked = await run('src/cli/keys.ts', ['revoke', row.id], env);
    expect(revoked.exitCode).toBe(0);
    expect(await store.authenticate(key!)).toBeNull();
    const unknown = await run('src/cli/keys.ts', ['revoke', 'of_live_nosuchkey'], env);
    expect(unknown.exitCode).toBe(2);
  });

  it('refuses bad usage and a missing DATABASE_URL with exit code 1, writing nothing', async () => {
    const before = await db.prisma.apiKey.count();
    const noScopes = await run('src/cli/keys.ts', ['create', '--client', 'acme'], { DATABASE_URL: db.url });
    expect(noScopes.exitCode).toBe(1);
    expect(noScopes.stderr).toContain('create needs --client and --scopes');
    const badScope = await run('src/cli/keys.ts', ['create', '--client', 'x', '--scopes', 'root'], {
      DATABASE_URL: db.url,
    });
    expect(badScope.exitCode).toBe(1);
    const noDatabase = await run('src/cli/keys.ts', ['list'], { DATABASE_URL: '' });
    expect(noDatabase.exitCode).toBe(1);
    expect(noDatabase.stderr).toContain('DATABASE_URL is not set');
    expect(await db.prisma.apiKey.count()).toBe(before);
  });
});

describe('customer-id (src/cli/customer-id.ts)', () => {
  it("prints each email's CustomerId and its list query, and exits 2 without an email", async () => {
    const out = await run('src/cli/customer-id.ts', ['ada@example.com'], { CUSTOMER_ID_SECRET: undefined });
    expect(out.exitCode).toBe(0);
    const id = customerSearchId('ada@example.com', loadConfig({}).CUSTOMER_ID_SECRET);
    expect(out.stdout.trim()).toBe(`${id}  temporal workflow list --query 'CustomerId = "${id}"'`);
    const none = await run('src/cli/customer-id.ts', []);
    expect(none.exitCode).toBe(2);
  });
});
