/**
 * The demo's live progress (scripts/lib/progress.ts): outside a terminal one line per change of the counts, then a
 * summary per status with POST-to-final times.
 */
import { describe, expect, it } from 'vitest';
import { orderStatuses, STEPS } from '../../activities/index.js';
import { OrderProgress, STATUS_ORDER } from '../../scripts/lib/progress.js';

describe('OrderProgress', () => {
  it('prints each change once and ends with a summary table', () => {
    const out: string[] = [];
    const progress = new OrderProgress(3, (s) => ['completed', 'failed'].includes(s), { write: (t) => out.push(t) });
    progress.update('a', 'received', 10);
    progress.update('a', 'received', 20); // no change: no line
    progress.update('b', 'invoiced', 30);
    progress.update('a', 'completed', 400);
    progress.update('b', 'failed', 100);
    progress.update('c', 'completed', 800);
    progress.finish();

    const lines = out.join('').split('\n');
    expect(lines.filter((l) => l.includes(' final · '))).toHaveLength(5);
    expect(lines[0]).toMatch(/^ {2}0\/3 final · placing 2 · received 1 · [\d.]+ s$/);
    expect(lines).toContainEqual(expect.stringMatching(/^ {2}3\/3 final · completed 2 · failed 1 · /));
    const summary = lines.slice(lines.findIndex((l) => l.startsWith('Summary')));
    expect(summary[1]).toMatch(/^status +orders +median ms +max ms$/);
    expect(summary[3]).toMatch(/^completed +2 +400 +800$/);
    expect(summary[4]).toMatch(/^failed +1 +100 +100$/);
  });

  it('shows the statuses in the order of the step registry, and unknown ones last', () => {
    expect(STATUS_ORDER).toEqual(orderStatuses());
    expect(STATUS_ORDER.slice(1, 1 + STEPS.length)).toEqual(STEPS.map((s) => s.status));
    const out: string[] = [];
    const statuses = [...STATUS_ORDER].reverse();
    const progress = new OrderProgress(statuses.length + 1, () => false, { write: (t) => out.push(t) });
    progress.update('x', 'timeout');
    statuses.forEach((status, i) => progress.update(`o${i}`, status));
    const shown = [...progress.line().matchAll(/([a-z_]+) 1/g)].map((m) => m[1]);
    expect(shown).toEqual([...STATUS_ORDER, 'timeout']);
  });
});
