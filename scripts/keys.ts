/**
 * `npm run keys -- create|list|revoke` (USAGE; docs/api.md): API keys in `DATABASE_URL` (default: `npm start`'s
 * embedded database); only a key's SHA-256 is stored. Exit 1 on a usage or database error, 2 when `revoke` finds none.
 */
import { parseArgs } from 'node:util';
import { ApiKeyEnv } from '../src/auth/api-key.js';
import { ApiKeyStore } from '../src/auth/api-key.store.js';
import { parseScopes } from '../src/auth/scopes.js';
import { createPrismaClient } from '../src/prisma/prisma.js';
import { runMain } from './lib/env.js';
import { stackPorts } from './lib/stack-definition.js';

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

  const embedded = `postgresql://postgres:postgres@127.0.0.1:${stackPorts().embeddedPostgres}/order_fulfilment`;
  const databaseUrl = process.env.DATABASE_URL?.trim() || embedded;
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

runMain(() => main(process.argv.slice(2)), 'keys: ');
