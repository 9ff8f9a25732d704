/**
 * The workflow's activities: the kit's own (the fence, the final and `attention_required` statuses, the plan) and
 * each planned step's and compensation's, with its retry profile on its task queue. Sandbox-safe.
 */
import {
  type ActivityOptions,
  ActivityCancellationType,
  proxyActivities,
  proxyLocalActivities,
  workflowInfo,
} from '@temporalio/workflow';
import type { CompensationActivity, KitActivities, StepActivity } from './order-activities.contract.js';
import { attentionWrite, compensation, localDatabaseStep, RETRY_PROFILES } from './activity-options.js';
import { plainLine } from './display-text.js';
import { StepPhase, type PlannedStep } from './order-plan.js';

/** The kit's own activities on the order task queue: the fence and the final statuses must succeed (long profile). */
export const kit = proxyActivities<KitActivities>(compensation);
/** The `attention_required` status write: it outlasts a long database outage. */
export const attention = proxyActivities<KitActivities>(attentionWrite);
/** The plan of a run started without one: a local activity (recorded as a marker, so replays read the same plan). */
export const planning = proxyLocalActivities<KitActivities>(localDatabaseStep);

/** The separator of a provider's task queue: `<order task queue>.<provider>` (providers/kit/define.ts). */
function providerQueue(provider: string): string {
  return `${workflowInfo().taskQueue}.${provider}`;
}

/**
 * The activity of a planned step, with its retry profile, on its task queue (a provider step on its provider's),
 * and its summary for the Temporal UI. A cancelled step is waited for (`WAIT_CANCELLATION_COMPLETED`, also the SDK's
 * default, set here on purpose): it reports whether it acted, and a provider call under way is never cut short. A
 * database step is a local activity in the workflow task: a cancel reaches the workflow only when that task ends, so
 * its transaction always finishes first. After the pivot the steps run in a non-cancellable scope.
 */
export function stepActivity(step: PlannedStep): StepActivity {
  const profile = RETRY_PROFILES[step.retry];
  const cancellationType = ActivityCancellationType.WAIT_CANCELLATION_COMPLETED;
  // A database step, and an event step's recording of its event: local activities in the workflow task.
  if (step.kind !== 'provider') {
    return proxyLocalActivities<Record<string, StepActivity>>({
      ...profile,
      cancellationType,
      summary: plainLine(step.summary),
    })[step.name]!;
  }
  const options: ActivityOptions = {
    ...profile,
    taskQueue: providerQueue(step.provider!),
    // The UI shows an activity's summary as plain text (escapes would show): one line, no invisible characters.
    summary: plainLine(step.summary),
    ...(step.phase === StepPhase.AfterPivot ? {} : { cancellationType }),
  };
  return proxyActivities<Record<string, StepActivity>>(options)[step.name]!;
}

/** The activity of a step's compensation (the compensation profile; a provider's on its task queue). */
export function compensationActivity(step: PlannedStep): CompensationActivity {
  const { name, provider } = step.compensation!;
  return proxyActivities<Record<string, CompensationActivity>>({
    ...compensation,
    ...(provider ? { taskQueue: providerQueue(provider) } : {}),
    summary: `undo: ${plainLine(step.summary)}`,
  })[name]!;
}
