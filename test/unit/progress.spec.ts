/**
 * The demo's live progress (scripts/lib/progress.ts): outside a terminal one line per change of the counts, then a
 * summary per status with POST-to-final times.
 */
import { describe, expect, it } from 'vitest';
import { OrderProgress } from '../../scripts/lib/progress.js';

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
});
