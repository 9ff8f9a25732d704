/**
 * Summarises V8 CPU profiles (`.cpuprofile`, from `npm run bench -- --profile`): self time by package (the
 * node_modules folder, or the project's own folder, or `(node)` for Node's internals, `(gc)`, `(idle)`) and the
 * top functions by self time. Usage: `npx tsx bench/profile-summary.ts <file or folder>... [--top 25]`.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values, positionals } = parseArgs({
  options: { top: { type: 'string', default: '25' } },
  allowPositionals: true,
});

interface Node {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface Profile {
  nodes: Node[];
  samples: number[];
  timeDeltas: number[];
}

function files(p: string): string[] {
  return statSync(p).isDirectory()
    ? readdirSync(p).flatMap((f) => files(path.join(p, f)))
    : p.endsWith('.cpuprofile')
      ? [p]
      : [];
}

function bucket(url: string, fn: string): string {
  if (fn === '(garbage collector)') return '(gc)';
  if (fn === '(idle)' || fn === '(program)') return fn;
  if (!url) return '(native)';
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = url.slice(nm + 'node_modules/'.length).split('/');
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith('node:')) return '(node)';
  const m = /\/(dist\/)?(src|activities|workflows|simulators|scripts|bench)\/([^/]+)/.exec(url);
  return m ? `${m[2]}/${m[3]}` : url;
}

for (const file of positionals.flatMap(files)) {
  const prof = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(prof.nodes.map((n) => [n.id, n]));
  const self = new Map<number, number>();
  prof.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (prof.timeDeltas[i] ?? 0)));
  const byBucket = new Map<string, number>();
  const byFn = new Map<string, number>();
  let total = 0;
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    const b = bucket(n.callFrame.url, n.callFrame.functionName);
    if (b === '(idle)') continue;
    total += us;
    byBucket.set(b, (byBucket.get(b) ?? 0) + us);
    const fn = `${n.callFrame.functionName || '(anonymous)'} ${b}:${n.callFrame.lineNumber + 1}`;
    byFn.set(fn, (byFn.get(fn) ?? 0) + us);
  }
  const top = Number(values.top);
  console.log(`\n${file}: ${(total / 1000).toFixed(0)} ms busy`);
  for (const [b, us] of [...byBucket].sort((a, c) => c[1] - a[1]).slice(0, top)) {
    console.log(`  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${(us / 1000).toFixed(0).padStart(6)} ms  ${b}`);
  }
  console.log('  top functions (self):');
  for (const [f, us] of [...byFn].sort((a, c) => c[1] - a[1]).slice(0, top)) {
    console.log(`  ${((100 * us) / total).toFixed(1).padStart(5)}%  ${f}`);
  }
}
