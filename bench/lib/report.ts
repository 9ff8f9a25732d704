/** The bench's statistics (percentiles from hdr-histogram-js) and its report's tables. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import * as hdr from 'hdr-histogram-js';
import { markdownTable } from 'markdown-table';
import { ROOT, type ArmKind } from './env.js';

export type Arm = 'F0' | 'S';
export const ARMS: readonly Arm[] = ['F0', 'S'];
export const kindOf = (arm: Arm): ArmKind => (arm === 'S' ? 'service' : 'floor');

/** The `p`th percentile of `values`, from an HDR histogram (µs resolution, 3 significant digits); NaN for none. */
export function pct(values: readonly number[], p: number): number {
  if (values.length === 0) return NaN;
  const h = hdr.build({ numberOfSignificantValueDigits: 3 });
  for (const v of values) h.recordValue(Math.max(0, Math.round(v * 1000)));
  const value = h.getValueAtPercentile(p) / 1000;
  h.destroy();
  return value;
}
const mean = (values: readonly number[]): number => {
  const v = values.filter(Number.isFinite);
  return v.length ? v.reduce((a, b) => a + b, 0) / v.length : NaN;
};
export const fmt = (v: number | undefined, digits = 1): string =>
  v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(digits);
const mode = (values: readonly number[]): number => {
  const counts = values.reduce((m, v) => m.set(v, (m.get(v) ?? 0) + 1), new Map<number, number>());
  return [...counts].sort((a, b) => b[1] - a[1])[0]?.[0] ?? NaN;
};
export type PhaseName = 'burst' | 'flash';
export interface Phase {
  units: number;
  firstSend: number;
  lastClose: number;
  rate: number;
  /** CPU ms per process over the phase. */
  cpu: Record<string, number>;
  /** Start / POST latencies, ms. */
  latencies: number[];
  /** Close time of each unit, s since firstSend. */
  closeOffsets: number[];
  events: number[];
}

/** The processes an arm's CPU per unit counts (floor: its starter). */
const costParts = (kind: ArmKind): string[] =>
  kind === 'service' ? ['server', 'worker', 'api', 'postgres'] : ['server', 'worker', 'client'];

export function unitCost(kind: ArmKind, p: Phase): number {
  return costParts(kind).reduce((sum, k) => sum + (p.cpu[k] ?? 0), 0) / p.units;
}

export interface ArmResult {
  arm: Arm;
  position: number;
  phases: Partial<Record<PhaseName, Phase>>;
  checks: string[];
  ok: boolean;
  load: [number, number];
}
const table = (headers: string[], rows: string[][]): string => markdownTable([headers, ...rows]);

/** The design's history length: the newest recorded completed order's (test/replay/histories/). */
function designEvents(): number {
  const dir = path.join(ROOT, 'test', 'replay', 'histories');
  const files = readdirSync(dir, { recursive: true })
    .map(String)
    .filter((f) => f.endsWith('order-fulfilment-completed.json'));
  const newest = files.sort((a, b) => a.localeCompare(b, 'en', { numeric: true })).at(-1);
  if (!newest) return NaN;
  return (JSON.parse(readFileSync(path.join(dir, newest), 'utf8')) as { events: unknown[] }).events.length;
}

export function report(results: ArmResult[], meta: Record<string, string>, flash: number): string {
  const per = (r: ArmResult, k: string): number => (r.phases.burst!.cpu[k] ?? NaN) / r.phases.burst!.units;
  const headers = '#,arm,completions/s,CPU ms/unit (parts),flash /s: CPU,client,sims,events,send p50/p99 ms';
  const perArm = table(
    `${headers},checks,load`.split(','),
    results.map((r) => {
      const kind = kindOf(r.arm);
      const { burst: b, flash: f } = r.phases;
      return [
        String(r.position),
        r.arm,
        fmt(b!.rate, 2),
        `${fmt(unitCost(kind, b!), 0)} (${costParts(kind)
          .map((k) => fmt(per(r, k), 0))
          .join(' / ')})`,
        f ? `${fmt(f.rate, 2)}, ${fmt(unitCost(kind, f), 0)}` : '–',
        fmt(per(r, 'client'), 1),
        fmt(per(r, 'sims'), 1),
        String(mode(b!.events)),
        `${fmt(pct(b!.latencies, 50), 0)}/${fmt(pct(b!.latencies, 99), 0)}`,
        r.ok ? (r.checks.some((c) => c.startsWith('WARN')) ? 'ok*' : 'ok') : 'FAIL',
        `${fmt(r.load[0], 2)}→${fmt(r.load[1], 2)}`,
      ];
    }),
  );
  const kinds = ARMS.filter((a) => results.some((r) => r.arm === a));
  const pairs: Array<[Arm, Arm]> = kinds
    .filter((k) => kindOf(k) === 'service')
    .flatMap((x) => kinds.filter((k) => kindOf(k) === 'floor').map((f) => [x, f] as [Arm, Arm]));
  const of = (a: Arm, get: (r: ArmResult) => number | undefined): number =>
    mean(results.filter((r) => r.arm === a).map((r) => get(r) ?? NaN));
  const figures: Array<[string, (r: ArmResult) => number | undefined, number, string?]> = [
    ['completions/s (burst)', (r) => r.phases.burst!.rate, 2, 'S/F0 ≥ 0.8'],
    ['CPU ms per unit (burst)', (r) => unitCost(kindOf(r.arm), r.phases.burst!), 0, 'S/F0 ≤ 1.5'],
    ['completions/s (flash sale: one SKU)', (r) => r.phases.flash?.rate, 2],
    ['CPU ms per unit (flash sale)', (r) => r.phases.flash && unitCost(kindOf(r.arm), r.phases.flash), 0],
    ...['server', 'worker', 'api', 'postgres'].map((k): [string, (r: ArmResult) => number, number] => [
      `  ${k === 'api' ? 'api (floor: its starter)' : k}`,
      (r) => per(r, k === 'api' && kindOf(r.arm) === 'floor' ? 'client' : k),
      0,
    ]),
    ['burst POST/start p50 ms', (r) => pct(r.phases.burst!.latencies, 50), 0],
    ['burst POST/start p99 ms', (r) => pct(r.phases.burst!.latencies, 99), 0],
    ['burst unit close p50 s (send→close)', (r) => pct(r.phases.burst!.closeOffsets, 50), 2],
  ];
  const expected: Record<Arm, number> = { F0: 29, S: designEvents() };
  const means = table(
    ['figure', ...kinds, ...pairs.map(([a, b]) => `${a}/${b}`), 'target'],
    [
      ...figures.map(([label, get, digits, target]) => [
        label,
        ...kinds.map((k) => fmt(of(k, get), digits)),
        ...pairs.map(([a, b]) => fmt(of(a, get) / of(b, get), 2)),
        target ?? '',
      ]),
      [
        'history events per unit (design)',
        ...kinds.map(
          (k) => `${mode(results.filter((r) => r.arm === k).flatMap((r) => r.phases.burst!.events))} (${expected[k]})`,
        ),
        ...pairs.map(() => ''),
        'S = design',
      ],
    ],
  );
  const failed = results.filter((r) => !r.ok);
  return [
    ...Object.entries(meta).map(([k, v]) => `${k}: ${v}`),
    '',
    'Per arm (burst unless named). CPU ms per unit: floor (dev server / worker / starter), service (dev server / worker / api / postgres).',
    perArm,
    '',
    `Mean per kind (${kinds.map((k) => `${k}: ${results.filter((r) => r.arm === k).length} arm(s)`).join(', ')}); the flash sale: ${flash} units at once, every order for one SKU (a floor: a second burst)`,
    means,
    ...results.flatMap((r) =>
      r.checks.filter((c) => c.startsWith('WARN')).map((c) => `arm ${r.position} ${r.arm}: ${c}`),
    ),
    '',
    failed.length
      ? `CHECKS FAILED in arm(s) ${failed.map((r) => `${r.position}-${r.arm}: ${r.checks.filter((c) => c.startsWith('FAIL')).join('; ')}`).join(', ')}`
      : 'checks: every unit completed once in every arm; the service: every order completed, one per POST, 1 effect per key in every ledger, stock = the sums of its movements',
  ].join('\n');
}
