/**
 * Replays the committed histories in test/replay/histories (one folder per version that recorded them, e.g.
 * `v1.0.0/`) through the current workflow code. A change that would make a running execution of any recorded version
 * non-deterministic fails here. Recorded by record-histories.ts.
 * See https://docs.temporal.io/develop/typescript/testing-suite#replay
 */
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Worker } from '@temporalio/worker';
import { describe, expect, it } from 'vitest';
import { workflowsPath } from '../../src/worker/order-worker.js';

const dir = fileURLToPath(new URL('./histories/', import.meta.url));

describe('workflow replay', () => {
  it('replays every committed history without non-determinism', async () => {
    const files = (await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.json')).sort();
    // The 1.0.0 baseline: one history per path of the workflow as released (record-histories.ts), at least.
    expect(files.filter((f) => f.startsWith('v1.0.0/')).length).toBeGreaterThanOrEqual(13);
    const histories = await Promise.all(
      files.map(async (f) => ({ workflowId: f, history: JSON.parse(await readFile(dir + f, 'utf8')) })),
    );
    const results = [];
    for await (const result of Worker.runReplayHistories({ workflowsPath: workflowsPath() }, histories)) {
      results.push({ workflowId: result.workflowId, error: result.error?.message });
    }
    expect(results).toEqual(files.map((f) => ({ workflowId: f, error: undefined })));
  });
});
