/** Small statistics helpers for the benchmark (nearest-rank percentiles, no interpolation). */

/** The p-th percentile (0 < p <= 100) by nearest rank; NaN for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1]!;
}

export function mean(values: readonly number[]): number {
  return values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN;
}

/** Median of the finite values (NaN when none). */
export function median(values: readonly number[]): number {
  const v = values.filter(Number.isFinite);
  return v.length ? percentile(v, 50) : NaN;
}

/** Mean of the finite values (NaN when none). */
export function meanFinite(values: readonly number[]): number {
  return mean(values.filter(Number.isFinite));
}

/** The most frequent value and the range, e.g. for history events per workflow. */
export function modeAndRange(values: readonly number[]): { mode: number; min: number; max: number } {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  let mode = NaN;
  let best = 0;
  for (const [v, c] of counts) if (c > best) [mode, best] = [v, c];
  return { mode, min: Math.min(...values), max: Math.max(...values) };
}

/** Formats a number with `digits` decimals, or `–` for NaN/undefined. */
export function fmt(value: number | undefined, digits = 1): string {
  return value === undefined || !Number.isFinite(value) ? '–' : value.toFixed(digits);
}

/** Runs `tasks` with at most `limit` in flight, in order of the list. */
export async function pool<T>(tasks: ReadonlyArray<() => Promise<T>>, limit: number): Promise<T[]> {
  const results = new Array<T>(tasks.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, tasks.length) }, async () => {
      while (next < tasks.length) {
        const i = next++;
        results[i] = await tasks[i]!();
      }
    }),
  );
  return results;
}
