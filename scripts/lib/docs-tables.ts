/**
 * The documentation tables generated from the code: `npm run docs:tables` rewrites each section between its markers
 * in {@link SECTION_FILES}' documents; test/unit/docs-tables.spec.ts fails on a stale one. See docs/tables/.
 */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { msToNumber } from '@temporalio/common/lib/time.js';
import type { ActivityOptions } from '@temporalio/workflow';
import { markdownTable } from 'markdown-table';
import * as prettier from 'prettier';
import ts from 'typescript';
import { z } from 'zod';
import { STEPS } from '../../activities/index.js';
import type { StepDefinition } from '../../activities/kit/define.js';
import { registryPlan } from '../../activities/catalogue/plan.js';
import { PROVIDER_LIST } from '../../providers/index.js';
import { providerTaskQueue, type OperationDefinition } from '../../providers/kit/define.js';
import { providerVariableDocs } from '../../src/config/provider-config.js';
import { RETRY_PROFILES } from '../../workflows/activity-options.js';
import { PERMANENT_ERROR_TYPES } from '../../workflows/errors.js';
import {
  HTTP_TIMEOUT_CHECK_INTERVAL_MS,
  JSON_BODY_LIMIT_BYTES,
  JSON_BODY_MAX_DEPTH,
} from '../../src/common/api-limits.js';
import { registeredProblemTypes } from '../../src/common/problem-details.js';
// Each imported for its problem types' registration.
import '../../src/auth/auth-problems.js';
import '../../src/inventory/inventory-problems.js';
import '../../src/orders/order-problems.js';
import '../../src/returns/return-problems.js';
import { ATTENTION_RECHECK_MS } from '../../workflows/order-return.contract.js';
import { loadConfig } from '../../src/config/config.js';
import { IDEMPOTENCY_KEY_MAX_LENGTH } from '../../src/idempotency/idempotency-key.js';
import { MOVEMENTS_LIMIT } from '../../src/inventory/inventory.service.js';
import { METRICS, type MetricDefinition } from '../../src/metrics/metric-definitions.js';
import { ORDER_LIMITS } from '../../src/orders/create-order.dto.js';
import { ORDER_PAGE } from '../../src/orders/list-orders.dto.js';
import { CANCEL_LIMITS, RESOLUTION_LIMITS } from '../../src/orders/order-actions.dto.js';
import { PG_SESSION_LIMITS } from '../../src/prisma/prisma.js';
import * as temporalConstants from '../../src/temporal/temporal.constants.js';
import { HISTORY_EVENTS_LIMIT, REMEMBERED_UPDATES } from '../../workflows/order-fulfilment.contract.js';
import { repoRoot } from './env.js';

/** Documents whose code blocks show a file by reference (embedme: the block's first line `// <path>`). */
export const EMBED_FILES = ['docs/extending.md'] as const;

/** The document holding each generated section, in rendering order. */
export const SECTION_FILES = {
  steps: 'docs/guarantees.md',
  'retry-profiles': 'docs/guarantees.md',
  bounds: 'docs/guarantees.md',
  limits: 'docs/api.md',
  'problem-types': 'docs/api.md',
  metrics: 'docs/operations.md',
  providers: 'docs/configuration.md',
} as const;
export type GeneratedSection = keyof typeof SECTION_FILES;
export const GENERATED_SECTIONS = Object.keys(SECTION_FILES) as GeneratedSection[];

/** The documents generated into, each once. */
export const GENERATED_FILES: readonly string[] = [...new Set(Object.values(SECTION_FILES))].sort();

/** Absolute path of a file named from the repository's root. */
export const docPath = (file: string): string => path.join(repoRoot(), file);

/** The sections a document holds, in rendering order. */
export const sectionsOf = (file: string): GeneratedSection[] =>
  GENERATED_SECTIONS.filter((s) => SECTION_FILES[s] === file);

/** A section's opening and closing markers. */
export function markers(section: GeneratedSection): { start: string; end: string } {
  return {
    start: `<!-- generated:${section} (npm run docs:tables; do not edit by hand) -->`,
    end: `<!-- /generated:${section} -->`,
  };
}

/** `90 s`, `20 min`, `24 h`: hours from 2 h, minutes from 2 min, if whole; else seconds. */
export function formatDuration(ms: number): string {
  if (ms >= 7_200_000 && ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms >= 120_000 && ms % 60_000 === 0) return `${ms / 60_000} min`;
  return `${ms / 1000} s`;
}

const duration = (value: ActivityOptions['startToCloseTimeout']): string =>
  value === undefined ? '-' : formatDuration(msToNumber(value));

/**
 * Profile → sorted activities the workflows' sources call through `proxy(Local)Activities(profile)` proxies.
 * @throws Error when a proxy names no profile, or two proxies of one name have different ones.
 */
export function profileUsage(...sources: string[]): Map<string, string[]> {
  const proxies = new Map<string, { profile: string; local: boolean }>();
  const calls: Array<[proxy: string, activity: string]> = [];
  const visit = (node: ts.Node): void => {
    const init = ts.isVariableDeclaration(node) && node.initializer;
    const callee = init && ts.isCallExpression(init) && ts.isIdentifier(init.expression) ? init.expression.text : '';
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && /^proxy(Local)?Activities$/.test(callee)) {
      const arg = (node.initializer as ts.CallExpression).arguments[0];
      const spread = arg && ts.isObjectLiteralExpression(arg) ? arg.properties.find(ts.isSpreadAssignment) : undefined;
      const named = arg && ts.isIdentifier(arg) ? arg : spread?.expression;
      if (!named || !ts.isIdentifier(named))
        throw new Error(`proxyActivities for "${node.name.text}" names no retry profile`);
      const known = proxies.get(node.name.text)?.profile;
      if (known !== undefined && known !== named.text)
        throw new Error(`two proxies named "${node.name.text}" have different profiles (${known}, ${named.text})`);
      proxies.set(node.name.text, { profile: named.text, local: callee === 'proxyLocalActivities' });
    }
    const e = ts.isCallExpression(node) ? node.expression : undefined;
    if (e && ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression))
      calls.push([e.expression.text, e.name.text]);
    ts.forEachChild(node, visit);
  };
  for (const source of sources) visit(ts.createSourceFile('workflow.ts', source, ts.ScriptTarget.ES2022, true));
  const usage = new Map<string, string[]>();
  for (const [proxy, activity] of calls) {
    const p = proxies.get(proxy);
    if (p) addUsage(usage, p.profile, `${activity}${p.local ? ' (local activity)' : ''}`);
  }
  return usage;
}

/** Profile → sorted activities of the registry: each step's plan profile, each compensation's `compensation`. */
export function registryProfileUsage(steps: readonly StepDefinition[]): Map<string, string[]> {
  const usage = new Map<string, string[]>();
  for (const planned of registryPlan(steps).steps) {
    addUsage(usage, planned.retry, planned.kind !== 'provider' ? `${planned.name} (local activity)` : planned.name);
    if (planned.compensation) addUsage(usage, 'compensation', planned.compensation.name);
  }
  return usage;
}

function addUsage(usage: Map<string, string[]>, profile: string, ...activities: string[]): void {
  usage.set(profile, [...new Set([...(usage.get(profile) ?? []), ...activities])].sort());
}

/** The `steps` section: one row per step of the registry, in run order. */
export function renderSteps(steps: readonly StepDefinition[] = STEPS): string {
  const plan = registryPlan(steps);
  return table(
    ['#', 'Step (activity)', 'Phase', 'Runs as', 'Status it writes', 'Retry profile', 'Compensation', 'Idempotency'],
    steps.map((step, i) => {
      const planned = plan.steps[i]!;
      const runsAs =
        step.kind === 'provider'
          ? `\`${step.provider.name}\` provider call (\`${step.operation}\`), task queue \`${providerTaskQueue('<queue>', step.provider.name)}\``
          : step.kind === 'event'
            ? `bounded wait for the \`${step.event.name}\` event (${step.event.timeoutSetting ? `\`${step.event.timeoutSetting}\`` : `${step.event.timeoutMs} ms`}), then a local activity records it`
            : 'database transaction (local activity)';
      const idempotency =
        step.kind === 'provider'
          ? `claim first, key \`${step.key('<orderId>')}\``
          : step.kind === 'event'
            ? 'the first report recorded once (`order_events`)'
            : step.idempotency === 'recorded'
              ? 'result recorded once (`order_step_results`)'
              : `by nature: ${step.idempotency.byNature}`;
      return [
        String(i + 1),
        `\`${step.name}\``,
        step.phase,
        runsAs,
        `\`${planned.status}\``,
        `\`${planned.retry}\``,
        step.compensation ? `\`${step.compensation.name}\`` : '-',
        idempotency,
      ];
    }),
  );
}

/** The `providers` section: each provider's operations and limits, then its variables. */
export function renderProviders(): string {
  const providers = table(
    ['Provider', 'Operations', 'Calls per second (all workers)', 'Concurrent calls per worker'],
    PROVIDER_LIST.map((p) => [
      `\`${p.name}\` (${p.title})`,
      (Object.values(p.operations) as OperationDefinition[]).map((o) => `\`${o.method} ${o.path}\``).join(', '),
      String(p.limits.callsPerSecond),
      String(p.limits.concurrentCallsPerWorker),
    ]),
  );
  const variables = table(
    ['Variable', 'Development default', 'Required in production', 'Meaning'],
    providerVariableDocs(PROVIDER_LIST).map((v) => [
      `\`${v.variable}\``,
      v.default,
      v.requiredInProduction ? 'yes (worker)' : 'no',
      v.description,
    ]),
  );
  return [providers, '', variables].join('\n');
}

const table = (headers: string[], rows: string[][]): string =>
  markdownTable(
    [headers, ...rows].map((r) => r.map((c) => c.replace(/\|/g, '\\|'))),
    { alignDelimiters: false },
  );

/** The `retry-profiles` section, from the registry and the workflows' sources. */
export function renderRetryProfiles(...workflowSources: string[]): string {
  const usage = registryProfileUsage(STEPS);
  for (const [profile, activities] of profileUsage(...workflowSources)) addUsage(usage, profile, ...activities);
  const rows = Object.entries(RETRY_PROFILES).map(([name, p]) => {
    const retry = p.retry ?? {};
    const initial = retry.initialInterval === undefined ? '1 s' : duration(retry.initialInterval);
    const backoff = `${initial} ×${retry.backoffCoefficient ?? 2}, max ${duration(retry.maximumInterval)}`;
    return [
      `\`${name}\``,
      (usage.get(name) ?? []).map((a) => a.replace(/^(\w+)/, '`$1`')).join(', ') || '(unused)',
      duration(p.startToCloseTimeout),
      duration('heartbeatTimeout' in p ? p.heartbeatTimeout : undefined),
      String(retry.maximumAttempts ?? '∞'),
      backoff,
      duration(p.scheduleToCloseTimeout),
    ];
  });
  return [
    table(['Profile', 'Used by', 'Start-to-close', 'Heartbeat', 'Attempts', 'Backoff', 'Schedule-to-close'], rows),
    '',
    `Non-retryable error types (every profile): ${PERMANENT_ERROR_TYPES.map((t) => `\`${t}\``).join(', ')}.`,
  ].join('\n');
}

/** The values docs/tables/ templates name (`{{NAME}}`, `{{GROUP.member}}`); `…Ms`/`…_MS` shown as durations. */
export function templateValues(): Record<string, unknown> {
  return {
    config: loadConfig({}),
    ...{ ORDER_LIMITS, ORDER_PAGE, CANCEL_LIMITS, RESOLUTION_LIMITS, PG_SESSION_LIMITS, MOVEMENTS_LIMIT },
    ...{ JSON_BODY_LIMIT_BYTES, JSON_BODY_LIMIT_KIB: JSON_BODY_LIMIT_BYTES / 1024, JSON_BODY_MAX_DEPTH },
    ...{ HTTP_TIMEOUT_CHECK_INTERVAL_MS, IDEMPOTENCY_KEY_MAX_LENGTH, REMEMBERED_UPDATES },
    ...temporalConstants, // WORKFLOW_START_TIMEOUT_MS, RETRY_UPDATE_TIMEOUT_MS, WORKER_RECOVERY_MS, ...
    HISTORY_EVENTS_LIMIT: HISTORY_EVENTS_LIMIT.toLocaleString('en'),
    COMPENSATION_ATTEMPTS: RETRY_PROFILES.compensation.retry?.maximumAttempts ?? '∞',
    COMPENSATION_SCHEDULE_TO_CLOSE: duration(RETRY_PROFILES.compensation.scheduleToCloseTimeout),
    RETURN_RECEIPT_TIMEOUT_MS: loadConfig({}).RETURN_RECEIPT_TIMEOUT,
    ATTENTION_RECHECK_MS,
  };
}

/** docs/tables/<name>.md, its leading comment dropped, `{{value}}`s filled. @throws Error naming an unknown value. */
export async function renderTemplate(name: string, values = templateValues()): Promise<string> {
  const text = await readFile(docPath(`docs/tables/${name}.md`), 'utf8');
  const rows = text
    .replace(/^<!--[\s\S]*?-->\s*/, '')
    .trim()
    .split('\n');
  return rows
    .map((row) => row.replace(/\s*\|\s*/g, ' | ').trim()) // Prettier's padding dropped
    .join('\n')
    .replace(/\{\{([\w.]+)\}\}/g, (_m, key: string) => {
      const value = key.split('.').reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], values);
      if (typeof value !== 'string' && typeof value !== 'number')
        throw new Error(`docs/tables/${name}.md: no value {{${key}}} in templateValues()`);
      return /(Ms|_MS)$/.test(key) ? formatDuration(Number(value)) : String(value);
    });
}

/** The `metrics` section: one row per metric family. */
export function renderMetrics(): string {
  const served = (m: MetricDefinition) => (m.process === 'api' ? 'API `GET /metrics`' : 'worker `:9464/metrics`');
  return table(
    ['Metric', 'Type', 'Labels', 'Served by', 'Meaning'],
    (Object.values(METRICS) as MetricDefinition[]).map((m) => [
      `\`${m.name}\``,
      m.type,
      m.labels.map((l) => `\`${l}\``).join(', '),
      served(m),
      m.help,
    ]),
  );
}

/** The `problem-types` section, by status then slug (registration follows import order). */
export function renderProblemTypes(): string {
  const slug = (uri: string) => uri.slice(uri.lastIndexOf('/') + 1);
  const types = [...registeredProblemTypes()].sort(
    (a, b) => (a.statuses[0] ?? 0) - (b.statuses[0] ?? 0) || slug(a.uri).localeCompare(slug(b.uri)),
  );
  return table(
    ['`type`', 'Status', 'Extension members', 'Headers', 'Meaning'],
    types.map((t) => [
      `\`${slug(t.uri)}\``,
      t.statuses.length > 0 ? t.statuses.join(', ') : 'any',
      Object.entries(t.extensions ?? {})
        .map(([name, schema]) => `\`${name}${z.safeParse(schema, undefined).success ? '?' : ''}\``)
        .join(', ') || '-',
      Object.keys(t.headers ?? {})
        .map((h) => `\`${h}\``)
        .join(', ') || '-',
      t.description,
    ]),
  );
}

/** Every section, rendered. */
export async function renderSections(): Promise<Record<GeneratedSection, string>> {
  const workflowFiles = (await readdir(docPath('workflows'))).filter((f) => f.endsWith('.ts')).sort();
  return {
    steps: renderSteps(),
    providers: renderProviders(),
    // Every workflow's own proxyActivities calls; the steps' profiles come from the registry.
    'retry-profiles': renderRetryProfiles(
      ...(await Promise.all(workflowFiles.map((f) => readFile(docPath(`workflows/${f}`), 'utf8')))),
    ),
    limits: await renderTemplate('limits'),
    'problem-types': renderProblemTypes(),
    bounds: await renderTemplate('bounds'),
    metrics: renderMetrics(),
  };
}

/** Replaces each section's body between its markers. @throws Error naming a section without them. */
export function replaceSections(
  text: string,
  sections: Partial<Record<GeneratedSection, string>>,
  file = 'the document',
): string {
  let out = text;
  for (const [section, body] of Object.entries(sections) as [GeneratedSection, string][]) {
    const { start, end } = markers(section);
    const from = out.indexOf(start);
    const to = out.indexOf(end);
    if (from < 0 || to < from) throw new Error(`${file} has no "${start}" ... "${end}" section`);
    out = `${out.slice(0, from + start.length)}\n\n${body}\n\n${out.slice(to)}`;
  }
  return out;
}

/** A document as `npm run docs:tables` writes it: its sections replaced, then Prettier-formatted. */
export async function renderDocument(
  file: string,
  text: string,
  sections?: Record<GeneratedSection, string>,
): Promise<string> {
  const all = sections ?? (await renderSections());
  const own = Object.fromEntries(sectionsOf(file).map((section) => [section, all[section]]));
  const replaced = replaceSections(text, own, file);
  const filepath = docPath(file);
  const options = (await prettier.resolveConfig(filepath)) ?? {};
  return prettier.format(replaced, { ...options, filepath });
}
