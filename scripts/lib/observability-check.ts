/**
 * The checks behind `npm run check:observability` (scripts/check-observability.ts): the Prometheus rules, their
 * unit tests and the Grafana dashboards of observability/ against promtool and against what the service really
 * serves.
 *
 * 1. promtool: `check config` (prometheus.yml with its rule files), `check rules`, `test rules`.
 * 2. Every PromQL expression (each rule's `expr`, each dashboard target's `expr`, each template variable's query)
 *    parses: the dashboards' expressions, with Grafana's variables substituted ({@link substituteGrafanaVariables}),
 *    go into a temporary rule file of recording rules that `promtool check rules` parses.
 * 3. Every metric name an expression reads ({@link metricNames}) is a family of a live scrape of the API or the
 *    worker (a histogram's `_bucket`, `_sum` and `_count` included), a series Prometheus itself writes (`up`, ...),
 *    or a metric the Temporal SDK declares but creates only at its first event (`temporal_workflow_failed`, ...:
 *    read from the SDK's own source in node_modules, {@link sdkDeclaredMetrics}), so a typo never passes.
 * 4. Every alert has a `severity` label, a summary, a description and a `runbook_url` whose anchor is a heading of
 *    docs/operations.md; every dashboard panel and target uses the provisioned datasource (uid `prometheus`).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { runPromtool } from './promtool.js';

/** One PromQL expression and where it comes from. */
export interface PromqlExpression {
  /** Human-readable origin, e.g. `alerts.yml: TemporalNoPollers` or `order-fulfilment.json: "Pollers" A`. */
  source: string;
  /** The expression as written (Grafana variables not yet substituted). */
  expr: string;
  /** `rule`: already parsed by `promtool check rules` on its own file; `dashboard`: parsed through a temporary one. */
  kind: 'rule' | 'dashboard';
}

/** One rule of a Prometheus rule file. */
export interface PromRule {
  group: string;
  /** Alert name, or undefined for a recording rule. */
  alert?: string;
  record?: string;
  expr: string;
  for?: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

// ---------------------------------------------------------------------------------------------------------------
// Metric names in PromQL

/** Aggregation operators: followed by `(` or by `by`/`without`, never metric names. */
const AGGREGATORS = new Set([
  'sum',
  'avg',
  'min',
  'max',
  'group',
  'count',
  'count_values',
  'stddev',
  'stdvar',
  'topk',
  'bottomk',
  'quantile',
  'limitk',
  'limit_ratio',
]);
/** Keywords followed by a parenthesised list of label names (`by (le)`, `on (instance)`, `group_left (x)`). */
const LABEL_LIST_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right']);
/** Other keywords and literals that look like identifiers. */
const KEYWORDS = new Set(['and', 'or', 'unless', 'atan2', 'bool', 'offset', 'inf', 'nan']);

type Token =
  | { kind: 'ident'; text: string }
  | { kind: 'string'; text: string }
  | { kind: 'number' }
  | { kind: 'punct'; text: string };

/**
 * Splits a PromQL expression into tokens: identifiers, string literals (unquoted value), numbers and durations
 * (one token, e.g. `5m`, `0.95`, `1e3`, `0x1f`), punctuation and operators; `#` comments are dropped.
 * @throws Error on an unterminated string.
 */
function tokenize(expr: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < expr.length) {
    const c = expr[i]!;
    if (/\s/.test(c)) {
      i++;
    } else if (c === '#') {
      while (i < expr.length && expr[i] !== '\n') i++;
    } else if (c === '"' || c === "'" || c === '`') {
      let j = i + 1;
      let value = '';
      while (j < expr.length && expr[j] !== c) {
        if (expr[j] === '\\' && c !== '`') j++;
        value += expr[j] ?? '';
        j++;
      }
      if (j >= expr.length) throw new Error(`unterminated string at ${i + 1}: ${expr.slice(i, i + 20)}`);
      tokens.push({ kind: 'string', text: value });
      i = j + 1;
    } else if (/[0-9]/.test(c) || (c === '.' && /[0-9]/.test(expr[i + 1] ?? ''))) {
      // Numbers, hex, exponents and durations (5m, 1h30m) are one token: letters after a digit never start a name.
      let j = i + 1;
      while (j < expr.length && /[0-9a-zA-Z_.]/.test(expr[j]!)) {
        if (/[eE]/.test(expr[j]!) && /[+-]/.test(expr[j + 1] ?? '') && !/^0x/i.test(expr.slice(i, j))) j++;
        j++;
      }
      tokens.push({ kind: 'number' });
      i = j;
    } else if (/[a-zA-Z_:]/.test(c)) {
      let j = i + 1;
      while (j < expr.length && /[a-zA-Z0-9_:]/.test(expr[j]!)) j++;
      tokens.push({ kind: 'ident', text: expr.slice(i, j) });
      i = j;
    } else {
      const two = expr.slice(i, i + 2);
      const op = ['==', '!=', '>=', '<=', '=~', '!~'].includes(two) ? two : c;
      tokens.push({ kind: 'punct', text: op });
      i += op.length;
    }
  }
  return tokens;
}

/** The index just past the group that opens at `tokens[open]` (`(`, `{` or `[`), nesting included. */
function skipGroup(tokens: Token[], open: number): number {
  const pairs: Record<string, string> = { '(': ')', '{': '}', '[': ']' };
  const first = tokens[open];
  if (first?.kind !== 'punct' || !pairs[first.text]) return open + 1;
  let depth = 0;
  for (let i = open; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind !== 'punct') continue;
    if (pairs[t.text]) depth++;
    else if (Object.values(pairs).includes(t.text)) depth--;
    if (depth === 0) return i + 1;
  }
  return tokens.length;
}

/**
 * The metric names a PromQL expression reads, sorted and without duplicates: each vector selector's name (`foo`,
 * `foo{a="b"}`, `{__name__="foo"}`, Prometheus 3's quoted `{"foo", a="b"}`), but no function or aggregation name,
 * no label name (in matchers, `by`/`without`/`on`/`ignoring`/`group_left`/`group_right` lists), no keyword
 * (`and`, `or`, `unless`, `bool`, `offset`, `inf`, `nan`...), duration, number or string.
 * @throws Error when a selector picks names by a regular expression (`{__name__=~"..."}`): such a selector cannot
 *   be checked against a scrape, so the expression should name its metrics.
 */
export function metricNames(expr: string): string[] {
  const tokens = tokenize(expr);
  const names = new Set<string>();
  const next = (i: number): Token | undefined => tokens[i + 1];
  const isPunct = (t: Token | undefined, text: string): boolean => t?.kind === 'punct' && t.text === text;
  let i = 0;
  while (i < tokens.length) {
    const t = tokens[i]!;
    if (t.kind === 'punct' && t.text === '{') {
      const end = skipGroup(tokens, i);
      readMatchers(tokens.slice(i + 1, end - 1), names);
      i = end;
    } else if (t.kind === 'punct' && t.text === '[') {
      i = skipGroup(tokens, i); // a range or a subquery: durations only
    } else if (t.kind === 'ident') {
      const word = t.text;
      if (LABEL_LIST_KEYWORDS.has(word)) {
        i = isPunct(next(i), '(') ? skipGroup(tokens, i + 1) : i + 1;
      } else if (isPunct(next(i), '(')) {
        i++; // a function call or an aggregation: its arguments follow
      } else if (AGGREGATORS.has(word) && next(i)?.kind === 'ident' && LABEL_LIST_KEYWORDS.has(nextText(next(i)))) {
        i++; // `sum by (le) (...)`
      } else if (KEYWORDS.has(word.toLowerCase())) {
        i++;
      } else {
        names.add(word);
        i++;
      }
    } else {
      i++;
    }
  }
  return [...names].sort();
}

function nextText(t: Token | undefined): string {
  return t?.kind === 'ident' ? t.text : '';
}

/** Reads the inside of one `{...}`: `__name__="x"` and a bare quoted name add a metric name; the rest are labels. */
function readMatchers(inner: Token[], names: Set<string>): void {
  // Split on top-level commas: each part is `label op "value"` or a bare (quoted or not) metric name.
  const parts: Token[][] = [[]];
  for (const t of inner) {
    if (t.kind === 'punct' && t.text === ',') parts.push([]);
    else parts.at(-1)!.push(t);
  }
  for (const part of parts) {
    if (part.length === 0) continue;
    const [label, op, value] = part;
    if (part.length === 1 && (label?.kind === 'string' || label?.kind === 'ident')) {
      names.add(label.text); // Prometheus 3: {"metric.name", a="b"}
      continue;
    }
    const labelName = label?.kind === 'ident' || label?.kind === 'string' ? label.text : '';
    if (labelName !== '__name__') continue;
    const operator = op?.kind === 'punct' ? op.text : '';
    if (operator === '=' && value?.kind === 'string') names.add(value.text);
    else if (operator === '=~' || operator === '!~' || operator === '!=') {
      throw new Error(`a selector by __name__${operator}: name the metrics instead, so they can be checked`);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Grafana

/** Values Grafana's built-in interval and range variables get when an expression is checked. */
const GRAFANA_BUILTINS: Record<string, string> = {
  __rate_interval: '1m',
  __interval: '1m',
  __range: '1h',
  __interval_ms: '60000',
  __range_s: '3600',
  __range_ms: '3600000',
};

/**
 * An expression of a Grafana target or variable with every variable replaced, so promtool can parse it:
 * `$__rate_interval`, `$__interval`, `$__range` become durations (`1m`, `1m`, `1h`; `_s`/`_ms` variants numbers),
 * any other `$var`, `${var}`, `${var:format}` or `[[var]]` becomes `.*` (what "All" stands for in a regex matcher).
 */
export function substituteGrafanaVariables(expr: string): string {
  return expr.replace(
    /\$\{(\w+)(?::[^}]*)?\}|\$(\w+)|\[\[(\w+)(?::[^\]]*)?\]\]/g,
    (_match, braced?: string, bare?: string, old?: string) => GRAFANA_BUILTINS[braced ?? bare ?? old ?? ''] ?? '.*',
  );
}

/** A Grafana panel, as far as this check reads it. */
interface GrafanaPanel {
  id?: number;
  type?: string;
  title?: string;
  datasource?: { type?: string; uid?: string } | string | null;
  targets?: Array<{ refId?: string; expr?: string; datasource?: { type?: string; uid?: string } | string | null }>;
  panels?: GrafanaPanel[];
}

/** A Grafana dashboard, as far as this check reads it. */
interface GrafanaDashboard {
  uid?: string;
  title?: string;
  schemaVersion?: number;
  panels?: GrafanaPanel[];
  templating?: { list?: Array<{ name?: string; type?: string; query?: unknown; definition?: string }> };
}

/** Every panel of a dashboard, those inside collapsed rows included. */
function allPanels(panels: GrafanaPanel[] | undefined): GrafanaPanel[] {
  return (panels ?? []).flatMap((p) => [p, ...allPanels(p.panels)]);
}

/**
 * The PromQL of a template variable's query: the selector of `label_values(<selector>, label)`, the expression of
 * `query_result(<expr>)`, or nothing (`label_values(label)`, `metrics(...)`, `label_names()`, a custom list).
 */
export function variableExpression(query: string): string | undefined {
  const trimmed = query.trim();
  const labelValues = /^label_values\s*\(([\s\S]*),\s*[\w.]+\s*\)$/.exec(trimmed);
  if (labelValues) return labelValues[1]!.trim();
  const result = /^query_result\s*\(([\s\S]*)\)$/.exec(trimmed);
  if (result) return result[1]!.trim();
  return undefined;
}

/**
 * The PromQL expressions of a dashboard (every target's `expr`, every query variable's query) and its structural
 * problems: a dashboard without uid or title, a schemaVersion below 39 (Grafana 11), a panel or target whose
 * datasource is not the provisioned Prometheus (`{type: prometheus, uid}`), duplicate panel ids.
 * @param file the dashboard's file name, for the `source` of each expression.
 */
export function dashboardExpressions(
  dashboard: unknown,
  file: string,
  datasourceUid = 'prometheus',
): { expressions: PromqlExpression[]; problems: string[] } {
  const d = dashboard as GrafanaDashboard;
  const problems: string[] = [];
  const expressions: PromqlExpression[] = [];
  if (!d.uid) problems.push(`${file}: no uid`);
  if (!d.title) problems.push(`${file}: no title`);
  if (typeof d.schemaVersion !== 'number' || d.schemaVersion < 39) {
    problems.push(`${file}: schemaVersion ${String(d.schemaVersion)} (Grafana 11 and 12 write 39 and above)`);
  }
  const seenIds = new Set<number>();
  const usesDatasource = (ds: GrafanaPanel['datasource']): boolean =>
    typeof ds === 'object' && ds !== null && ds.type === 'prometheus' && ds.uid === datasourceUid;
  for (const panel of allPanels(d.panels)) {
    const where = `${file}: "${panel.title ?? `panel ${panel.id}`}"`;
    if (typeof panel.id === 'number') {
      if (seenIds.has(panel.id)) problems.push(`${where}: duplicate panel id ${panel.id}`);
      seenIds.add(panel.id);
    }
    if (panel.type === 'row' || panel.type === 'text') continue;
    if (!usesDatasource(panel.datasource)) {
      problems.push(`${where}: datasource is not the provisioned Prometheus (uid ${datasourceUid})`);
    }
    if (!panel.targets?.length) problems.push(`${where}: no query`);
    for (const target of panel.targets ?? []) {
      if (target.datasource !== undefined && !usesDatasource(target.datasource)) {
        problems.push(`${where} ${target.refId ?? ''}: datasource is not the provisioned Prometheus`);
      }
      if (typeof target.expr !== 'string' || !target.expr.trim()) {
        problems.push(`${where} ${target.refId ?? ''}: no expr`);
        continue;
      }
      expressions.push({ source: `${where} ${target.refId ?? ''}`.trim(), expr: target.expr, kind: 'dashboard' });
    }
  }
  for (const variable of d.templating?.list ?? []) {
    if (variable.type !== 'query') continue;
    const raw =
      typeof variable.query === 'string'
        ? variable.query
        : ((variable.query as { query?: unknown } | undefined)?.query ?? variable.definition);
    const expr = typeof raw === 'string' ? variableExpression(raw) : undefined;
    if (expr) expressions.push({ source: `${file}: variable $${variable.name ?? '?'}`, expr, kind: 'dashboard' });
  }
  return { expressions, problems };
}

// ---------------------------------------------------------------------------------------------------------------
// Rules

/**
 * The rules of a Prometheus rule file.
 * @throws Error when the text is not YAML with a `groups` list.
 */
export function parseRuleFile(text: string): PromRule[] {
  const doc = parseYaml(text) as { groups?: Array<{ name?: string; rules?: Array<Record<string, unknown>> }> };
  if (!Array.isArray(doc?.groups)) throw new Error('not a rule file: no groups');
  return doc.groups.flatMap((group) =>
    (group.rules ?? []).map((rule) => ({
      group: String(group.name ?? ''),
      alert: typeof rule.alert === 'string' ? rule.alert : undefined,
      record: typeof rule.record === 'string' ? rule.record : undefined,
      expr: String(rule.expr ?? ''),
      for: typeof rule.for === 'string' ? rule.for : undefined,
      labels: (rule.labels ?? {}) as Record<string, string>,
      annotations: (rule.annotations ?? {}) as Record<string, string>,
    })),
  );
}

/**
 * The anchors GitHub (and remark-validate-links) give the headings of a Markdown document: lower case, spaces to
 * `-`, punctuation other than `-` and `_` dropped.
 */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  let fenced = false;
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const text = heading[1]!.replace(/`/g, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1');
    anchors.add(
      text
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    );
  }
  return anchors;
}

/**
 * What each alert must carry: a `severity` label (critical or warning), `summary` and `description` annotations,
 * and a `runbook_url` `<runbookDoc>#<anchor>` whose anchor is a heading of that document.
 * @param docs the runbook document's Markdown.
 * @returns one line per problem; empty when every alert is complete.
 */
export function alertProblems(rules: readonly PromRule[], runbookDoc: string, docs: string): string[] {
  const anchors = headingAnchors(docs);
  const problems: string[] = [];
  for (const rule of rules) {
    if (!rule.alert) continue;
    const where = `alert ${rule.alert}`;
    if (!['critical', 'warning'].includes(rule.labels.severity ?? '')) {
      problems.push(`${where}: label severity is ${rule.labels.severity ?? 'missing'} (critical or warning)`);
    }
    for (const key of ['summary', 'description']) {
      if (!rule.annotations[key]?.trim()) problems.push(`${where}: no ${key} annotation`);
    }
    const runbook = rule.annotations.runbook_url ?? '';
    const [doc, anchor] = runbook.split('#');
    if (doc !== runbookDoc || !anchor) {
      problems.push(`${where}: runbook_url ${runbook || '(none)'} is not ${runbookDoc}#<anchor>`);
    } else if (!anchors.has(anchor)) {
      problems.push(`${where}: runbook_url ${runbook}: ${runbookDoc} has no heading with the anchor #${anchor}`);
    }
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------------------------
// What the service serves

/** The metric families of one Prometheus text exposition. */
export interface ScrapeCatalogue {
  /** Family name → type (`counter`, `gauge`, `histogram`, `summary`, `untyped`), from `# TYPE` lines. */
  families: Map<string, string>;
  /** Every sample name present (`foo_bucket`, `foo_total`, ...). */
  samples: Set<string>;
}

/** Reads the families and sample names of a Prometheus text exposition (format 0.0.4 or OpenMetrics). */
export function parseExposition(text: string): ScrapeCatalogue {
  const families = new Map<string, string>();
  const samples = new Set<string>();
  for (const line of text.split('\n')) {
    const type = /^#\s*TYPE\s+(\S+)\s+(\S+)/.exec(line);
    if (type) {
      families.set(type[1]!, type[2]!);
      continue;
    }
    if (!line.trim() || line.startsWith('#')) continue;
    const sample = /^([a-zA-Z_:][a-zA-Z0-9_:]*)/.exec(line);
    if (sample) samples.add(sample[1]!);
  }
  return { families, samples };
}

/** The sample names a family of this type exposes (a histogram: `_bucket`, `_sum`, `_count`). */
function sampleNamesOf(family: string, type: string): string[] {
  if (type === 'histogram') return [`${family}_bucket`, `${family}_sum`, `${family}_count`];
  if (type === 'summary') return [family, `${family}_sum`, `${family}_count`];
  if (type === 'counter') return family.endsWith('_total') ? [family] : [family, `${family}_total`];
  return [family];
}

/** Whether a name is a family, or a sample of a family, of this scrape. */
export function servesName(catalogue: ScrapeCatalogue, name: string): boolean {
  if (catalogue.samples.has(name)) return true;
  for (const [family, type] of catalogue.families) {
    if (sampleNamesOf(family, type).includes(name)) return true;
  }
  return false;
}

/** Series Prometheus writes itself for every target and alert (not in any scrape). */
export const PROMETHEUS_SERIES: ReadonlySet<string> = new Set([
  'up',
  'scrape_duration_seconds',
  'scrape_samples_scraped',
  'scrape_samples_post_metric_relabeling',
  'scrape_series_added',
  'ALERTS',
  'ALERTS_FOR_STATE',
]);

/** The SDK metrics the Temporal SDK declares (full names with the worker's `temporal_` prefix) and their kind. */
export type SdkMetrics = Map<string, 'histogram' | 'other'>;

/** Where @temporalio/core-bridge keeps the Rust source of the SDK core it ships. */
export function sdkCoreSourceDir(root: string): string {
  return path.join(root, 'node_modules', '@temporalio', 'core-bridge', 'sdk-core', 'crates');
}

/**
 * The metrics the Temporal SDK core declares, read from the Rust source that @temporalio/core-bridge ships
 * (`MetricParameters { name: ... }` in each crate's metrics.rs, test modules left out). The SDK creates a counter's
 * series only at its first event (`temporal_workflow_failed` before any workflow failed, ...), so a live scrape
 * cannot show them all; these declarations can.
 * @param prefix the worker's metric prefix (src/worker/worker-observability.ts: `temporal_`).
 * @returns an empty map when the source is not there.
 */
export function sdkDeclaredMetrics(crates: string, prefix = 'temporal_'): SdkMetrics {
  const declared: SdkMetrics = new Map();
  if (!existsSync(crates)) return declared;
  const files = readdirSync(crates, { recursive: true, encoding: 'utf8' })
    .filter((f) => /(^|[\\/])src[\\/].*metrics\.rs$/.test(f))
    .map((f) => path.join(crates, f));
  const texts = files.map((f) => readFileSync(f, 'utf8').split(/#\[cfg\(test\)\]\s*mod tests/)[0]!);
  const constants = new Map<string, string>();
  for (const text of texts) {
    for (const m of text.matchAll(/(?:const|static)\s+([A-Z0-9_]+)\s*:\s*&str\s*=\s*"([a-z0-9_]+)"/g)) {
      constants.set(m[1]!, m[2]!);
    }
  }
  for (const text of texts) {
    for (const m of text.matchAll(/([\w.]+)\s*\(\s*MetricParameters\s*\{\s*name:\s*(?:"([a-z0-9_]+)"|([A-Z0-9_]+))/g)) {
      const name = m[2] ?? constants.get(m[3] ?? '');
      if (!name) continue;
      declared.set(`${prefix}${name}`, /histogram/.test(m[1]!) ? 'histogram' : 'other');
    }
  }
  return declared;
}

/** Where a metric name was found. */
export type NameSource = 'api' | 'worker' | 'api+worker' | 'prometheus' | 'sdk-declared' | 'missing';

/**
 * Where a metric name an expression reads comes from: the API's or the worker's scrape (a histogram's suffixed
 * samples included), Prometheus itself, or the Temporal SDK's declarations (a `temporal_` metric the worker has not
 * created yet); `missing` otherwise.
 */
export function nameSource(
  name: string,
  scrapes: { api: ScrapeCatalogue; worker: ScrapeCatalogue },
  sdk: SdkMetrics,
): NameSource {
  const inApi = servesName(scrapes.api, name);
  const inWorker = servesName(scrapes.worker, name);
  if (inApi && inWorker) return 'api+worker';
  if (inApi) return 'api';
  if (inWorker) return 'worker';
  if (PROMETHEUS_SERIES.has(name)) return 'prometheus';
  if (sdk.get(name)) return 'sdk-declared';
  const histogram = /^(.*)_(bucket|sum|count)$/.exec(name);
  if (histogram && sdk.get(histogram[1]!) === 'histogram') return 'sdk-declared';
  return 'missing';
}

// ---------------------------------------------------------------------------------------------------------------
// Parsing with promtool

/**
 * Parses every expression with promtool: each one becomes a recording rule of its own group in a temporary rule
 * file that `promtool check rules` reads (Grafana variables substituted first).
 * @returns a map from each failing expression to promtool's message; empty when all parse.
 */
export async function promtoolParseErrors(
  promtool: string,
  expressions: readonly PromqlExpression[],
): Promise<Map<PromqlExpression, string>> {
  const errors = new Map<PromqlExpression, string>();
  if (expressions.length === 0) return errors;
  const dir = await mkdtemp(path.join(tmpdir(), 'check-observability-'));
  try {
    const file = path.join(dir, 'expressions.yml');
    const groups = expressions.map((e, i) => ({
      name: `e${i}`,
      rules: [{ record: `check:e${i}`, expr: substituteGrafanaVariables(e.expr) }],
    }));
    await writeFile(file, JSON.stringify({ groups }, null, 2)); // JSON is YAML
    const { exitCode, output } = await runPromtool(promtool, ['check', 'rules', file]);
    if (exitCode === 0) return errors;
    let matched = false;
    for (const m of output.matchAll(/group "e(\d+)", rule \d+, "[^"]*": (.*)/g)) {
      const expression = expressions[Number(m[1])];
      if (expression) {
        errors.set(expression, m[2]!);
        matched = true;
      }
    }
    if (!matched) throw new Error(`promtool check rules failed:\n${output}`);
    return errors;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The whole check

/** Where the checked files are, relative to the repository root. */
export const OBSERVABILITY_FILES = {
  prometheusConfig: 'observability/prometheus/prometheus.yml',
  rules: 'observability/prometheus/alerts.yml',
  ruleTests: 'observability/prometheus/alerts.test.yml',
  dashboards: 'observability/grafana/dashboards',
  datasources: 'observability/grafana/provisioning/datasources/prometheus.yml',
  runbooks: 'docs/operations.md',
} as const;

/** Inputs of {@link runObservabilityCheck}. */
export interface ObservabilityCheckOptions {
  /** promtool's path (scripts/lib/promtool.ts: ensurePromtool). */
  promtool: string;
  /** The folder holding observability/ and docs/ (the repository root). */
  root: string;
  /** Dashboard files to check; default every `.json` of observability/grafana/dashboards/. */
  dashboardFiles?: readonly string[];
  /** Prometheus text expositions: the API's `GET /metrics` and the worker's (several workers: concatenated). */
  scrapes: { api: string; worker: string };
  /** The SDK's declared metrics; default read from node_modules ({@link sdkDeclaredMetrics}). */
  sdkMetrics?: SdkMetrics;
}

/** One promtool step and its outcome. */
export interface CheckStep {
  name: string;
  ok: boolean;
  /** promtool's output (trimmed). */
  output: string;
}

/** Everything {@link runObservabilityCheck} found. */
export interface ObservabilityReport {
  steps: CheckStep[];
  /** Every expression checked, with the names it reads and promtool's parse error if any. */
  expressions: Array<{ expression: PromqlExpression; names: string[]; error?: string }>;
  /** Every metric name read, where it was found and which expressions read it. */
  names: Map<string, { source: NameSource; usedBy: string[] }>;
  /** One line per problem; empty when everything passed. */
  problems: string[];
}

/**
 * Runs every check of this module over the rule file, its tests, the Prometheus config and the dashboards, against
 * the given scrapes. Never throws for a problem it finds: each is a line of `problems`.
 */
export async function runObservabilityCheck(options: ObservabilityCheckOptions): Promise<ObservabilityReport> {
  const { promtool, root } = options;
  const file = (relative: string): string => path.join(root, relative);
  const problems: string[] = [];
  const steps: CheckStep[] = [];
  const promtoolStep = async (name: string, args: string[], cwd?: string): Promise<void> => {
    const { exitCode, output } = await runPromtool(promtool, args, cwd);
    steps.push({ name, ok: exitCode === 0, output: output.trim() });
    if (exitCode !== 0) problems.push(`${name} failed:\n${output.trim()}`);
  };
  const prometheusDir = path.dirname(file(OBSERVABILITY_FILES.rules));
  await promtoolStep('promtool check config (prometheus.yml and its rule files)', [
    'check',
    'config',
    file(OBSERVABILITY_FILES.prometheusConfig),
  ]);
  await promtoolStep('promtool check rules alerts.yml', ['check', 'rules', file(OBSERVABILITY_FILES.rules)]);
  await promtoolStep(
    'promtool test rules alerts.test.yml',
    ['test', 'rules', path.basename(OBSERVABILITY_FILES.ruleTests)],
    prometheusDir,
  );

  // Rules: parsed above by promtool; their names, labels and runbooks here.
  const expressions: PromqlExpression[] = [];
  let rules: PromRule[] = [];
  try {
    rules = parseRuleFile(readFileSync(file(OBSERVABILITY_FILES.rules), 'utf8'));
  } catch (error) {
    problems.push(`${OBSERVABILITY_FILES.rules}: ${(error as Error).message}`);
  }
  const rulesName = path.basename(OBSERVABILITY_FILES.rules);
  for (const rule of rules) {
    expressions.push({ source: `${rulesName}: ${rule.alert ?? rule.record ?? '?'}`, expr: rule.expr, kind: 'rule' });
  }
  problems.push(
    ...alertProblems(rules, OBSERVABILITY_FILES.runbooks, readFileSync(file(OBSERVABILITY_FILES.runbooks), 'utf8')),
  );

  // Dashboards and the datasource they name.
  const dashboardFiles =
    options.dashboardFiles ??
    readdirSync(file(OBSERVABILITY_FILES.dashboards))
      .filter((f) => f.endsWith('.json'))
      .map((f) => path.join(file(OBSERVABILITY_FILES.dashboards), f));
  if (dashboardFiles.length === 0) problems.push(`no dashboard in ${OBSERVABILITY_FILES.dashboards}`);
  const datasources = parseYaml(readFileSync(file(OBSERVABILITY_FILES.datasources), 'utf8')) as {
    datasources?: Array<{ uid?: string; type?: string }>;
  };
  const uid = datasources.datasources?.find((d) => d.type === 'prometheus')?.uid;
  if (!uid) problems.push(`${OBSERVABILITY_FILES.datasources}: no Prometheus datasource with a uid`);
  for (const dashboardFile of dashboardFiles) {
    let dashboard: unknown;
    try {
      dashboard = JSON.parse(readFileSync(dashboardFile, 'utf8'));
    } catch (error) {
      problems.push(`${path.basename(dashboardFile)}: not JSON (${(error as Error).message})`);
      continue;
    }
    const found = dashboardExpressions(dashboard, path.basename(dashboardFile), uid ?? 'prometheus');
    expressions.push(...found.expressions);
    problems.push(...found.problems);
  }

  // Parse (the dashboards' through promtool), then names against the scrapes.
  const parseErrors = await promtoolParseErrors(
    promtool,
    expressions.filter((e) => e.kind === 'dashboard'),
  );
  const scrapes = { api: parseExposition(options.scrapes.api), worker: parseExposition(options.scrapes.worker) };
  if (scrapes.api.families.size === 0) problems.push('the API scrape has no metric family');
  if (scrapes.worker.families.size === 0) problems.push("the worker's scrape has no metric family");
  const sdk = options.sdkMetrics ?? sdkDeclaredMetrics(sdkCoreSourceDir(root));
  const names: ObservabilityReport['names'] = new Map();
  const checked: ObservabilityReport['expressions'] = [];
  for (const expression of expressions) {
    const error = parseErrors.get(expression);
    if (error) problems.push(`${expression.source}: does not parse: ${error}`);
    let read: string[] = [];
    try {
      read = metricNames(substituteGrafanaVariables(expression.expr));
    } catch (nameError) {
      problems.push(`${expression.source}: ${(nameError as Error).message}`);
    }
    if (read.length === 0 && !error) problems.push(`${expression.source}: reads no metric`);
    for (const name of read) {
      const entry = names.get(name) ?? { source: nameSource(name, scrapes, sdk), usedBy: [] };
      entry.usedBy.push(expression.source);
      names.set(name, entry);
    }
    checked.push({ expression, names: read, ...(error ? { error } : {}) });
  }
  for (const [name, { source, usedBy }] of names) {
    if (source !== 'missing') continue;
    const hint =
      sdk.size === 0 && name.startsWith('temporal_')
        ? ` (and the SDK's declarations could not be read from ${path.relative(root, sdkCoreSourceDir(root))})`
        : '';
    problems.push(`${name}: in neither scrape${hint}; read by ${usedBy.join(', ')}`);
  }
  return { steps, expressions: checked, names, problems };
}

/** Human-readable description of each {@link NameSource}. */
const SOURCE_TEXT: Record<NameSource, string> = {
  api: 'API scrape',
  worker: 'worker scrape',
  'api+worker': 'API and worker scrapes',
  prometheus: 'Prometheus (per target)',
  'sdk-declared': 'SDK-declared, created at first event',
  missing: 'MISSING',
};

/** The report as text: the promtool steps, a table of every metric name read, the counts, then the problems. */
export function formatReport(report: ObservabilityReport): string {
  const lines: string[] = [];
  for (const step of report.steps) lines.push(`${step.ok ? 'ok  ' : 'FAIL'}  ${step.name}`);
  const byKind = (kind: PromqlExpression['kind']): number =>
    report.expressions.filter((e) => e.expression.kind === kind).length;
  const parsed = report.expressions.filter((e) => !e.error).length;
  lines.push(
    `${parsed === report.expressions.length ? 'ok  ' : 'FAIL'}  ${report.expressions.length} PromQL expressions ` +
      `parse (${byKind('rule')} rules, ${byKind('dashboard')} dashboard queries)`,
    '',
  );
  const rows = [...report.names.entries()].sort(([a], [b]) => a.localeCompare(b));
  const width = Math.max(6, ...rows.map(([name]) => name.length));
  const sourceWidth = Math.max(...Object.values(SOURCE_TEXT).map((s) => s.length));
  lines.push(`${'Metric'.padEnd(width)}  ${'Found in'.padEnd(sourceWidth)}  Read by`);
  lines.push(`${'-'.repeat(width)}  ${'-'.repeat(sourceWidth)}  -------`);
  for (const [name, { source, usedBy }] of rows) {
    const rulesCount = usedBy.filter((u) => u.startsWith(path.basename(OBSERVABILITY_FILES.rules))).length;
    const panels = usedBy.length - rulesCount;
    const readBy = [
      rulesCount ? `${rulesCount} rule${rulesCount > 1 ? 's' : ''}` : '',
      panels ? `${panels} dashboard quer${panels > 1 ? 'ies' : 'y'}` : '',
    ]
      .filter(Boolean)
      .join(', ');
    lines.push(`${name.padEnd(width)}  ${SOURCE_TEXT[source].padEnd(sourceWidth)}  ${readBy}`);
  }
  lines.push('');
  if (report.problems.length === 0) {
    lines.push(`${rows.length} metric names, all served; every alert has a runbook. No problem.`);
  } else {
    lines.push(`${report.problems.length} problem${report.problems.length > 1 ? 's' : ''}:`);
    for (const problem of report.problems) lines.push(`  - ${problem}`);
  }
  return lines.join('\n');
}
