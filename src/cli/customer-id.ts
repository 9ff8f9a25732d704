/**
 * `npm run customer-id -- <email> [...]` (in a container: `node dist/src/cli/customer-id.js <email> ...`): prints
 * the pseudonymous `CustomerId` search attribute of each email (the rule is in src/orders/workflow/customer-id.ts),
 * with `CUSTOMER_ID_SECRET` from the environment (or its development default), and a Temporal list query for that
 * customer's orders. Exit code 2 without an email.
 */
import { loadConfig } from '../config/config.js';
import { customerSearchId } from '../orders/workflow/customer-id.js';

const emails = process.argv.slice(2).filter((arg) => arg !== '--');
if (emails.length === 0) {
  console.error('usage: npm run customer-id -- <email> [<email> ...]');
  process.exit(2);
}
const { CUSTOMER_ID_SECRET } = loadConfig();
for (const email of emails) {
  const id = customerSearchId(email, CUSTOMER_ID_SECRET);
  console.log(`${id}  temporal workflow list --query 'CustomerId = "${id}"'`);
}
