/**
 * The operators' API key command (USAGE; docs/api.md): `node dist/src/cli/keys.js create|list|revoke` in a container,
 * `npm run keys -- ...` in a checkout (scripts/keys.ts: there `DATABASE_URL` defaults to `npm start`'s embedded
 * database). Keys live in `DATABASE_URL`'s database; only a key's SHA-256 is stored. Exit 1 on a usage or database
 * error or without `DATABASE_URL`, 2 when `revoke` finds no key.
 */
import { parseArgs } from 'node:util';
import { ApiKeyEnv } from '../auth/api-key.js';
import { ApiKeyStore } from '../auth/api-key.store.js';
import { parseScopes } from '../auth/scopes.js';
import { createPrismaClient } from '../prisma/prisma.js';

const USAGE = `usage:
  npm run keys -- create --client <id> --scopes <orders:write,orders:read,...> [--name <name>] [--label <text>] [--dev]
  npm run keys -- list [--client <id>] [--all]
  npm run keys -- revoke <key id | key>`;

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      client: { type: 'string' },
      scopes: { type: 'string' },
      name: { type: 'string' },
      label: { type: 'string' },
      dev: { type: 'boolean', default: false },
      all: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const [command, ...rest] = positionals;
  if (values.help || command === undefined) {
    console.log(USAGE);
    return values.help ? 0 : 1;
  }

  const databaseUrl = process.env.DATABASE_URL?.trim();
  if (!databaseUrl) throw new Error('DATABASE_URL is not set: it names the database that holds the keys');
  const prisma = createPrismaClient(databaseUrl, 1);
  const store = new ApiKeyStore(prisma);
  try {
    switch (command) {
      case 'create': {
        if (!values.client || !values.scopes) throw new Error(`create needs --client and --scopes\n${USAGE}`);
        const created = await store.createKey({
          clientId: values.client,
          clientName: values.name,
          scopes: parseScopes(values.scopes),
          label: values.label,
          env: values.dev ? ApiKeyEnv.Dev : ApiKeyEnv.Live,
        });
        console.log(`Created key ${created.id} for client ${created.clientId} (${created.scopes.join(' ')}).`);
        console.log(`The key (shown only now; store it safely):\n${created.key}`);
        return 0;
      }
      case 'list': {
        const keys = await store.listKeys({ clientId: values.client, includeRevoked: values.all });
        console.table(
          keys.map((k) => ({
            key: k.id,
            client: k.clientId,
            scopes: k.scopes.join(' '),
            created: k.createdAt.toISOString(),
            'last used': k.lastUsedAt?.toISOString() ?? '-',
            state: k.revokedAt ? `revoked ${k.revokedAt.toISOString()}` : 'active',
            label: k.label ?? '',
          })),
        );
        return 0;
      }
      case 'revoke': {
        if (rest.length !== 1) throw new Error(`revoke needs one key id\n${USAGE}`);
        const revoked = await store.revokeKey(rest[0]!);
        if (!revoked) {
          console.error(`No key ${rest[0]}.`);
          return 2;
        }
        console.log(`Revoked ${revoked.id} (client ${revoked.clientId}) at ${revoked.revokedAt!.toISOString()}.`);
        return 0;
      }
      default:
        throw new Error(`unknown command "${command}"\n${USAGE}`);
    }
  } finally {
    await prisma.$disconnect();
  }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    console.error(`keys: ${error instanceof Error ? error.message : String(error)}`);
    process.exit(1);
  },
);
