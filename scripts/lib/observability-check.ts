/**
 * `npm run check:observability`'s checks (docs/operations.md): promtool's config, rules and rule tests; every PromQL
 * expression of the rules and dashboards parsed, and each metric name it reads found in a live scrape. promtool is
 * found or built by go-tools.ts (`PROMTOOL_PATH`; ~6 min to build on 2 cores).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parser } from '@prometheus-io/lezer-promql';
// @ts-expect-error -- the package ships no type declarations: it returns [{ name, type, metrics }].
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { execa } from 'execa';
import { parse as parseYaml } from 'yaml';
import { ensureGoTool, type GoToolSpec } from './go-tools.js';
import type { LogFn } from './processes.js';

/** The Prometheus release the rules are written for (the compose profile's prom/prometheus image). */
export const PROMETHEUS_VERSION = '3.16.0';
/** Its Go module version: Prometheus 3.x is published as module versions v0.3xx.y. */
const MODULE_VERSION = '0.316.0';

const PROMTOOL: GoToolSpec = {
  label: 'promtool',
  folder: `promtool-${MODULE_VERSION}`,
  goPackage: 'github.com/prometheus/prometheus/cmd/promtool',
  version: MODULE_VERSION,
  envVar: 'PROMTOOL_PATH',
  buildArgs: ['-ldflags', `-X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION}`],
};

/** Finds or builds promtool. @throws Error when there is none and no Go toolchain to build it, or the build fails. */
export const ensurePromtool = (log: LogFn): Promise<string> => ensureGoTool(PROMTOOL, log);

/** Runs `promtool <args>` (2 min at most). @returns its exit code and interleaved output; never throws on an exit. */
async function runPromtool(promtool: string, args: readonly string[], cwd?: string) {
  const result = await execa(promtool, [...args], { cwd, all: true, reject: false, timeout: 120_000, stdin: 'ignore' });
  return { exitCode: result.exitCode ?? 1, output: String(result.all ?? '') };
}

type PromqlExpression = { source: string; expr: string; kind: 'rule' | 'dashboard' };

/** One rule of a Prometheus rule file. */
export type PromRule = { alert?: string; record?: string; expr: string; labels: Record<string, string> } & {
  annotations: Record<string, string>;
};

/** The checked files, from the repository root. */
export const OBSERVABILITY_FILES = {
  prometheusConfig: 'observability/prometheus/prometheus.yml',
  rules: 'observability/prometheus/alerts.yml',
  ruleTests: 'observability/prometheus/alerts.test.yml',
  dashboards: 'observability/grafana/dashboards',
  datasources: 'observability/grafana/provisioning/datasources/prometheus.yml',
  runbooks: 'docs/operations.md',
} as const;

/**
 * The metric names a PromQL expression reads, sorted (the official grammar, @prometheus-io/lezer-promql).
 * @throws Error when it does not parse, or a selector picks names by a regular expression.
 */
export function metricNames(expr: string): string[] {
  const names = new Set<string>();
  let error: string | undefined;
  const text = (node: { from: number; to: number }): string => expr.slice(node.from, node.to);
  const unquote = (s: string): string => (/^["'`]/.test(s) ? (JSON.parse(`"${s.slice(1, -1)}"`) as string) : s);
  parser.parse(expr).iterate({
    enter(node) {
      if (node.type.isError) error ??= `does not parse at ${node.from + 1}: ${expr.slice(node.from, node.from + 20)}`;
      if (node.name === 'VectorSelector') {
        const id = node.node.getChild('Identifier');
        if (id) names.add(text(id));
      } else if (node.name === 'QuotedLabelName' && node.node.parent?.name === 'LabelMatchers') {
        names.add(unquote(text(node)));
      } else if (node.name === 'UnquotedLabelMatcher' && text(node.node.getChild('LabelName')!) === '__name__') {
        const op = text(node.node.getChild('MatchOp')!);
        if (op !== '=') error ??= `a selector by __name__${op}: name the metrics instead, so they can be checked`;
        else names.add(unquote(text(node.node.getChild('StringLiteral')!)));
      }
    },
  });
  if (error) throw new Error(error);
  return [...names].sort();
}

const GRAFANA_BUILTINS: Record<string, string> = {
  ...{ __rate_interval: '1m', __interval: '1m', __range: '1h' },
  ...{ __interval_ms: '60000', __range_s: '3600', __range_ms: '3600000' },
};

/** A Grafana expression promtool can parse: built-in intervals and ranges as values, any other variable as `.*`. */
export function substituteGrafanaVariables(expr: string): string {
  return expr.replace(
    /\$\{(\w+)(?::[^}]*)?\}|\$(\w+)|\[\[(\w+)(?::[^\]]*)?\]\]/g,
    (_m, braced?: string, bare?: string, old?: string) => GRAFANA_BUILTINS[braced ?? bare ?? old ?? ''] ?? '.*',
  );
}

/** The PromQL of a variable's `label_values(<selector>, label)` or `query_result(<expr>)`. */
export function variableExpression(query: string): string | undefined {
  const m = /^label_values\s*\(([\s\S]*),\s*[\w.]+\s*\)$|^query_result\s*\(([\s\S]*)\)$/.exec(query.trim());
  return (m?.[1] ?? m?.[2])?.trim();
}

type Target = { refId?: string; expr?: string; datasource?: unknown };
type Panel = { id?: number; type?: string; title?: string; datasource?: unknown; targets?: Target[]; panels?: Panel[] };

/**
 * A dashboard's expressions (targets, query variables) and structural problems (uid, title, schemaVersion ≥ 39,
 * the provisioned datasource, unique panel ids, a query per panel).
 */
export function dashboardExpressions(
  dashboard: unknown,
  file: string,
  datasourceUid = 'prometheus',
): { expressions: PromqlExpression[]; problems: string[] } {
  type Variable = { name?: string; type?: string; query?: unknown; definition?: string };
  const d = dashboard as { uid?: string; title?: string; schemaVersion?: number; panels?: Panel[] } & {
    templating?: { list?: Variable[] };
  };
  const problems: string[] = [];
  const expressions: PromqlExpression[] = [];
  if (!d.uid || !d.title) problems.push(`${file}: no uid or no title`);
  if (!(Number(d.schemaVersion) >= 39))
    problems.push(`${file}: schemaVersion ${d.schemaVersion} (Grafana 11+ writes 39+)`);
  const ours = (ds: unknown): boolean =>
    (ds as { type?: string } | null)?.type === 'prometheus' && (ds as { uid?: string }).uid === datasourceUid;
  const flat = (panels: Panel[] = []): Panel[] => panels.flatMap((p) => [p, ...flat(p.panels)]);
  const ids = new Set<number>();
  for (const panel of flat(d.panels)) {
    const where = `${file}: "${panel.title ?? `panel ${panel.id}`}"`;
    if (panel.id !== undefined && ids.has(panel.id)) problems.push(`${where}: duplicate panel id ${panel.id}`);
    if (panel.id !== undefined) ids.add(panel.id);
    if (panel.type === 'row' || panel.type === 'text') continue;
    if (!ours(panel.datasource))
      problems.push(`${where}: datasource is not the provisioned Prometheus (uid ${datasourceUid})`);
    if (!panel.targets?.length) problems.push(`${where}: no query`);
    for (const t of panel.targets ?? []) {
      const at = `${where} ${t.refId ?? ''}`.trim();
      if (t.datasource !== undefined && !ours(t.datasource))
        problems.push(`${at}: datasource is not the provisioned Prometheus`);
      if (t.expr?.trim()) expressions.push({ source: at, expr: t.expr, kind: 'dashboard' });
      else problems.push(`${at}: no expr`);
    }
  }
  for (const v of d.templating?.list ?? []) {
    const raw =
      typeof v.query === 'string' ? v.query : ((v.query as { query?: string } | undefined)?.query ?? v.definition);
    const expr = v.type === 'query' && typeof raw === 'string' ? variableExpression(raw) : undefined;
    if (expr) expressions.push({ source: `${file}: variable $${v.name}`, expr, kind: 'dashboard' });
  }
  return { expressions, problems };
}

/** The rules of a Prometheus rule file. @throws Error when it has no `groups` list. */
export function parseRuleFile(text: string): PromRule[] {
  const doc = parseYaml(text) as { groups?: Array<{ rules?: PromRule[] }> } | null;
  if (!Array.isArray(doc?.groups)) throw new Error('not a rule file: no groups');
  return doc.groups.flatMap((g) =>
    (g.rules ?? []).map((r) => ({ ...r, labels: r.labels ?? {}, annotations: r.annotations ?? {} })),
  );
}

/** The sample names a text exposition serves (with `_bucket`, `_sum`, `_count`, `_total` as the type has). */
export function servedNames(exposition: string): Set<string> {
  const families = parsePrometheusTextFormat(exposition) as Array<{ name: string; type: string }>;
  const suffixes: Record<string, string[]> = {
    HISTOGRAM: ['_bucket', '_sum', '_count'],
    SUMMARY: ['', '_sum', '_count'],
    COUNTER: ['', '_total'],
  };
  return new Set(families.flatMap((f) => (suffixes[f.type] ?? ['']).map((s) => `${f.name}${s}`)));
}

const PROMETHEUS_SERIES = new Set('up scrape_duration_seconds ALERTS ALERTS_FOR_STATE'.split(' '));

/** The Temporal SDK metrics the rules and dashboards read that appear only at their first event (histograms by family). */
export const SDK_LAZY_METRICS: ReadonlySet<string> = new Set(
  `activity_execution_failed activity_poll_no_task activity_task_received local_activity_execution_failed long_request
  long_request_failure request request_failure sticky_cache_hit sticky_cache_miss sticky_cache_total_forced_eviction
  workflow_canceled workflow_completed workflow_continue_as_new workflow_failed workflow_task_execution_failed
  workflow_task_queue_poll_empty workflow_task_queue_poll_succeed workflow_endtoend_latency workflow_endtoend_latency_bucket
  activity_execution_latency_bucket activity_schedule_to_start_latency_bucket activity_succeed_endtoend_latency_bucket
  local_activity_execution_latency_bucket long_request_latency_bucket request_latency_bucket
  workflow_task_execution_latency_bucket workflow_task_replay_latency_bucket workflow_task_schedule_to_start_latency_bucket`
    .split(/\s+/)
    .map((name) => `temporal_${name}`),
);

type NameSource = 'api' | 'worker' | 'api+worker' | 'prometheus' | 'sdk' | 'missing';

/** Where a metric name comes from: a scrape, Prometheus itself, the SDK's lazy metrics, or nowhere. */
export function nameSource(
  name: string,
  scrapes: { api: Set<string>; worker: Set<string> },
  lazy = SDK_LAZY_METRICS,
): NameSource {
  const [api, worker] = [scrapes.api.has(name), scrapes.worker.has(name)];
  if (api || worker) return api && worker ? 'api+worker' : api ? 'api' : 'worker';
  return PROMETHEUS_SERIES.has(name) ? 'prometheus' : lazy.has(name) ? 'sdk' : 'missing';
}

/** promtool's parse error of each expression that has one (each checked as a recording rule of its own group). */
async function promtoolParseErrors(
  promtool: string,
  expressions: readonly PromqlExpression[],
): Promise<Map<PromqlExpression, string>> {
  const errors = new Map<PromqlExpression, string>();
  if (expressions.length === 0) return errors;
  const dir = await mkdtemp(path.join(tmpdir(), 'check-observability-'));
  try {
    const rule = (e: PromqlExpression, i: number) => ({
      record: `check:e${i}`,
      expr: substituteGrafanaVariables(e.expr),
    });
    const groups = expressions.map((e, i) => ({ name: `e${i}`, rules: [rule(e, i)] }));
    await writeFile(path.join(dir, 'expressions.yml'), JSON.stringify({ groups })); // JSON is YAML
    const { exitCode, output } = await runPromtool(promtool, ['check', 'rules', path.join(dir, 'expressions.yml')]);
    for (const m of output.matchAll(/group "e(\d+)", rule \d+, "[^"]*": (.*)/g))
      errors.set(expressions[Number(m[1])]!, m[2]!);
    if (exitCode !== 0 && errors.size === 0) throw new Error(`promtool check rules failed:\n${output}`);
    return errors;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

interface ObservabilityReport {
  steps: Array<{ name: string; ok: boolean }>;
  expressions: PromqlExpression[];
  names: Map<string, { source: NameSource; usedBy: string[] }>;
  problems: string[];
}

/**
 * Runs every check against the API's and the worker's expositions. Never throws for a problem: each is a line of
 * `problems`.
 */
export async function runObservabilityCheck(opts: {
  promtool: string;
  root: string;
  scrapes: { api: string; worker: string | readonly string[] };
  dashboardFiles?: readonly string[];
}): Promise<ObservabilityReport> {
  const file = (relative: string): string => path.join(opts.root, relative);
  const F = OBSERVABILITY_FILES;
  const problems: string[] = [];
  const steps: ObservabilityReport['steps'] = [];
  for (const [name, args, cwd] of [
    ['promtool check config', ['check', 'config', file(F.prometheusConfig)]],
    ['promtool check rules', ['check', 'rules', file(F.rules)]],
    ['promtool test rules', ['test', 'rules', path.basename(F.ruleTests)], path.dirname(file(F.ruleTests))],
  ] as const) {
    const { exitCode, output } = await runPromtool(opts.promtool, args, cwd);
    steps.push({ name, ok: exitCode === 0 });
    if (exitCode !== 0) problems.push(`${name} failed:\n${output.trim()}`);
  }
  const rules = parseRuleFile(readFileSync(file(F.rules), 'utf8'));
  const expressions = rules.map((r): PromqlExpression => ({
    source: `alerts.yml: ${r.alert ?? r.record}`,
    expr: r.expr,
    kind: 'rule',
  }));
  type Datasources = { datasources?: Array<{ uid?: string; type?: string }> };
  const datasources = (parseYaml(readFileSync(file(F.datasources), 'utf8')) as Datasources).datasources;
  const uid = datasources?.find((d) => d.type === 'prometheus')?.uid ?? 'prometheus';
  const dashboards =
    opts.dashboardFiles ??
    readdirSync(file(F.dashboards))
      .filter((f) => f.endsWith('.json'))
      .map((f) => path.join(file(F.dashboards), f));
  for (const dashboard of dashboards) {
    const found = dashboardExpressions(JSON.parse(readFileSync(dashboard, 'utf8')), path.basename(dashboard), uid);
    expressions.push(...found.expressions);
    problems.push(...found.problems);
  }
  const parseErrors = await promtoolParseErrors(
    opts.promtool,
    expressions.filter((e) => e.kind === 'dashboard'),
  );
  const workers = typeof opts.scrapes.worker === 'string' ? [opts.scrapes.worker] : opts.scrapes.worker;
  const scrapes = { api: servedNames(opts.scrapes.api), worker: new Set(workers.flatMap((w) => [...servedNames(w)])) };
  if (scrapes.api.size === 0) problems.push('the API scrape has no metric family');
  if (scrapes.worker.size === 0) problems.push("the worker's scrape has no metric family");
  const names: ObservabilityReport['names'] = new Map();
  for (const e of expressions) {
    if (parseErrors.has(e)) {
      problems.push(`${e.source}: does not parse: ${parseErrors.get(e)}`);
      continue;
    }
    let read: string[] = [];
    try {
      read = metricNames(substituteGrafanaVariables(e.expr));
      if (read.length === 0) problems.push(`${e.source}: reads no metric`);
    } catch (error) {
      problems.push(`${e.source}: ${(error as Error).message}`);
    }
    for (const name of read) {
      const entry = names.get(name) ?? { source: nameSource(name, scrapes), usedBy: [] };
      names.set(name, { ...entry, usedBy: [...entry.usedBy, e.source] });
    }
  }
  for (const [name, { source, usedBy }] of names) {
    if (source === 'missing') problems.push(`${name}: in neither scrape; read by ${usedBy.join(', ')}`);
  }
  return { steps, expressions, names, problems };
}

/** The report as text: promtool steps, every metric name and its source, then the problems. */
export function formatReport(report: ObservabilityReport): string {
  const rows = [...report.names].sort(([a], [b]) => a.localeCompare(b));
  const width = Math.max(6, ...rows.map(([name]) => name.length));
  return [
    ...report.steps.map((s) => `${s.ok ? 'ok  ' : 'FAIL'}  ${s.name}`),
    `${report.expressions.length} PromQL expressions (${report.expressions.filter((e) => e.kind === 'rule').length} rules)`,
    '',
    ...rows.map(
      ([name, { source, usedBy }]) => `${name.padEnd(width)}  ${source.padEnd(10)}  read by ${usedBy.length}`,
    ),
    '',
    report.problems.length === 0
      ? `${rows.length} metric names, all served. No problem.`
      : `${report.problems.length} problem(s):\n${report.problems.map((p) => `  - ${p}`).join('\n')}`,
  ].join('\n');
}
