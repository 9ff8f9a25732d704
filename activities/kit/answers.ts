/**
 * Earlier steps' recorded answers (`ctx.answers` of every step: see `EarlierAnswers` in ./define.ts), read from what
 * the kit records anyway: a provider step's claim keeps the provider's id of its effect, a `recorded` database
 * step's result is in `order_step_results`.
 */
import type { SqlQueries } from '../ports.js';
import type { DatabaseStepDefinition, EarlierAnswers, ProviderStepDefinition } from './define.js';
import { notFound } from './failures.js';

/** The earlier answers of order `orderId`, read through `db` (a transaction, or the database) when asked. */
export function earlierAnswers(db: SqlQueries, orderId: string): EarlierAnswers {
  return {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any
    async providerId(step: ProviderStepDefinition<any, any>): Promise<string> {
      const key = step.key(orderId);
      const [claim] = await db.$queryRaw<Array<{ provider_id: string }>>`
        SELECT provider_id FROM side_effect_claims WHERE key = ${key} AND status = 'sent' AND provider_id IS NOT NULL`;
      if (!claim) throw notFound(`the answer of ${step.name} (claim ${key}) for order`, orderId);
      return claim.provider_id;
    },
    async data<R>(step: DatabaseStepDefinition<R>): Promise<R> {
      if (step.idempotency !== 'recorded') {
        throw new Error(`${step.name} is idempotent by nature: it records no result; read what it writes instead`);
      }
      const [row] = await db.$queryRaw<Array<{ result: R }>>`
        SELECT result FROM order_step_results WHERE order_id = ${orderId}::uuid AND step = ${step.name}`;
      if (!row) throw notFound(`the recorded result of ${step.name} for order`, orderId);
      return row.result;
    },
  };
}
