/**
 * `.data/api-keys.json`: the development API keys `npm start` makes, as
 * `[{ "client": "dev-shop-a", "key": "of_dev_…", "scopes": ["orders:write", …] }]`. The demo, the benchmark and
 * the README's curl lines read it. Plain file helpers with no database access, so scripts that only call the API
 * (demo, bench) stay light; {@link ensureDevApiKeys} in dev-api-keys.ts writes it.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { repoRoot } from './env.js';

/** One entry of the file. */
export interface DevApiKey {
  /** Client id (`api_clients.id`). */
  client: string;
  /** The whole key, to send as `Authorization: Bearer <key>`. */
  key: string;
  scopes: string[];
}

/** Where `npm start` writes the development keys. */
export const API_KEYS_FILE = path.join(repoRoot(), '.data', 'api-keys.json');

/** The entries of `file`, or `[]` when it does not exist or is not a list of entries. */
export async function readApiKeysFile(file = API_KEYS_FILE): Promise<DevApiKey[]> {
  if (!existsSync(file)) return [];
  try {
    const parsed = JSON.parse(await readFile(file, 'utf8')) as unknown;
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (e): e is DevApiKey =>
        typeof e === 'object' &&
        e !== null &&
        typeof (e as DevApiKey).client === 'string' &&
        typeof (e as DevApiKey).key === 'string' &&
        Array.isArray((e as DevApiKey).scopes),
    );
  } catch {
    return [];
  }
}

/**
 * The key a script should use for `scope`: `API_KEY` from the environment when set, else the first key of the
 * file that has `scope` (or `operator`).
 * @throws Error saying how to get one when there is none.
 */
export async function apiKeyFor(scope: string, file = API_KEYS_FILE): Promise<string> {
  const fromEnv = process.env.API_KEY?.trim();
  if (fromEnv) return fromEnv;
  const entry = (await readApiKeysFile(file)).find((e) => e.scopes.includes(scope) || e.scopes.includes('operator'));
  if (!entry) {
    throw new Error(
      `no API key with scope ${scope}: set API_KEY, or start the stack with \`npm start\` (it writes ${path.relative(process.cwd(), file)})`,
    );
  }
  return entry.key;
}
