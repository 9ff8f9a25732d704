/** The floor F0 of issue 9: a bare workflow of 4 sequential no-op activities (29 history events). */
import { proxyActivities } from '@temporalio/workflow';
import type { FloorActivities } from './activities.js';

const { noop } = proxyActivities<FloorActivities>({ startToCloseTimeout: '10 seconds' });

export async function floor4(): Promise<void> {
  for (let i = 0; i < 4; i++) await noop();
}
