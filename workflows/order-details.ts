/**
 * What a person reads about an order in the Temporal UI: the workflow's current details (user metadata, Markdown;
 * https://docs.temporal.io/workflows#user-metadata), kept true at each step by the workflow. Sandbox-safe: plain
 * functions; imports only its sandbox-safe neighbours.
 *
 * Personal data: only what the plan's summaries carry (counts, totals, masked email addresses, see
 * docs/operations.md) and the order id. Every text that comes from outside the workflow (summaries, failure
 * messages of providers, cancel reasons) goes through {@link escapeMarkdown} (./display-text.ts), so it shows as its
 * characters, never as Markdown, HTML or a link, and no invisible character in it can reorder the line.
 */
import { escapeMarkdown } from './display-text.js';
import type { OrderFulfilmentState } from './order-fulfilment.contract.js';
import { StepPhase, type OrderPlan, type PlannedStep } from './order-plan.js';

export { escapeMarkdown } from './display-text.js';

/** What {@link detailsOf} reads. */
export interface DetailsInput {
  orderId: string;
  plan: OrderPlan;
  state: Pick<OrderFulfilmentState, 'status' | 'currentStep' | 'completedSteps' | 'pivotPassed' | 'attention'>;
  /** Which run of the order this is (1 unless it continued as new). */
  run: number;
  /** A line about what happens now when it is not a step (halting, compensating, waiting), already Markdown. */
  now: string | null;
}

/** The status of the order as a heading word. */
function headline(input: DetailsInput): string {
  const { state } = input;
  if (input.now) return input.now;
  if (state.status === 'completed') return '**Completed**: every step is done.';
  if (state.status === 'failed') return '**Failed**: compensated (see the failure in the history).';
  if (state.status === 'cancelled') return '**Cancelled**: compensated.';
  if (state.status === 'closed') return '**Closed** by an operator: the remaining steps did not run.';
  if (state.currentStep) {
    const step = input.plan.steps.find((s) => s.name === state.currentStep);
    const at = step ? input.plan.steps.indexOf(step) + 1 : 0;
    return `**Running** \`${state.currentStep}\`${step ? `: ${escapeMarkdown(step.summary)} (step ${at} of ${input.plan.steps.length})` : ''}`;
  }
  return `**${escapeMarkdown(state.status)}**`;
}

/**
 * The current details of an order: what it does now, then its plan as a checklist (done, running, waiting, to do),
 * with the pivot marked, and where to act (the API routes of the order).
 */
export function detailsOf(input: DetailsInput): string {
  const { state, plan } = input;
  const mark = (step: PlannedStep): string => {
    if (state.completedSteps.includes(step.name)) return '[x]';
    return '[ ]';
  };
  const note = (step: PlannedStep): string => {
    const parts: string[] = [];
    if (step.phase === StepPhase.Pivot) parts.push('point of no return');
    if (state.currentStep === step.name) parts.push('running');
    if (state.attention?.step === step.name) parts.push('waiting for an operator');
    if (state.completedSteps.includes(step.compensation?.name ?? '\0'))
      parts.push(`undone by ${step.compensation!.name}`);
    return parts.length ? ` (${parts.join(', ')})` : '';
  };
  const lines = [
    headline(input),
    '',
    ...plan.steps.map((s) => `- ${mark(s)} \`${s.name}\`: ${escapeMarkdown(s.summary)}${note(s)}`),
    '',
    `Order \`${input.orderId}\`: \`GET /orders/${input.orderId}\`` +
      (input.run > 1 ? ` (run ${input.run}: continued as new after many retries)` : ''),
  ];
  return lines.join('\n');
}

/**
 * The lines of an order that waits for an operator: which step, why in words (`why`, written by the workflow), the
 * failure as recorded (`reason`, escaped), whether the provider may have acted, and the operator's ways out: retry,
 * and where the wait offers them, resolve and close.
 */
export function describeWait(
  orderId: string,
  step: Pick<PlannedStep, 'name' | 'summary'>,
  why: string,
  reason: string,
  outcomeUnknown: boolean,
  ways: { resolutions: readonly string[]; closable: boolean } = { resolutions: [], closable: false },
): string {
  const cause = escapeMarkdown(reason.length > 300 ? `${reason.slice(0, 299)}…` : reason);
  const unknown = outcomeUnknown ? ' The provider may have acted: a retry re-sends with the same Idempotency-Key.' : '';
  const resolve = ways.resolutions.length
    ? ` When no provider answer can settle it, resolve it as ${ways.resolutions.map((r) => `\`${r}\``).join(' or ')} ` +
      `with \`POST /orders/${orderId}/resolve\` (who and why are recorded).`
    : '';
  const close = ways.closable ? ` Or close the order with a reason: \`POST /orders/${orderId}/close\`.` : '';
  return (
    `**Waiting for an operator** at \`${step.name}\` (${escapeMarkdown(step.summary)}): ${why}.${unknown} ` +
    `Retry with \`POST /orders/${orderId}/retry\` once the cause is fixed.${resolve}${close}\n\nCause: ${cause}`
  );
}
