/**
 * CPU time of processes from /proc (Linux): `utime + stime` of a process plus `cutime + cstime` (the CPU of its
 * children that exited and were reaped), over the whole tree below it. A PostgreSQL postmaster's tree therefore
 * counts every backend, live or gone; a Node process counts its worker threads.
 * See proc(5): fields 14-17 of /proc/<pid>/stat, in clock ticks (`getconf CLK_TCK`, 100 on Linux x86-64).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

interface Stat {
  pid: number;
  comm: string;
  ppid: number;
  /** utime + stime, ticks. */
  own: number;
  /** cutime + cstime, ticks. */
  reaped: number;
}

/** Parses /proc/<pid>/stat; undefined when the process is gone. */
export function readStat(pid: number): Stat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // comm may contain spaces and parentheses: it ends at the last ')'.
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const f = text
    .slice(close + 2)
    .trim()
    .split(/\s+/);
  // f[0] is field 3 (state): field n is f[n - 3].
  const num = (n: number): number => Number(f[n - 3]);
  return { pid, comm, ppid: num(4), own: num(14) + num(15), reaped: num(16) + num(17) };
}

/** Every live process: pid -> stat. */
function allStats(): Map<number, Stat> {
  const stats = new Map<number, Stat>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = readStat(Number(name));
    if (s) stats.set(s.pid, s);
  }
  return stats;
}

/** The pids of `root` and its live descendants. */
export function processTree(root: number, stats = allStats()): number[] {
  const children = new Map<number, number[]>();
  for (const s of stats.values()) {
    const list = children.get(s.ppid) ?? [];
    list.push(s.pid);
    children.set(s.ppid, list);
  }
  const out: number[] = [];
  const todo = [root];
  while (todo.length) {
    const pid = todo.pop()!;
    if (!stats.has(pid)) continue;
    out.push(pid);
    todo.push(...(children.get(pid) ?? []));
  }
  return out;
}

/** CPU ms used so far by the tree below `root` (itself, live descendants, and everything they reaped). */
export function treeCpuMs(root: number, stats = allStats()): number {
  let ticks = 0;
  for (const pid of processTree(root, stats)) {
    const s = stats.get(pid)!;
    ticks += s.own + s.reaped;
  }
  return (ticks * 1000) / CLK_TCK;
}

/** CPU ms used so far by exactly these processes (no children), e.g. PostgreSQL backends of one database. */
export function pidsCpuMs(pids: readonly number[]): number {
  let ticks = 0;
  for (const pid of pids) ticks += readStat(pid)?.own ?? 0;
  return (ticks * 1000) / CLK_TCK;
}

/** A named CPU meter: reads the CPU ms used so far by one role (server, worker, api, ...). */
export interface CpuMeter {
  name: string;
  read(): number | Promise<number>;
}

/** A meter over the process tree below `pid` (read when sampled, so a restarted process gets a new meter). */
export function treeMeter(name: string, pid: () => number | undefined): CpuMeter {
  return {
    name,
    read: () => {
      const p = pid();
      return p === undefined ? 0 : treeCpuMs(p);
    },
  };
}

/** The bench process itself (main thread and its worker threads). */
export function selfMeter(name: string): CpuMeter {
  return {
    name,
    read: () => {
      const u = process.cpuUsage();
      return (u.user + u.system) / 1000;
    },
  };
}

/** Reads every meter at once. */
export async function sampleCpu(meters: readonly CpuMeter[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const m of meters) out[m.name] = await m.read();
  return out;
}

/** `after - before` per meter. */
export function cpuDelta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const k of Object.keys(after)) out[k] = after[k]! - (before[k] ?? 0);
  return out;
}

/** The 1-minute load average (/proc/loadavg). */
export function loadAverage(): [number, number, number] {
  const [a, b, c] = readFileSync('/proc/loadavg', 'utf8').split(' ').map(Number);
  return [a!, b!, c!];
}
