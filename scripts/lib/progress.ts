/**
 * Live progress of a batch of orders for `npm run demo`: how many orders are in each status while they run, and
 * a closing summary table (orders per final status, with POST-to-final times).
 *
 * On a terminal the progress is one line redrawn in place (at most every 100 ms); elsewhere (CI logs, a pipe) a line
 * is printed only when the counts change, so the log shows each transition once.
 */

import { orderStatuses } from '../../activities/index.js';

/** What the tracker needs of an output stream. */
export interface ProgressOutput {
  write(text: string): unknown;
  isTTY?: boolean;
}

/**
 * Statuses in the order they are shown, from the step registry (`received`, each step's status in plan order, then
 * the lifecycle's: `orderStatuses()` of activities/index.ts). Others (e.g. `timeout`) come after them.
 */
export const STATUS_ORDER: readonly string[] = orderStatuses();

/** Tracks the latest status of each order of a batch. */
export class OrderProgress {
  private readonly status = new Map<string, string>();
  private readonly finishedMs = new Map<string, number>();
  private readonly started = Date.now();
  private lastLine = '';
  private lastDraw = 0;

  /**
   * @param total orders in the batch (those not reported yet count as `placing`).
   * @param isFinal whether a status is where an order stays (the demo's terminal statuses).
   */
  constructor(
    private readonly total: number,
    private readonly isFinal: (status: string) => boolean,
    private readonly out: ProgressOutput = process.stdout,
  ) {}

  /** Records an order's current status; `elapsedMs` (POST to now) is kept when the status is final. */
  update(id: string, status: string, elapsedMs?: number): void {
    this.status.set(id, status);
    if (this.isFinal(status) && elapsedMs !== undefined && !this.finishedMs.has(id)) this.finishedMs.set(id, elapsedMs);
    this.draw(false);
  }

  /** `3/5 final · invoiced 1 · completed 3 · 2.4 s`. */
  line(): string {
    const counts = new Map<string, number>();
    for (const s of this.status.values()) counts.set(s, (counts.get(s) ?? 0) + 1);
    const placing = this.total - this.status.size;
    const final = [...this.status.values()].filter(this.isFinal).length;
    const parts = [...counts].sort(([a], [b]) => rank(a) - rank(b)).map(([s, n]) => `${s} ${n}`);
    if (placing > 0) parts.unshift(`placing ${placing}`);
    const seconds = ((Date.now() - this.started) / 1000).toFixed(1);
    return `${final}/${this.total} final · ${parts.join(' · ')} · ${seconds} s`;
  }

  /** Ends the live line and prints the summary table: per status, orders and POST-to-final times (ms). */
  finish(): void {
    this.draw(true);
    if (this.out.isTTY) this.out.write('\n');
    const rows = new Map<string, number[]>();
    for (const [id, s] of this.status) {
      const list = rows.get(s) ?? [];
      const ms = this.finishedMs.get(id);
      if (ms !== undefined) list.push(ms);
      rows.set(s, list);
    }
    const table = [...rows]
      .sort(([a], [b]) => rank(a) - rank(b))
      .map(([s, times]) => {
        const n = [...this.status.values()].filter((v) => v === s).length;
        const sorted = [...times].sort((a, b) => a - b);
        const median = sorted.length ? String(sorted[Math.floor((sorted.length - 1) / 2)]) : '-';
        const max = sorted.length ? String(sorted[sorted.length - 1]) : '-';
        return [s, String(n), median, max];
      });
    const headers = ['status', 'orders', 'median ms', 'max ms'];
    const widths = headers.map((h, i) => Math.max(h.length, ...table.map((r) => r[i]!.length)));
    const fmt = (cells: string[]) =>
      cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
    this.out.write(`\nSummary (${((Date.now() - this.started) / 1000).toFixed(1)} s)\n`);
    this.out.write(`${fmt(headers)}\n${widths.map((w) => '─'.repeat(w)).join('  ')}\n`);
    for (const row of table) this.out.write(`${fmt(row)}\n`);
  }

  private draw(force: boolean): void {
    const line = this.line();
    if (this.out.isTTY) {
      const now = Date.now();
      if (!force && now - this.lastDraw < 100) return;
      this.lastDraw = now;
      this.out.write(`\r\x1b[2K  ${line}`);
      return;
    }
    const key = line.replace(/ · [\d.]+ s$/, '');
    if (key === this.lastLine) return;
    this.lastLine = key;
    this.out.write(`  ${line}\n`);
  }
}

function rank(status: string): number {
  const i = STATUS_ORDER.indexOf(status);
  return i < 0 ? STATUS_ORDER.length : i;
}
