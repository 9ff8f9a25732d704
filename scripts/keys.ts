/** `npm run keys`: src/cli/keys.ts, with `DATABASE_URL` defaulting to `npm start`'s embedded database. */
import { stackPorts } from './lib/stack-definition.js';

process.env.DATABASE_URL ||= `postgresql://postgres:postgres@127.0.0.1:${stackPorts().embeddedPostgres}/order_fulfilment`;
await import('../src/cli/keys.js');
