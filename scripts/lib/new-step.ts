/**
 * The step scaffold behind `npm run new:step -- <activityName> [--provider <name>] [--after <step>]`
 * (scripts/new-step.ts): writes a working step definition (activities/steps/<kebab>.step.ts), places it in the step
 * registry (activities/steps/index.ts) and, for a provider the registry does not know yet, writes a generic
 * notification provider (providers/<name>.provider.ts) and adds it to providers/index.ts. Nothing else changes:
 * the plan, the worker, the configuration, the simulator, the fakes, the API and the docs tables derive from the two
 * registries. See docs/extending.md.
 *
 * Everything is checked before anything is written: a taken name (a step, a compensation or one of the kit's
 * activities), an unknown `--after`, an invalid name or provider name, a taken status, an existing file are refused
 * with one line ({@link ScaffoldRefusal}) and no file changes.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as prettier from 'prettier';
import ts from 'typescript';
import { z } from 'zod';
import { createActivities, STEPS } from '../../activities/index.js';
import type { ActivityDeps } from '../../activities/ports.js';
import { PROVIDERS } from '../../providers/index.js';
import type { ProviderDefinition } from '../../providers/kit/define.js';
import { StepPhase } from '../../workflows/order-plan.js';

/** A request the scaffold refuses: one line for the author, nothing written. */
export class ScaffoldRefusal extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ScaffoldRefusal';
  }
}

/** What `new:step` was asked to do. */
export interface NewStepOptions {
  /** The activity name, camelCase verb + object (e.g. `sendShippingNotice`). */
  name: string;
  /** The provider the step calls (a provider step); absent: a database step. */
  provider?: string;
  /** The operation of an existing provider (default: its first). */
  operation?: string;
  /** The existing step the new one follows (default: the last). */
  after?: string;
  /** The status (default: derived from the name, e.g. `shipping_notice_sent`). */
  status?: string;
  /** The status's label (default: derived from the status, e.g. `Shipping notice sent`). */
  label?: string;
  /** Print what would be written, write nothing. */
  dryRun?: boolean;
  help?: boolean;
}

/** The usage text of `npm run new:step`. */
export const USAGE = `Usage: npm run new:step -- <activityName> [--provider <name>] [--operation <op>] [--after <step>]
                        [--status <snake_case>] [--label <text>] [--dry-run]

  <activityName>   camelCase verb + object, e.g. sendShippingNotice, awardLoyaltyPoints
  --provider       a provider step calling this provider (written as a new provider when it does not exist)
  --operation      the operation of an existing provider (default: its first)
  --after          place the step after this step (default: at the end)
  --status/--label the status the step writes and its label (default: derived from the name)
  --dry-run        print what would be written, write nothing`;

/**
 * Parses the command line of `new:step` (node:util parseArgs, strict).
 * @throws ScaffoldRefusal on an unknown option, a missing value, or not exactly one activity name.
 */
export function parseNewStepArgs(argv: readonly string[]): NewStepOptions {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        provider: { type: 'string' },
        operation: { type: 'string' },
        after: { type: 'string' },
        status: { type: 'string' },
        label: { type: 'string' },
        'dry-run': { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    throw new ScaffoldRefusal(err instanceof Error ? err.message : String(err));
  }
  const { values, positionals } = parsed;
  if (values.help) return { name: '', help: true };
  if (positionals.length !== 1) {
    throw new ScaffoldRefusal(
      positionals.length === 0
        ? 'give the activity name: npm run new:step -- <activityName> [--provider <name>] [--after <step>]'
        : `one activity name expected, got ${positionals.length}: ${positionals.join(' ')}`,
    );
  }
  return {
    name: positionals[0]!,
    ...(values.provider !== undefined ? { provider: values.provider } : {}),
    ...(values.operation !== undefined ? { operation: values.operation } : {}),
    ...(values.after !== undefined ? { after: values.after } : {}),
    ...(values.status !== undefined ? { status: values.status } : {}),
    ...(values.label !== undefined ? { label: values.label } : {}),
    ...(values['dry-run'] ? { dryRun: true } : {}),
  };
}

// ---- names -------------------------------------------------------------------------------------------------------

/** camelCase verb + object: a lower-case verb, then one or more capitalised words (acronyms as words: `sendSms`). */
const ACTIVITY_NAME = /^[a-z]+(?:[A-Z][a-z0-9]+)+$/;
/** What `defineProvider` accepts. */
const PROVIDER_NAME = /^[a-z][a-z0-9]*$/;
const STATUS = /^[a-z][a-z0-9_]*$/;
/** Statuses of the lifecycle that no step may take (activities/kit/define.ts). */
const LIFECYCLE_STATUSES = ['received', 'completed', 'attention_required', 'failed', 'cancelled', 'closed'];

/** Past participles of verbs the regular rule gets wrong (irregular, or a doubled last consonant). */
const PARTICIPLES: Readonly<Record<string, string>> = {
  bind: 'bound',
  build: 'built',
  buy: 'bought',
  cancel: 'cancelled',
  commit: 'committed',
  draw: 'drawn',
  drop: 'dropped',
  emit: 'emitted',
  find: 'found',
  get: 'got',
  give: 'given',
  hold: 'held',
  keep: 'kept',
  label: 'labelled',
  lay: 'laid',
  lend: 'lent',
  log: 'logged',
  make: 'made',
  pay: 'paid',
  plan: 'planned',
  put: 'put',
  read: 'read',
  refer: 'referred',
  run: 'run',
  sell: 'sold',
  send: 'sent',
  set: 'set',
  ship: 'shipped',
  shut: 'shut',
  spend: 'spent',
  split: 'split',
  stop: 'stopped',
  submit: 'submitted',
  sync: 'synced',
  tag: 'tagged',
  take: 'taken',
  tell: 'told',
  transfer: 'transferred',
  wrap: 'wrapped',
  write: 'written',
};

/** The regular rule is trusted for verbs that do not end consonant-vowel-consonant (where English may double). */
function regularParticiple(verb: string): string | undefined {
  if (verb.length < 3) return undefined;
  if (verb.endsWith('e')) return `${verb}d`;
  if (/[^aeiou]y$/.test(verb)) return `${verb.slice(0, -1)}ied`;
  if (/[^aeiou][aeiou][bdgklmnprt]$/.test(verb)) return undefined;
  return `${verb}ed`;
}

/** The third person of a verb, for the description: `send` → `sends`, `notify` → `notifies`, `push` → `pushes`. */
function thirdPerson(verb: string): string {
  if (/(s|x|z|ch|sh|o)$/.test(verb)) return `${verb}es`;
  if (/[^aeiou]y$/.test(verb)) return `${verb.slice(0, -1)}ies`;
  return `${verb}s`;
}

/** Everything the scaffold derives from an activity name. */
export interface StepNames {
  /** The activity name, e.g. `sendShippingNotice`. */
  name: string;
  /** `send-shipping-notice`: the file name and the idempotency key's prefix. */
  kebab: string;
  /** `SendShippingNotice`. */
  pascal: string;
  /** The verb, e.g. `send`. */
  verb: string;
  /** The object's words, lower case, e.g. `shipping notice`. */
  object: string;
  /** `shipping_notice_sent`, or `<name_snake>_done` for a verb whose participle is not known. */
  status: string;
  /** `Shipping notice sent`. */
  label: string;
  /** `Sends the shipping notice`. */
  sentence: string;
}

/**
 * Derives the step's file name, status, label and description from its activity name.
 * @throws ScaffoldRefusal when the name is not camelCase verb + object (or longer than 64 characters).
 */
export function deriveStepNames(name: string): StepNames {
  if (!ACTIVITY_NAME.test(name) || name.length > 64) {
    throw new ScaffoldRefusal(
      `${name} is not an activity name: camelCase verb + object, e.g. sendShippingNotice (acronyms as words: sendSms)`,
    );
  }
  const words = name.split(/(?=[A-Z])/).map((w) => w.toLowerCase());
  const [verb, ...objectWords] = words as [string, ...string[]];
  const participle = PARTICIPLES[verb] ?? regularParticiple(verb);
  const status = participle ? `${objectWords.join('_')}_${participle}` : `${words.join('_')}_done`;
  const object = objectWords.join(' ');
  return {
    name,
    kebab: words.join('-'),
    pascal: name.charAt(0).toUpperCase() + name.slice(1),
    verb,
    object,
    status,
    label: labelOf(status),
    sentence: `${capitalise(thirdPerson(verb))} the ${object}`,
  };
}

/** `shipping_notice_sent` → `Shipping notice sent`. */
export function labelOf(status: string): string {
  return capitalise(status.replace(/_/g, ' '));
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

// ---- the registry as the scaffold sees it -------------------------------------------------------------------------

/** A step of the registry, as far as the scaffold needs it. */
export interface RegistryStep {
  name: string;
  status: string;
  phase: StepPhase;
}

/** A provider of the registry: its key in `PROVIDERS`, and its operations' request schemas. */
export interface RegistryProvider {
  /** Its key in providers/index.ts' `PROVIDERS` (its name). */
  key: string;
  name: string;
  operations: Record<string, { request: z.ZodType }>;
}

/** The registries, read at run time (so the scaffold checks against what the worker would register). */
export interface RegistryView {
  /** The steps in registry order. */
  steps: RegistryStep[];
  /** Every activity name the worker registers: steps, compensations, the kit's and the retention activity. */
  activityNames: string[];
  providers: RegistryProvider[];
}

/** Dependencies nothing calls: {@link createActivities} only closes over them, so its activity names can be read. */
const INERT_DEPS = {
  db: {},
  providers: {},
  idempotencyRecords: { purgeExpired: () => Promise.resolve(0) },
  settings: { claimLeaseMs: 120_000 },
} as unknown as ActivityDeps;

/** The registries of this checkout (activities/steps/index.ts, providers/index.ts). */
export function loadRegistryView(): RegistryView {
  return {
    steps: STEPS.map((s) => ({ name: s.name, status: s.status, phase: s.phase })),
    activityNames: Object.keys(createActivities(INERT_DEPS)),
    providers: Object.entries(PROVIDERS as Record<string, ProviderDefinition>).map(([key, p]) => ({
      key,
      name: p.name,
      operations: Object.fromEntries(Object.entries(p.operations).map(([op, def]) => [op, { request: def.request }])),
    })),
  };
}

// ---- the plan of the change ---------------------------------------------------------------------------------------

/** One file the scaffold writes: `+` new, `~` changed. */
export interface ScaffoldFile {
  /** Path from the repository root, with `/`. */
  path: string;
  mark: '+' | '~';
  content: string;
}

/** What the scaffold will do. */
export interface ScaffoldPlan {
  names: StepNames;
  status: string;
  label: string;
  phase: StepPhase;
  kind: 'database' | 'provider';
  /** The step it follows (`--after`, or the last step). */
  after: string;
  /** Its 0-based position in the registry. */
  position: number;
  /** Whether it becomes the registry's last step (then it writes `completed`, not its own status). */
  last: boolean;
  provider?: { name: string; operation: string; created: boolean };
  /** The idempotency key pattern of a provider step, e.g. `send-shipping-notice:<orderId>`. */
  key?: string;
  files: ScaffoldFile[];
  /** Request members the scaffold could not fill from the order (the author must). */
  warnings: string[];
  /** What the author edits and runs next, one line each. */
  next: string[];
}

const STEPS_INDEX = 'activities/steps/index.ts';
const PROVIDERS_INDEX = 'providers/index.ts';

/**
 * Plans the scaffold of `options` in the checkout at `root` against the registries `view`: every check runs here,
 * nothing is written.
 * @throws ScaffoldRefusal naming the first problem.
 */
export function planScaffold(options: NewStepOptions, view: RegistryView, root: string): ScaffoldPlan {
  const names = deriveStepNames(options.name);
  const taken = new Set(view.activityNames);
  if (taken.has(names.name)) {
    const step = view.steps.some((s) => s.name === names.name);
    throw new ScaffoldRefusal(
      `${names.name} exists: it is ${step ? 'a step' : 'an activity (a compensation or one of the kit’s)'} of the registry`,
    );
  }
  if (options.provider !== undefined && !PROVIDER_NAME.test(options.provider)) {
    throw new ScaffoldRefusal(`provider name ${options.provider} is not [a-z][a-z0-9]* (e.g. sms, push2)`);
  }
  const stepFile = `activities/steps/${names.kebab}.step.ts`;
  if (existsSync(path.join(root, stepFile))) throw new ScaffoldRefusal(`${stepFile} exists: choose another name`);

  const afterIndex =
    options.after === undefined ? view.steps.length - 1 : view.steps.findIndex((s) => s.name === options.after);
  if (afterIndex < 0) {
    throw new ScaffoldRefusal(
      `--after ${options.after}: no such step (the steps: ${view.steps.map((s) => s.name).join(', ')})`,
    );
  }
  const position = afterIndex + 1;
  const pivotAt = view.steps.findIndex((s) => s.phase === StepPhase.Pivot);
  const phase = pivotAt >= 0 && position <= pivotAt ? StepPhase.BeforePivot : StepPhase.AfterPivot;

  const status = options.status ?? names.status;
  if (!STATUS.test(status)) throw new ScaffoldRefusal(`status ${status} is not snake_case`);
  const statusOwner = view.steps.find((s) => s.status === status);
  if (statusOwner || LIFECYCLE_STATUSES.includes(status)) {
    throw new ScaffoldRefusal(
      `status ${status} is taken (by ${statusOwner ? statusOwner.name : 'the order lifecycle'}): pass --status <another>`,
    );
  }
  const label = options.label ?? labelOf(status);

  const stepsIndex = readSource(root, STEPS_INDEX);
  const after = view.steps[afterIndex]!.name;
  const files: ScaffoldFile[] = [];
  const warnings: string[] = [];
  let provider: ScaffoldPlan['provider'];
  let stepSource: string;
  let key: string | undefined;

  if (options.provider === undefined) {
    if (options.operation !== undefined) throw new ScaffoldRefusal('--operation needs --provider');
    stepSource = databaseStepSource({ names, status, label, phase });
  } else {
    const existing = view.providers.find((p) => p.name === options.provider);
    let operation: string;
    let request: z.ZodType;
    let importPath: string;
    let importName: string;
    if (existing) {
      const operations = Object.keys(existing.operations);
      operation = options.operation ?? operations[0]!;
      if (!existing.operations[operation]) {
        throw new ScaffoldRefusal(
          `provider ${existing.name} has no operation ${operation} (it has: ${operations.join(', ')})`,
        );
      }
      request = existing.operations[operation]!.request;
      ({ importPath, importName } = providerImport(readSource(root, PROVIDERS_INDEX), existing.key));
    } else {
      if (options.operation !== undefined && options.operation !== NOTIFICATION_OPERATION) {
        throw new ScaffoldRefusal(
          `provider ${options.provider} is new: it gets one operation, ${NOTIFICATION_OPERATION} (drop --operation, rename it afterwards)`,
        );
      }
      const providerFile = `providers/${options.provider}.provider.ts`;
      if (existsSync(path.join(root, providerFile))) {
        throw new ScaffoldRefusal(
          `${providerFile} exists but is not a registered provider: add it to providers/index.ts, or choose another name`,
        );
      }
      operation = NOTIFICATION_OPERATION;
      request = NOTIFICATION_REQUEST;
      importPath = `./${options.provider}.provider.js`;
      importName = options.provider;
      const providersIndex = readSource(root, PROVIDERS_INDEX);
      files.push({ path: providerFile, mark: '+', content: notificationProviderSource(options.provider) });
      files.push({
        path: PROVIDERS_INDEX,
        mark: '~',
        content: addProviderToIndex(providersIndex, options.provider, importPath),
      });
    }
    provider = { name: options.provider, operation, created: !existing };
    key = `${names.kebab}:<orderId>`;
    const built = requestSource(request, names);
    warnings.push(...built.warnings.map((w) => `${stepFile}: ${w}`));
    stepSource = providerStepSource({
      names,
      status,
      label,
      phase,
      provider: { name: options.provider, operation, importName, importPath: `../../providers/${importPath.slice(2)}` },
      request: built,
    });
  }
  files.unshift(
    { path: stepFile, mark: '+', content: stepSource },
    {
      path: STEPS_INDEX,
      mark: '~',
      content: addStepToIndex(stepsIndex, view, names, `./${names.kebab}.step.js`, afterIndex),
    },
  );

  const next: string[] = [];
  if (provider?.created) {
    next.push(
      `providers/${provider.name}.provider.ts: the real API's path, request and answer schemas, its example, its limits (EDIT marks); the client, config variables, simulator, fake and generic tests follow`,
    );
  }
  next.push(
    `${stepFile}: the description and the ${provider ? 'request' : 'transaction'} (EDIT marks)`,
    `npm run docs:tables    (the steps table${provider?.created ? ' and the providers table' : ''} in docs/)`,
    'npm run typecheck && npm run lint',
    `npm run test:conformance    (the at-least-once battery runs ${names.name} with no test to write)`,
    provider
      ? `by hand: npm start, POST an order, then http://127.0.0.1:4010/${provider.name}/_sim/ledger/${names.kebab}:<orderId>`
      : 'by hand: npm start, POST an order, then its history in the Temporal UI (http://127.0.0.1:8233)',
  );
  return {
    names,
    status,
    label,
    phase,
    kind: provider ? 'provider' : 'database',
    after,
    position,
    last: position === view.steps.length,
    ...(provider ? { provider } : {}),
    ...(key ? { key } : {}),
    files,
    warnings,
    next,
  };
}

function readSource(root: string, file: string): string {
  try {
    return readFileSync(path.join(root, file), 'utf8');
  } catch {
    throw new ScaffoldRefusal(`${file} not found under ${root}: run new:step at the repository root`);
  }
}

// ---- registry edits (TypeScript's parser finds the places; prettier formats the result) ----------------------------

function parse(file: string, text: string): ts.SourceFile {
  return ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
}

/** Inserts `insert` at `at`. */
function splice(text: string, at: number, insert: string): string {
  return `${text.slice(0, at)}${insert}${text.slice(at)}`;
}

/** Inserts an import line among the file's relative imports, in module order (after the last that sorts before). */
function addImport(source: ts.SourceFile, text: string, line: string, specifier: string): string {
  const imports = source.statements.filter(ts.isImportDeclaration);
  const before = imports.filter(
    (d) => ts.isStringLiteral(d.moduleSpecifier) && d.moduleSpecifier.text.localeCompare(specifier) < 0,
  );
  const anchor = before.at(-1) ?? imports.at(-1);
  if (!anchor) return `${line}\n${text}`;
  if (before.length === 0) return splice(text, imports[0]!.getStart(source), `${line}\n`);
  return splice(text, anchor.getEnd(), `\n${line}`);
}

/**
 * activities/steps/index.ts with the step imported and placed right after the registry's step `afterIndex`.
 * @throws ScaffoldRefusal when the file already names the step, or its `validateSteps([...])` list is not one
 *   identifier per registered step.
 */
export function addStepToIndex(
  text: string,
  view: RegistryView,
  names: StepNames,
  specifier: string,
  afterIndex: number,
): string {
  const source = parse(STEPS_INDEX, text);
  let list: ts.ArrayLiteralExpression | undefined;
  const visit = (node: ts.Node): void => {
    if (
      ts.isCallExpression(node) &&
      ts.isIdentifier(node.expression) &&
      node.expression.text === 'validateSteps' &&
      node.arguments[0] &&
      ts.isArrayLiteralExpression(node.arguments[0])
    ) {
      list = node.arguments[0];
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  if (!list) throw new ScaffoldRefusal(`${STEPS_INDEX} has no validateSteps([...]) list to add the step to`);
  const elements = list.elements;
  if (elements.some((e) => ts.isIdentifier(e) && e.text === names.name) || text.includes(`'${specifier}'`)) {
    throw new ScaffoldRefusal(`${STEPS_INDEX} lists ${names.name} already`);
  }
  if (elements.length !== view.steps.length || !elements.every(ts.isIdentifier)) {
    throw new ScaffoldRefusal(
      `${STEPS_INDEX}: expected one identifier per registered step in validateSteps([...]) (${view.steps.length}), found ${elements.length} elements: place the step by hand`,
    );
  }
  const anchor = elements[afterIndex]!;
  const placed = splice(text, anchor.getEnd(), `, ${names.name}`);
  return addImport(parse(STEPS_INDEX, placed), placed, `import { ${names.name} } from '${specifier}';`, specifier);
}

/** The `PROVIDERS` object literal of providers/index.ts. */
function providersObject(source: ts.SourceFile): ts.ObjectLiteralExpression {
  for (const statement of source.statements) {
    if (!ts.isVariableStatement(statement)) continue;
    for (const decl of statement.declarationList.declarations) {
      if (!ts.isIdentifier(decl.name) || decl.name.text !== 'PROVIDERS' || !decl.initializer) continue;
      let init: ts.Expression = decl.initializer;
      while (ts.isSatisfiesExpression(init) || ts.isAsExpression(init) || ts.isParenthesizedExpression(init)) {
        init = init.expression;
      }
      if (ts.isObjectLiteralExpression(init)) return init;
    }
  }
  throw new ScaffoldRefusal(`${PROVIDERS_INDEX} has no PROVIDERS object literal`);
}

/**
 * providers/index.ts with the provider imported and added at the end of `PROVIDERS`.
 * @throws ScaffoldRefusal when `PROVIDERS` already has the name.
 */
export function addProviderToIndex(text: string, provider: string, specifier: string): string {
  const source = parse(PROVIDERS_INDEX, text);
  const object = providersObject(source);
  if (object.properties.some((p) => p.name && ts.isIdentifier(p.name) && p.name.text === provider)) {
    throw new ScaffoldRefusal(`${PROVIDERS_INDEX} lists ${provider} already`);
  }
  const last = object.properties.at(-1);
  const placed = last
    ? splice(text, last.getEnd(), `,\n  ${provider}`)
    : splice(text, object.getStart(source) + 1, `\n  ${provider},\n`);
  return addImport(parse(PROVIDERS_INDEX, placed), placed, `import { ${provider} } from '${specifier}';`, specifier);
}

/**
 * Where providers/index.ts imports the provider listed as `key` in `PROVIDERS` from: `./<file>.js` and the imported
 * name.
 * @throws ScaffoldRefusal when it cannot tell.
 */
function providerImport(text: string, key: string): { importPath: string; importName: string } {
  const source = parse(PROVIDERS_INDEX, text);
  const property = providersObject(source).properties.find(
    (p) => p.name && ts.isIdentifier(p.name) && p.name.text === key,
  );
  let local: string | undefined;
  if (property && ts.isShorthandPropertyAssignment(property)) local = property.name.text;
  if (property && ts.isPropertyAssignment(property) && ts.isIdentifier(property.initializer)) {
    local = property.initializer.text;
  }
  for (const decl of source.statements.filter(ts.isImportDeclaration)) {
    const bindings = decl.importClause?.namedBindings;
    if (!local || !bindings || !ts.isNamedImports(bindings) || !ts.isStringLiteral(decl.moduleSpecifier)) continue;
    const spec = bindings.elements.find((e) => e.name.text === local);
    if (spec) return { importPath: decl.moduleSpecifier.text, importName: (spec.propertyName ?? spec.name).text };
  }
  throw new ScaffoldRefusal(`cannot tell where ${PROVIDERS_INDEX} imports the provider ${key} from`);
}

// ---- the request of a provider step, built from the operation's schema ---------------------------------------------

/** The operation a new provider gets. */
export const NOTIFICATION_OPERATION = 'send';
/** The request of a new provider's `send` (the same schema the written provider file declares). */
export const NOTIFICATION_REQUEST = z.object({ to: z.string().min(1).max(320), text: z.string().min(1).max(1600) });

/** What a provider step's request may read of the stored order, as SQL select items. */
const COLUMNS = {
  customer_email: { sql: 'o.customer_email', type: 'string' },
  customer_name: { sql: 'o.customer_name', type: 'string | null' },
  currency: { sql: 'o.currency', type: 'string' },
  total_minor: { sql: 'o.total_minor', type: 'number' },
  created_at: { sql: 'o.created_at', type: 'Date' },
  line_count: {
    sql: '(SELECT count(*)::int FROM order_lines l WHERE l.order_id = o.id) AS line_count',
    type: 'number',
  },
  lines: {
    sql: `(SELECT json_agg(json_build_object('sku', l.sku, 'quantity', l.quantity, 'unitPriceMinor', l.unit_price_minor)
                              ORDER BY l.line_no)
              FROM order_lines l WHERE l.order_id = o.id) AS lines`,
    type: 'Array<{ sku: string; quantity: number; unitPriceMinor: number }> | null',
  },
} as const;
type Column = keyof typeof COLUMNS;

/** The request expression of a provider step and the order columns it reads. */
export interface RequestSource {
  /** An object literal expression over `orderId` and `order` (the row). */
  expression: string;
  columns: Column[];
  warnings: string[];
}

interface ZodDef {
  type: string;
  format?: string;
  shape?: Record<string, z.ZodType>;
  element?: z.ZodType;
  innerType?: z.ZodType;
  entries?: Record<string, string | number>;
  values?: unknown[];
  options?: z.ZodType[];
}

function defOf(schema: z.ZodType): ZodDef {
  return (schema as unknown as { _zod: { def: ZodDef } })._zod.def;
}

/**
 * The request of a provider step over `schema` (the operation's request): each required member filled from the
 * stored order by its name and type (an email → the customer's email, a datetime → when the order was placed, a
 * total → its total, items with a `sku` → its lines, a text → a sentence from the step's name, ...). Optional members
 * are left out. A member it cannot fill becomes a typed placeholder and a warning.
 */
export function requestSource(schema: z.ZodType, names: StepNames): RequestSource {
  const columns = new Set<Column>();
  const warnings: string[] = [];
  const use = (column: Column, expression: string) => {
    columns.add(column);
    return expression;
  };
  const phrase = capitalise(names.object);
  const value = (key: string, member: z.ZodType, where: string, line: boolean): string | undefined => {
    const def = defOf(member);
    const k = key.toLowerCase();
    switch (def.type) {
      case 'optional':
      case 'default':
      case 'prefault':
        return undefined;
      case 'nullable':
        return value(key, def.innerType!, where, line) ?? 'null';
      case 'string': {
        if (line && k === 'sku') return 'l.sku';
        if (def.format === 'email' || /^(to|email|recipient|address|customeremail)$/.test(k)) {
          return use('customer_email', 'order.customer_email');
        }
        if (def.format === 'datetime') return use('created_at', 'order.created_at.toISOString()');
        if (k.includes('currency')) return use('currency', 'order.currency');
        if (k.endsWith('name')) {
          columns.add('customer_email');
          return use('customer_name', 'order.customer_name ?? order.customer_email');
        }
        if (/subject|title/.test(k)) return `\`${phrase} for order \${orderId}\``;
        if (/text|body|message|content|note|description/.test(k)) {
          return use('line_count', `\`${phrase} for order \${orderId}: \${order.line_count} line(s).\``);
        }
        if (/(^|[a-z])(id|ref|reference)$/.test(k)) return 'orderId';
        warnings.push(`${where}: a string the order cannot fill by its name (orderId for now)`);
        return 'orderId';
      }
      case 'number':
      case 'int':
        if (line && /quantity|qty/.test(k)) return 'l.quantity';
        if (line && /price/.test(k)) return 'l.unitPriceMinor';
        if (/total|amount/.test(k)) return use('total_minor', 'order.total_minor');
        if (!/quantity|qty|count|lines|items/.test(k)) {
          warnings.push(`${where}: a number the order cannot fill by its name (the line count for now)`);
        }
        return use('line_count', 'order.line_count');
      case 'boolean':
        return 'false';
      case 'enum':
        return JSON.stringify(Object.values(def.entries!)[0]);
      case 'literal':
        return JSON.stringify(def.values![0]);
      case 'record':
        return '{}';
      case 'union':
        return value(key, def.options![0]!, where, line);
      case 'object':
        return objectOf(def.shape!, where, line);
      case 'array': {
        const element = defOf(def.element!);
        if (element.type === 'object' && element.shape && 'sku' in element.shape) {
          columns.add('lines');
          return `(order.lines ?? []).map((l) => (${objectOf(element.shape, `${where}[]`, true)}))`;
        }
        warnings.push(`${where}: a list the order cannot fill (empty for now)`);
        return '[]';
      }
      default:
        warnings.push(`${where}: a ${def.type} the scaffold cannot fill (a placeholder that fails validation)`);
        return 'undefined as never';
    }
  };
  const objectOf = (shape: Record<string, z.ZodType>, where: string, line: boolean): string => {
    const members = Object.entries(shape).flatMap(([key, member]) => {
      const v = value(key, member, where ? `${where}.${key}` : key, line);
      return v === undefined ? [] : [`${/^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(key)}: ${v}`];
    });
    return `{ ${members.join(', ')} }`;
  };
  const def = defOf(schema);
  if (def.type !== 'object' || !def.shape) {
    warnings.push('the request is not an object: write it by hand');
    return { expression: 'undefined as never', columns: [], warnings };
  }
  const expression = objectOf(def.shape, '', false);
  return { expression, columns: (Object.keys(COLUMNS) as Column[]).filter((c) => columns.has(c)), warnings };
}

// ---- the written files --------------------------------------------------------------------------------------------

const PHASE_CONSTANT: Record<StepPhase, string> = {
  [StepPhase.BeforePivot]: 'StepPhase.BeforePivot',
  [StepPhase.Pivot]: 'StepPhase.Pivot',
  [StepPhase.AfterPivot]: 'StepPhase.AfterPivot',
};

const PHASE_NOTE: Record<StepPhase, string> = {
  [StepPhase.BeforePivot]:
    'Before the pivot: a failure or a cancel halts the order and runs the compensations of the steps that acted, ' +
    'newest first. EDIT: if this step’s effect must be undone then, give it a `compensation` (reserve-inventory.step.ts ' +
    'has a database one; docs/extending.md shows a provider one).',
  [StepPhase.Pivot]: '',
  [StepPhase.AfterPivot]:
    'After the pivot: nothing compensates it; a failure for good (or an unknown outcome) waits for an operator, who ' +
    'retries it with the same key.',
};

/** A JSDoc block of `paragraphs` (empty ones dropped), each wrapped at 120 columns. */
function docComment(paragraphs: readonly string[]): string {
  const lines: string[] = [];
  for (const paragraph of paragraphs.filter((p) => p !== '')) {
    if (lines.length > 0) lines.push(' *');
    let line = '';
    for (const word of paragraph.split(' ')) {
      if (line !== '' && ` * ${line} ${word}`.length > 120) {
        lines.push(` * ${line}`);
        line = word;
      } else {
        line = line === '' ? word : `${line} ${word}`;
      }
    }
    if (line !== '') lines.push(` * ${line}`);
  }
  return ['/**', ...lines, ' */'].join('\n');
}

interface StepSourceInput {
  names: StepNames;
  status: string;
  label: string;
  phase: StepPhase;
}

/** A database step, `recorded`, whose transaction computes a number from the order under the lock. */
function databaseStepSource({ names, status, label, phase }: StepSourceInput): string {
  const field = names.object.replace(/ ([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
  return `${docComment([
    `${capitalise(names.verb)} the ${names.object}. EDIT: what the step does and what it writes, in a sentence or two.`,
    `A database step, \`recorded\`: the kit locks the order row (a final or halted order is refused), runs \`run\` in that transaction, writes the status \`${status}\` at the step's rank and records what \`run\` returns in \`order_step_results\`, all in one transaction. A re-run (a retry, a second worker, an operator retry) returns the recorded result without running the transaction again, so a plain INSERT or UPDATE is safe here.`,
    PHASE_NOTE[phase],
  ])}
import { defineDatabaseStep, StepPhase } from '../kit/define.js';
import { notFound } from '../kit/failures.js';

/** What ${names.name} returns (JSON): recorded once, returned again to every re-run. */
export interface ${names.pascal}Result {
  /** EDIT: what the step computes. The example: one per full 100 minor units of the order's total. */
  ${field}: number;
  /** The order's total it was computed from, in minor units. */
  totalMinor: number;
}

export const ${names.name} = defineDatabaseStep({
  name: '${names.name}',
  phase: ${PHASE_CONSTANT[phase]},
  status: '${status}',
  label: ${JSON.stringify(label)},
  description: ${JSON.stringify(`${names.sentence} of the order.`)},
  idempotency: 'recorded',
  summary: (order) => \`${names.object} for \${order.totalMinor} minor units\`,
  /**
   * EDIT: the step's work, in the kit's transaction (\`tx\`, the order row locked in it). Throwing rolls it all back.
   * Read with \`tx\`, never \`db\`: only reads in the transaction see what the lock protects.
   */
  async run({ orderId, tx }): Promise<${names.pascal}Result> {
    const [order] = await tx.$queryRaw<Array<{ total_minor: number }>>\`
      SELECT total_minor FROM orders WHERE id = \${orderId}::uuid\`;
    if (!order) throw notFound('order', orderId);
    // EDIT: write what the step does here, e.g. an INSERT into a table of your own (a migration adds it: see
    // docs/extending.md); the result below is what the activity returns and what the kit records.
    return { ${field}: Math.floor(order.total_minor / 100), totalMinor: order.total_minor };
  },
});
`;
}

interface ProviderStepSourceInput extends StepSourceInput {
  provider: { name: string; operation: string; importName: string; importPath: string };
  request: RequestSource;
}

/** A provider step: key from the work's identity, request from the stored order (one statement), no `record`. */
function providerStepSource(input: ProviderStepSourceInput): string {
  const { names, status, label, phase, provider, request } = input;
  const columns = request.columns.length > 0 ? request.columns : (['customer_email'] as Column[]);
  const rowType = columns.map((c) => `${c}: ${COLUMNS[c].type}`).join('; ');
  const select = columns.map((c) => COLUMNS[c].sql).join(',\n             ');
  const keyFn = `${names.name}Key`;
  const summaryUses = columns.includes('customer_email');
  return `${docComment([
    `${capitalise(names.verb)} the ${names.object}: the ${provider.name} provider's \`${provider.operation}\`, once per order. EDIT: what the step does and why, in a sentence or two.`,
    `A provider step: the kit claims the key \`${names.kebab}:<orderId>\` first (a \`side_effect_claims\` row), then calls the provider with it as \`Idempotency-Key\` on every attempt, and marks the claim \`sent\` with the provider's id and writes the status \`${status}\` in one statement. A definite refusal frees the claim; an unknown outcome keeps it for a retry with the same key.`,
    PHASE_NOTE[phase],
  ])}
import { ${provider.importName} } from '${provider.importPath}';
import { defineProviderStep, StepPhase } from '../kit/define.js';
import { notFound } from '../kit/failures.js';
${summaryUses ? "import { maskEmail } from '../kit/text.js';\n" : ''}
/** The idempotency key of an order's ${names.object}: the claim's key and the provider's \`Idempotency-Key\`. */
export function ${keyFn}(orderId: string): string {
  return \`${names.kebab}:\${orderId}\`;
}

export const ${names.name} = defineProviderStep({
  name: '${names.name}',
  phase: ${PHASE_CONSTANT[phase]},
  status: '${status}',
  label: ${JSON.stringify(label)},
  description: ${JSON.stringify(`${names.sentence} through the ${provider.name} provider.`)},
  provider: ${provider.importName},
  operation: '${provider.operation}',
  key: ${keyFn},
  summary: (order) => ${summaryUses ? `\`${names.object} to \${maskEmail(order.customerEmail)}\`` : `\`${names.object} (\${order.lines.length} lines)\``},
  /**
   * The request, from the stored order only (one statement): every attempt sends the identical body for the key.
   * EDIT: what the provider needs; never the clock or a random value here.
   */
  async request({ orderId, db }) {
    const [order] = await db.$queryRaw<Array<{ ${rowType} }>>\`
      SELECT ${select}
      FROM orders o WHERE o.id = \${orderId}::uuid\`;
    if (!order) throw notFound('order', orderId);
    return ${request.expression};
  },
  // No \`record\`: the claim keeps the provider's id. To keep the answer in a table of your own, add a \`record\`; it
  // runs in the transaction that marks the claim sent and writes the status, and must tolerate a second run:
  //   async record({ orderId, tx, answer }) {
  //     await tx.$executeRaw\`
  //       INSERT INTO my_table (order_id, provider_id) VALUES (\${orderId}::uuid, \${answer.providerId})
  //       ON CONFLICT (order_id) DO NOTHING\`;
  //   },
});
`;
}

/** A new provider: a generic notification API, `send` (POST /v1/messages { to, text } → { id, status }). */
function notificationProviderSource(name: string): string {
  const title = `${name.length <= 3 ? name.toUpperCase() : capitalise(name)} provider`;
  const env = name.toUpperCase();
  return `${docComment([
    `The ${title}: sends one message to a recipient (\`POST /v1/messages\`). In development the simulator plays it: 202 \`{ id: '${name}_<24 hex>', status: 'queued' }\`, one \`${name}.sent\` effect per new key.`,
    `EDIT: the real API's path, request and answer schemas (the client, the simulator and the test fake follow from them), its limits, and its settings if it needs any (e.g. a sender id: see email.provider.ts). Its variables are \`${env}_PROVIDER_URL\` and \`${env}_PROVIDER_API_KEY\`; its activities run on the task queue \`<queue>.${name}\`.`,
  ])}
import { z } from 'zod';
import { defineProvider } from './kit/define.js';

export const ${name} = defineProvider({
  name: '${name}',
  title: '${title}',
  limits: { callsPerSecond: 20, concurrentCallsPerWorker: 10 },
  operations: {
    ${NOTIFICATION_OPERATION}: {
      description: 'Sends one message; replays its first answer for a repeated key.',
      method: 'POST',
      path: '/v1/messages',
      request: z.object({
        /** The recipient's address on the channel (the order stores an email address and a name, no phone number). */
        to: z.string().min(1).max(320),
        text: z.string().min(1).max(1600),
      }),
      response: z.object({ id: z.string().min(1), status: z.string() }),
      providerId: (res) => res.id,
      simulate: ({ key, request, state, newId }) => {
        const message = {
          id: newId('${name}'),
          status: 'queued',
          idempotencyKey: key,
          createdAt: new Date().toISOString(),
          ...request,
        };
        state.set(message.id, message);
        return { status: 202, body: { id: message.id, status: message.status }, effect: '${name}.sent' };
      },
      example: {
        request: { to: 'ada@example.com', text: 'Your order is on its way.' },
        answer: { status: 202, body: { id: '${name}_0123456789abcdef01234567', status: 'queued' } },
      },
    },
  },
});
`;
}

// ---- formatting, writing, reporting --------------------------------------------------------------------------------

/**
 * Formats each file with prettier (the repository's configuration), so the output passes `prettier --check` as it is.
 * @returns the plan with formatted contents.
 */
export async function formatScaffold(plan: ScaffoldPlan, root: string): Promise<ScaffoldPlan> {
  const files = await Promise.all(
    plan.files.map(async (file) => {
      const filepath = path.join(root, file.path);
      const config = (await prettier.resolveConfig(filepath)) ?? {};
      return { ...file, content: await prettier.format(file.content, { ...config, filepath }) };
    }),
  );
  return { ...plan, files };
}

/** Writes the plan's files under `root`. */
export async function writeScaffold(plan: ScaffoldPlan, root: string): Promise<void> {
  for (const file of plan.files) {
    await mkdir(path.dirname(path.join(root, file.path)), { recursive: true });
    await writeFile(path.join(root, file.path), file.content);
  }
}

/** What `new:step` prints: the step, the files with their marks, the warnings, and what to edit and run next. */
export function describeScaffold(plan: ScaffoldPlan, written: boolean): string {
  const where = plan.provider
    ? `provider step: ${plan.provider.name}.${plan.provider.operation}${plan.provider.created ? ' (new provider)' : ''}, key ${plan.key}`
    : 'database step, recorded';
  const lines = [
    `${plan.names.name}: ${where}; ${plan.phase}, after ${plan.after}; status ${plan.status} (${plan.label})` +
      (plan.last ? '; as the last step of the plan it writes `completed` instead (docs/extending.md)' : ''),
    written ? 'wrote:' : 'would write (dry run):',
    ...plan.files.map((f) => `  ${f.mark} ${f.path}`),
    ...(plan.warnings.length > 0 ? ['check:', ...plan.warnings.map((w) => `  ! ${w}`)] : []),
    'next:',
    ...plan.next.map((n, i) => `  ${i + 1}. ${n}`),
  ];
  return lines.join('\n');
}

/**
 * `new:step` as a function: parses `argv`, plans against `view` (default: this checkout's registries), formats and
 * writes under `root`.
 * @returns the text to print.
 * @throws ScaffoldRefusal (nothing written).
 */
export async function runNewStep(
  argv: readonly string[],
  root: string,
  view: RegistryView = loadRegistryView(),
): Promise<string> {
  const options = parseNewStepArgs(argv);
  if (options.help) return USAGE;
  const plan = await formatScaffold(planScaffold(options, view, root), root);
  if (!options.dryRun) await writeScaffold(plan, root);
  return describeScaffold(plan, !options.dryRun);
}
