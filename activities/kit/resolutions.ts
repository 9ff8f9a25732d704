/**
 * An operator's decision on an order that waits for a person, recorded: the exit of a doubt no provider answer can
 * settle (a provider that cannot replay an old key, a step done by hand), and the close of an order after the pivot.
 * One transaction under the order-row lock: the audit row (`order_resolutions`: who, why, when, keyed by the Update id
 * so a repeated request records once), the step's claim settled accordingly, what the steps record of the decision
 * themselves (`performedByHand` of the step resolved `performed`, e.g. the shipment and its stock movements; `closed`
 * of every step on a close, e.g. the release of goods that never left), and the status the decision leads to.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../../workflows/errors.js';
import type { RecordResolutionInput, RecordResolutionResult } from '../../workflows/order-activities.contract.js';
import type { ActivityDeps } from '../ports.js';
import { readSideEffects } from './claims.js';
import type { StepDefinition } from './define.js';
import { lockOrder, writeOrderStatus } from './order-guards.js';
import { readOrder } from './order.js';

/**
 * Records an operator's decision (see the module comment). With `performed`, a claim that is `claimed`, `sending` or
 * `failed` (or missing) becomes `sent` with the operator's reference (owner `operator:<by>`); a `sent` claim keeps the
 * provider's own id, and the step's `performedByHand` runs. With `not_performed`, a `claimed` or `sending` claim becomes
 * `failed`. `closed` changes no claim; every step's `closed` runs.
 * The status write is absolute and rank-guarded like every other (`closed` stores `closed at <step> by <by>: <reason>` as the
 * failure reason).
 * @throws ApplicationFailure `RecordNotFoundError` (no such order), `ValidationError` (non-retryable: `performed` on a
 *   tombstone, whose effect the order halted before it happened, or `not_performed` on a claim the provider answered
 *   as `sent`), or what a step's hook throws; nothing is written then.
 */
export async function recordResolution(
  steps: readonly StepDefinition[],
  deps: ActivityDeps,
  input: RecordResolutionInput,
): Promise<RecordResolutionResult> {
  const { orderId, decision, by } = input;
  const key = input.key ?? registryKey(steps, input.step, orderId);
  return deps.db.$transaction(async (tx) => {
    await lockOrder(tx, orderId);
    const inserted = await tx.$executeRaw`
      INSERT INTO order_resolutions (id, order_id, step, decision, claim_key, provider_id, reason, decided_by)
      VALUES (${input.id}, ${orderId}::uuid, ${input.step}, ${decision}, ${key ?? null}, ${input.providerId ?? null},
              ${input.reason.slice(0, 1000)}, ${by.slice(0, 200)})
      ON CONFLICT (id) DO NOTHING`;
    const [before] = key ? await readSideEffects(tx, [key]) : [];
    const current = key ? { key, status: before?.status } : null;
    if (inserted === 0) {
      // The id is the Update's (`resolve:<client>:<key>`): an API client reusing its key on another order must not
      // have this order go on as if its decision were recorded (the API refuses it: 422).
      const [owner] = await tx.$queryRaw<Array<{ order_id: string }>>`
        SELECT order_id::text FROM order_resolutions WHERE id = ${input.id}`;
      if (owner && owner.order_id !== orderId) {
        throw ApplicationFailure.nonRetryable(
          `the resolution id ${input.id} was recorded for another order`,
          ErrorType.Validation,
        );
      }
      return { recorded: false, claim: current?.status ? { key: current.key, status: current.status } : null };
    }
    const owner = `operator:${by.slice(0, 200)}`;
    let status = before?.status;
    if (key && decision === 'performed') {
      if (status === 'cancelled') {
        throw ApplicationFailure.nonRetryable(
          `${key} is a tombstone (the order halted before it happened): it cannot be resolved as performed`,
          ErrorType.Validation,
        );
      }
      if (status !== 'sent') {
        await tx.$executeRaw`
          INSERT INTO side_effect_claims (key, kind, status, owner, attempts, claimed_at, provider_id, completed_at)
          VALUES (${key}, ${input.step}, 'sent', ${owner}, 0, now(), ${input.providerId ?? `resolved:${input.id}`}, now())
          ON CONFLICT (key) DO UPDATE SET status = 'sent', owner = EXCLUDED.owner, provider_id = EXCLUDED.provider_id,
            completed_at = now()
          WHERE side_effect_claims.status IN ('claimed', 'sending', 'failed')`;
        status = 'sent';
      }
    } else if (key && decision === 'not_performed') {
      if (status === 'sent') {
        throw ApplicationFailure.nonRetryable(
          `${key} is sent (the provider answered that it acted): it cannot be resolved as not performed`,
          ErrorType.Validation,
        );
      }
      if (status === 'claimed' || status === 'sending') {
        await tx.$executeRaw`
          UPDATE side_effect_claims SET status = 'failed', owner = ${owner}
          WHERE key = ${key} AND status IN ('claimed', 'sending')`;
        status = 'failed';
      }
    }
    // The steps' own records of the decision: what a step done by hand records itself, what a close leaves behind.
    const hooks =
      decision === 'performed'
        ? steps.filter((s) => s.name === input.step).map((s) => s.performedByHand)
        : decision === 'closed'
          ? steps.map((s) => s.closed)
          : [];
    const run = hooks.filter((hook) => hook !== undefined);
    if (run.length > 0) {
      const ctx = {
        orderId,
        tx,
        order: await readOrder(tx, orderId),
        resolution: { id: input.id, providerId: input.providerId ?? null, by },
      };
      for (const hook of run) await hook(ctx);
    }
    if (input.status) {
      const why = decision === 'closed' ? `closed at ${input.step} by ${by}: ${input.reason}` : null;
      await writeOrderStatus(tx, orderId, input.status.status, input.status.rank, why);
    }
    return { recorded: true, claim: key && status ? { key, status } : null };
  });
}

/** The registry's idempotency key of the provider step or provider compensation named `name`, if there is one. */
function registryKey(steps: readonly StepDefinition[], name: string, orderId: string): string | undefined {
  for (const step of steps) {
    if (step.name === name) return step.kind === 'provider' ? step.key(orderId) : undefined;
    const compensation = step.compensation;
    if (compensation?.name === name) return compensation.kind === 'provider' ? compensation.key(orderId) : undefined;
  }
  return undefined;
}
