/**
 * `npm start`'s development API keys, kept in `.data/api-keys.json` (0600) and reused: a key missing from the database
 * is registered again, a revoked one replaced. The database holds only their SHA-256.
 */
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ApiKeyEnv, hashApiKey } from '../../src/auth/api-key.js';
import { ApiKeyStore } from '../../src/auth/api-key.store.js';
import { CLIENT_SCOPES, Scope } from '../../src/auth/scopes.js';
import { createPrismaClient } from '../../src/prisma/prisma.js';
import { repoRoot } from './env.js';

export type DevApiKey = { client: string; key: string; scopes: string[] };

const API_KEYS_FILE = path.join(repoRoot(), '.data', 'api-keys.json');

async function readApiKeysFile(file = API_KEYS_FILE): Promise<DevApiKey[]> {
  const parsed = existsSync(file) ? (JSON.parse(await readFile(file, 'utf8').catch(() => '[]')) as unknown) : [];
  const entries = Array.isArray(parsed) ? (parsed as DevApiKey[]) : [];
  return entries.filter((e) => typeof e?.key === 'string' && Array.isArray(e.scopes));
}

/** `API_KEY`, else the file's first key with `scope` (or `operator`). @throws Error saying how to get one. */
export async function apiKeyFor(scope: string, file = API_KEYS_FILE): Promise<string> {
  const fromEnv = process.env.API_KEY?.trim();
  if (fromEnv) return fromEnv;
  const entry = (await readApiKeysFile(file)).find((e) => e.scopes.includes(scope) || e.scopes.includes('operator'));
  if (entry) return entry.key;
  const written = path.relative(process.cwd(), file);
  throw new Error(
    `no API key with scope ${scope}: set API_KEY, or start the stack with \`npm start\` (it writes ${written})`,
  );
}

const DEV_CLIENTS: readonly { client: string; name: string; scopes: readonly Scope[] }[] = [
  { client: 'dev-shop-a', name: 'Development shop A', scopes: CLIENT_SCOPES },
  { client: 'dev-shop-b', name: 'Development shop B', scopes: CLIENT_SCOPES },
  { client: 'dev-ops', name: 'Development operators', scopes: [Scope.Operator] },
  { client: 'dev-warehouse', name: 'Development warehouse (the simulator reports packed)', scopes: [Scope.Warehouse] },
];

/** Gives every development client a working key in the database, writes all to `file`. @returns them. */
export async function ensureDevApiKeys(options: { databaseUrl: string; file?: string }): Promise<DevApiKey[]> {
  const file = options.file ?? API_KEYS_FILE;
  const previous = await readApiKeysFile(file);
  const prisma = createPrismaClient(options.databaseUrl, 1);
  try {
    const store = new ApiKeyStore(prisma);
    const keys: DevApiKey[] = [];
    for (const { client, name, scopes } of DEV_CLIENTS) {
      const base = { clientId: client, clientName: name, scopes, env: ApiKeyEnv.Dev, label: 'npm start (development)' };
      const known = previous.find((e) => e.client === client && sameScopes(e.scopes, scopes));
      let key: string | undefined;
      if (known && (await store.authenticate(known.key))) key = known.key;
      else if (known && !(await prisma.apiKey.findFirst({ where: { secretHash: hashApiKey(known.key) } })))
        key = (await store.createKey({ ...base, key: known.key })).key; // a fresh database: registered again
      key ??= (await store.createKey(base)).key;
      keys.push({ client, key, scopes: [...scopes] });
    }
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, `${JSON.stringify(keys, null, 2)}\n`, { mode: 0o600 });
    await chmod(file, 0o600);
    return keys;
  } finally {
    await prisma.$disconnect();
  }
}

const sameScopes = (a: readonly string[], b: readonly string[]): boolean =>
  a.length === b.length && a.every((s) => b.includes(s));

/** The banner's lines: each client and key, and curl lines that use them. */
export function devApiKeysBanner(apiUrl: string, keys: readonly DevApiKey[], bold: (s: string) => string): string[] {
  const width = Math.max(...keys.map((k) => k.client.length));
  const shop = keys.find((k) => k.scopes.includes('orders:write'));
  const ops = keys.find((k) => k.scopes.includes('operator'));
  const order = '{"customer":{"email":"ada@example.com","name":"Ada"},"lines":[{"sku":"TEE-BLK-M","quantity":2}]}';
  return [
    `  API keys (${path.relative(process.cwd(), API_KEYS_FILE) || API_KEYS_FILE}; npm run keys -- list):`,
    ...keys.map((k) => `    ${k.client.padEnd(width)}  ${bold(k.key)}  ${k.scopes.join(' ')}`),
    '',
    '  Place an order:',
    `    curl -i -X POST ${apiUrl}/orders -H 'Authorization: Bearer ${shop?.key ?? '<key>'}' \\`,
    `      -H 'content-type: application/json' -H "Idempotency-Key: $(node -p 'crypto.randomUUID()')" \\`,
    `      -d '${order}'`,
    ...(ops ? [`  Every order (operator):  curl -s ${apiUrl}/orders -H 'Authorization: Bearer ${ops.key}'`] : []),
  ];
}

/**
 * Points the simulated warehouse's packed reports at `apiUrl` with the warehouse key (unless `env` sets them).
 * @throws Error without a warehouse key or when the simulator refuses.
 */
export async function configureWarehouseCallback(
  simulatorUrl: string,
  apiUrl: string,
  keys: readonly DevApiKey[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const key = keys.find((k) => k.scopes.includes(Scope.Warehouse))?.key;
  if (!key) throw new Error('no development key with scope warehouse');
  const settings = {
    ...(env.WAREHOUSE_CALLBACK_URL?.trim() ? {} : { WAREHOUSE_CALLBACK_URL: apiUrl }),
    ...(env.WAREHOUSE_CALLBACK_API_KEY?.trim() ? {} : { WAREHOUSE_CALLBACK_API_KEY: key }),
  };
  const res = await fetch(`${simulatorUrl.replace(/\/+$/, '')}/warehouse/_sim/settings`, {
    ...{ method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(settings) },
  });
  if (!res.ok) throw new Error(`the warehouse simulator refused its settings: ${res.status} ${await res.text()}`);
}
