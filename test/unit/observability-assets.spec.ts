/**
 * observability/ (alert rules and their unit tests, the scrape config, the Grafana dashboard) and the checks of
 * `npm run check:observability` (scripts/lib/observability-check.ts): the metric-name extraction (the official
 * PromQL grammar), the exposition parser, the SDK's lazily created metrics, and whole runs of the check on the committed files and on broken dashboards, against scrapes built from
 * src/metrics/metric-definitions.ts. promtool is found or built (scripts/lib/observability-check.ts): a missing promtool fails
 * these tests, it never skips them (CI builds it before `npm test`).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import {
  dashboardExpressions,
  ensurePromtool,
  metricNames,
  nameSource,
  OBSERVABILITY_FILES,
  parseRuleFile,
  runObservabilityCheck,
  SDK_LAZY_METRICS,
  servedNames,
  substituteGrafanaVariables,
  variableExpression,
} from '../../scripts/lib/observability-check.js';
import { repoRoot } from '../../scripts/lib/env.js';
import { METRICS } from '../../src/metrics/metric-definitions.js';
import type { PromRule } from '../../scripts/lib/observability-check.js';

/** The anchors GitHub gives a Markdown document's headings (lower case, spaces to `-`, punctuation dropped). */
function headingAnchors(markdown: string): Set<string> {
  const unfenced = markdown.replace(/^(```|~~~)[\s\S]*?^\1/gm, '');
  return new Set(
    [...unfenced.matchAll(/^#{1,6}\s+(.*?)\s*#*\s*$/gm)].map((m) =>
      m[1]!
        .replace(/`/g, '')
        .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    ),
  );
}

/** What each alert must carry: severity critical|warning, summary, description, a runbook_url `<doc>#<heading>`. */
function alertProblems(rules: readonly PromRule[], runbookDoc: string, docs: string): string[] {
  const anchors = headingAnchors(docs);
  return rules.flatMap((rule) => {
    if (!rule.alert) return [];
    const at = `alert ${rule.alert}`;
    const [doc, anchor] = (rule.annotations.runbook_url ?? '').split('#');
    return [
      ...(['critical', 'warning'].includes(rule.labels.severity ?? '')
        ? []
        : [`${at}: label severity is ${rule.labels.severity ?? 'missing'}`]),
      ...['summary', 'description'].filter((k) => !rule.annotations[k]?.trim()).map((k) => `${at}: no ${k} annotation`),
      ...(doc !== runbookDoc || !anchor
        ? [`${at}: runbook_url ${rule.annotations.runbook_url ?? '(none)'} is not ${runbookDoc}#<anchor>`]
        : anchors.has(anchor)
          ? []
          : [`${at}: runbook_url ${doc}#${anchor}: ${runbookDoc} has no heading with the anchor #${anchor}`]),
    ];
  });
}

const ROOT = repoRoot();
const DASHBOARD = path.join(ROOT, OBSERVABILITY_FILES.dashboards, 'order-fulfilment.json');

describe('metricNames: the metric names a PromQL expression reads', () => {
  it.each([
    ['order_fulfilment_orders', ['order_fulfilment_orders']],
    [
      'histogram_quantile(0.95, sum by (le, activity) (rate(order_fulfilment_activity_duration_seconds_bucket{outcome="success"}[5m])))',
      ['order_fulfilment_activity_duration_seconds_bucket'],
    ],
    // label lists of by/without/on/ignoring/group_left, keywords, offsets, @, subqueries, numbers, strings, comments
    [
      'sum without (instance) (rate(a_total[5m:1m] offset 1h @ start())) / on (job) group_left (version) b > bool 1e-3 # c\n or inf',
      ['a_total', 'b'],
    ],
    [
      'max by (status) (delta(x{status="attention_required"}[15m])) > 0 and count_values("v", y) unless absent(up{job="order-api"})',
      ['up', 'x', 'y'],
    ],
    // a name that is also a function name elsewhere, quoted names (Prometheus 3), __name__ matchers
    ['rate(rate[5m]) + {__name__="by_name", a="b"} + {"dotted.name", c=~"d|e"}', ['by_name', 'dotted.name', 'rate']],
    ['label_replace(vector(1), "dst", "$1", "src", "(.*)") * time()', []],
  ])('%s', (expr, names) => {
    expect(metricNames(expr)).toEqual(names);
  });

  it('refuses a selector that picks names by a regular expression (it cannot be checked against a scrape)', () => {
    expect(() => metricNames('{__name__=~"temporal_.*"}')).toThrow(/name the metrics/);
  });

  it('refuses an expression that does not parse', () => {
    expect(() => metricNames('sum(rate(x[5m])')).toThrow(/does not parse/);
  });

  it('substitutes Grafana variables before reading', () => {
    const expr = substituteGrafanaVariables(
      'sum(rate(x{namespace=~"$namespace", q="${queue:regex}", r="[[old]]"}[$__rate_interval])) / $__range_s',
    );
    expect(expr).toBe('sum(rate(x{namespace=~".*", q=".*", r=".*"}[1m])) / 3600');
    expect(metricNames(expr)).toEqual(['x']);
  });

  it('reads the PromQL of template variable queries', () => {
    expect(variableExpression('label_values(temporal_num_pollers{namespace="x"}, task_queue)')).toBe(
      'temporal_num_pollers{namespace="x"}',
    );
    expect(variableExpression('query_result(topk(5, y))')).toBe('topk(5, y)');
    expect(variableExpression('label_values(namespace)')).toBeUndefined();
  });
});

describe('where a metric name comes from', () => {
  it('resolves a name: scrape first, then Prometheus, then the SDK metrics created at their first event', () => {
    const api = servedNames(
      '# TYPE h histogram\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n# TYPE c_total counter\nc_total 2\n',
    );
    const worker = servedNames('# TYPE temporal_num_pollers gauge\ntemporal_num_pollers 2\n');
    const scrapes = { api, worker };
    expect(nameSource('h_sum', scrapes)).toBe('api');
    expect(nameSource('c_total', scrapes)).toBe('api');
    expect(nameSource('temporal_num_pollers', scrapes)).toBe('worker');
    expect(nameSource('up', scrapes)).toBe('prometheus');
    expect(nameSource('temporal_workflow_failed', scrapes)).toBe('sdk');
    expect(nameSource('temporal_workflow_endtoend_latency_bucket', scrapes)).toBe('sdk');
    expect(SDK_LAZY_METRICS.has('temporal_workflow_failed_bucket')).toBe(false); // a counter has no buckets
    expect(nameSource('temporal_workflow_faild', scrapes)).toBe('missing');
    expect(nameSource('c_bucket', scrapes)).toBe('missing');
  });
});

describe('alerts and their runbooks', () => {
  const rules = parseRuleFile(readFileSync(path.join(ROOT, OBSERVABILITY_FILES.rules), 'utf8'));
  const docs = readFileSync(path.join(ROOT, OBSERVABILITY_FILES.runbooks), 'utf8');

  it('every alert has a severity, a summary, a description and a runbook heading in docs/operations.md', () => {
    expect(rules.filter((r) => r.alert).length).toBeGreaterThanOrEqual(12);
    expect(alertProblems(rules, OBSERVABILITY_FILES.runbooks, docs)).toEqual([]);
    expect(headingAnchors(docs).has('alerts')).toBe(true);
  });

  it('the check names an alert whose runbook heading is missing', () => {
    const without = docs.replace(/^### OrderStuckInStatus$/m, '### Something else');
    expect(alertProblems(rules, OBSERVABILITY_FILES.runbooks, without)).toEqual([
      'alert OrderStuckInStatus: runbook_url docs/operations.md#orderstuckinstatus: docs/operations.md has no heading with the anchor #orderstuckinstatus',
    ]);
  });

  it('every alert of alerts.yml has a firing and a quiet case in alerts.test.yml', () => {
    const tests = parseYaml(readFileSync(path.join(ROOT, OBSERVABILITY_FILES.ruleTests), 'utf8')) as {
      tests: Array<{ alert_rule_test?: Array<{ alertname: string; exp_alerts?: unknown[] }> }>;
    };
    const cases = tests.tests.flatMap((t) => t.alert_rule_test ?? []);
    for (const rule of rules.filter((r) => r.alert)) {
      const mine = cases.filter((c) => c.alertname === rule.alert);
      expect({ alert: rule.alert, fires: mine.some((c) => (c.exp_alerts ?? []).length > 0) }).toEqual({
        alert: rule.alert,
        fires: true,
      });
      expect({ alert: rule.alert, quiet: mine.some((c) => (c.exp_alerts ?? []).length === 0) }).toEqual({
        alert: rule.alert,
        quiet: true,
      });
    }
  });
});

/** A text exposition with one series of each family (a histogram's bucket, sum and count). */
function exposition(families: ReadonlyArray<{ name: string; type: string }>): string {
  return families
    .flatMap(({ name, type }) =>
      type === 'histogram'
        ? [`# TYPE ${name} histogram`, `${name}_bucket{le="+Inf"} 1`, `${name}_sum 1`, `${name}_count 1`]
        : [`# TYPE ${name} ${type}`, `${name} 1`],
    )
    .join('\n');
}

/** The API's scrape and the worker's, from the metric definitions and the SDK metrics a worker serves from the start. */
const SCRAPES = {
  api: exposition(Object.values(METRICS).filter((m) => m.process === 'api')),
  worker: exposition([
    ...Object.values(METRICS).filter((m) => m.process === 'worker'),
    ...[
      'temporal_num_pollers',
      'temporal_worker_task_slots_available',
      'temporal_worker_task_slots_used',
      'temporal_sticky_cache_size',
    ].map((name) => ({ name, type: 'gauge' })),
  ]),
};

describe('npm run check:observability on the committed files and on broken dashboards', () => {
  let promtool: string;
  let dir: string;

  beforeAll(async () => {
    promtool = await ensurePromtool((line) => process.stderr.write(`${line}\n`));
    dir = mkdtempSync(path.join(tmpdir(), 'observability-assets-'));
  }, 20 * 60_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** The committed dashboard with one more panel, written to a file of its own. */
  function dashboardWith(panel: Record<string, unknown>): string {
    const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: unknown[] };
    dashboard.panels.push({
      id: 9999,
      type: 'timeseries',
      title: 'Added',
      datasource: { type: 'prometheus', uid: 'prometheus' },
      gridPos: { h: 8, w: 8, x: 0, y: 200 },
      ...panel,
    });
    const file = path.join(dir, `dashboard-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(dashboard));
    return file;
  }

  it('passes: promtool checks and rule tests, every expression parses, every name is defined or SDK-declared', async () => {
    const report = await runObservabilityCheck({ promtool, root: ROOT, scrapes: SCRAPES });
    expect(report.problems).toEqual([]);
    expect(report.steps.map((s) => s.ok)).toEqual([true, true, true]);
    const dashboard = dashboardExpressions(JSON.parse(readFileSync(DASHBOARD, 'utf8')), 'order-fulfilment.json');
    expect(dashboard.problems).toEqual([]);
    expect(report.expressions.length).toBe(17 + dashboard.expressions.length); // 17 alert rules
    expect(report.names.get('temporal_workflow_task_execution_failed')?.source).toBe('sdk');
    expect(report.names.get('order_fulfilment_orders')?.source).toBe('api');
    expect(report.names.get('up')?.source).toBe('prometheus');
  });

  it('rejects a dashboard that reads a metric nobody serves', async () => {
    const file = dashboardWith({
      targets: [
        {
          refId: 'A',
          datasource: { type: 'prometheus', uid: 'prometheus' },
          expr: 'sum(rate(order_fulfilment_orders_shipped_total[$__rate_interval]))',
        },
      ],
    });
    const report = await runObservabilityCheck({ promtool, root: ROOT, dashboardFiles: [file], scrapes: SCRAPES });
    expect(report.problems).toHaveLength(1);
    expect(report.problems[0]).toMatch(
      /^order_fulfilment_orders_shipped_total: in neither scrape; read by .*"Added" A$/,
    );
    expect(report.names.get('order_fulfilment_orders_shipped_total')?.source).toBe('missing');
  });

  it('rejects a dashboard expression that does not parse, with promtool’s message', async () => {
    const file = dashboardWith({
      targets: [
        {
          refId: 'A',
          datasource: { type: 'prometheus', uid: 'prometheus' },
          expr: 'sum(rate(order_fulfilment_orders_accepted_total[$__rate_interval])',
        },
        {
          refId: 'B',
          datasource: { type: 'prometheus', uid: 'prometheus' },
          expr: 'rate(order_fulfilment_orders)',
        },
      ],
    });
    const report = await runObservabilityCheck({ promtool, root: ROOT, dashboardFiles: [file], scrapes: SCRAPES });
    expect(report.problems).toEqual([
      expect.stringMatching(/"Added" A: does not parse: .*unclosed left parenthesis/),
      expect.stringMatching(/"Added" B: does not parse: .*expected type range vector/),
    ]);
  });

  it('rejects a panel on another datasource', async () => {
    const file = dashboardWith({
      datasource: { type: 'prometheus', uid: 'some-other' },
      targets: [{ refId: 'A', expr: 'max(order_fulfilment_orders)' }],
    });
    const report = await runObservabilityCheck({ promtool, root: ROOT, dashboardFiles: [file], scrapes: SCRAPES });
    expect(report.problems).toEqual([
      expect.stringMatching(/"Added": datasource is not the provisioned Prometheus \(uid prometheus\)/),
    ]);
  });

  it('rejects scrapes that lack what the rules read (a wrong URL, or a stack without its worker)', async () => {
    const report = await runObservabilityCheck({ promtool, root: ROOT, scrapes: { api: SCRAPES.api, worker: '' } });
    expect(report.problems).toContain("the worker's scrape has no metric family");
    expect(
      report.problems.some((p) => p.startsWith('order_fulfilment_activity_failures_total: in neither scrape')),
    ).toBe(true);
  });
});

describe('the Prometheus scrape config', () => {
  it('scrapes the API and the workers under the job names the rules and the docs use', () => {
    const config = parseYaml(readFileSync(path.join(ROOT, OBSERVABILITY_FILES.prometheusConfig), 'utf8')) as {
      rule_files: string[];
      scrape_configs: Array<{ job_name: string; dns_sd_configs: Array<{ names: string[]; port: number }> }>;
    };
    expect(config.rule_files).toEqual(['alerts.yml']);
    const jobs = Object.fromEntries(config.scrape_configs.map((c) => [c.job_name, c.dns_sd_configs[0]]));
    expect(jobs['order-api']).toMatchObject({ names: ['api', 'api-cluster'], port: 3000 });
    expect(jobs['order-worker']).toMatchObject({ names: ['worker', 'worker-cluster'], port: 9464 });
  });
});
