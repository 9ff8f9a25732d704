/** `npm run keys`: src/cli/keys.ts, with `DATABASE_URL` defaulting to `npm start`'s embedded database. */
import { embeddedDatabaseUrl, stackPorts } from './lib/stack-definition.js';

process.env.DATABASE_URL ||= embeddedDatabaseUrl(stackPorts().embeddedPostgres);
await import('../src/cli/keys.js');
