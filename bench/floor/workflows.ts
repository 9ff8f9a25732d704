/**
 * The floor: bare workflows of sequential no-op activities, the reference the service is measured against.
 * `floor4` is F0 of issue 9 (4 activities, 29 history events); `floor5` (F5) has the order workflow's shape
 * (5 activities, 35 events: the order's 43 less its patch marker and 7 search-attribute upserts).
 */
import { proxyActivities } from '@temporalio/workflow';
import type { FloorActivities } from './activities.js';

const { noop } = proxyActivities<FloorActivities>({ startToCloseTimeout: '10 seconds' });

async function sequential(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await noop();
}
export const floor4 = (): Promise<void> => sequential(4);
export const floor5 = (): Promise<void> => sequential(5);
