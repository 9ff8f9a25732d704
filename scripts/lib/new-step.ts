/**
 * `npm run new:step`: a step template (scripts/templates/) filled in and placed in the catalogue (and, for a new
 * provider, the provider template and its registry lines), judged by the registry's own rules before anything is
 * written. See docs/extending.md.
 */
import { existsSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { parseArgs } from 'node:util';
import * as prettier from 'prettier';
import { StepPhase, validateSteps, type StepDefinition } from '../../activities/kit/define.js';
import { STEPS } from '../../activities/steps/index.js';
import { PROVIDERS } from '../../providers/index.js';
import { defineProvider, type ProviderDefinition } from '../../providers/kit/define.js';

/** A request the scaffold refuses: one line for the author, nothing written. */
export class ScaffoldRefusal extends Error {
  override name = 'ScaffoldRefusal';
}

/** The usage text (docs/extending.md explains each option). */
export const USAGE = `Usage: npm run new:step -- <activityName> [--provider <name> [--operation <op>]]
         [--before <step> | --after <step>] [--status <snake_case>] [--label <text>] [--dry-run]`;

const TEMPLATES = path.join(import.meta.dirname, '../templates');
const IMPORT_MARKER = '// new:step inserts imports above this line.';
const CATALOGUE_MARKER = '// new:step inserts entries above this line.';
const CATALOGUE_FILE = 'activities/catalogue/steps.ts';
const ENTRY_MARKER = /^( *)\/\/ new:step inserts (steps|providers) above this line/m;

/** One file the scaffold writes: `+` new, `~` changed. */
export type ScaffoldFile = { path: string; mark: '+' | '~'; content: string };

/** The registries a scaffold is judged against (default: this checkout's). */
export type Registries = { steps: readonly StepDefinition[]; providers: Readonly<Record<string, ProviderDefinition>> };

function parse(argv: readonly string[]) {
  const text = { type: 'string' } as const;
  const options = { provider: text, operation: text, before: text, after: text, status: text, label: text };
  const flags = { 'dry-run': { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } as const;
  return refuseOnError(() => parseArgs({ args: [...argv], allowPositionals: true, options: { ...options, ...flags } }));
}

function refuseOnError<T>(run: () => T): T {
  try {
    return run();
  } catch (err) {
    throw new ScaffoldRefusal((err as Error).message.replace(/\n\s*/g, ' '));
  }
}

/**
 * Plans the scaffold of `argv` under `root`, writing nothing. @returns the formatted files and the report.
 * @throws ScaffoldRefusal (one line).
 */
export async function planNewStep(
  argv: readonly string[],
  root: string,
  { steps, providers }: Registries = { steps: STEPS, providers: PROVIDERS },
): Promise<{ files: ScaffoldFile[]; report: string[] }> {
  const { values: o, positionals } = parse(argv);
  if (positionals.length !== 1) throw new ScaffoldRefusal(`give one activity name (got ${positionals.length})`);
  const name = positionals[0]!;
  const words = name.split(/(?=[A-Z])/).map((w) => w.toLowerCase());
  const [kebab, stepFile] = [words.join('-'), `activities/steps/${words.join('-')}.step.ts`];
  const status = o.status ?? `${words.join('_')}_done`;
  const label = o.label ?? `${status.charAt(0).toUpperCase()}${status.slice(1).replaceAll('_', ' ')}`;
  const guessed = o.status === undefined ? [`the status ${status} and its label (plain defaults: --status)`] : [];
  if (o.status !== undefined && o.label === undefined) guessed.push(`the label "${label}" (from the status: --label)`);
  if (o.before !== undefined && o.after !== undefined) throw new ScaffoldRefusal('give --before or --after, not both');
  const anchor = o.before ?? o.after;
  const found = steps.findIndex((s) => s.name === anchor);
  if (anchor !== undefined && found < 0) throw new ScaffoldRefusal(`no step ${anchor} (${steps.map((s) => s.name)})`);
  const position = anchor === undefined ? steps.length : found + (o.after === undefined ? 0 : 1);
  const before = position <= steps.findIndex((s) => s.phase === StepPhase.Pivot);
  const phase = before ? StepPhase.BeforePivot : StepPhase.AfterPivot;
  const tokens: Record<string, string> = { name, kebab, status, label, phase: before ? 'BeforePivot' : 'AfterPivot' };
  const stub = { name, phase, status, label, description: '' };
  const [files, toWrite]: [ScaffoldFile[], string[]] = [[], []];
  let step: StepDefinition = { ...stub, kind: 'database', idempotency: 'recorded', run: unused };
  if (o.provider === undefined) {
    if (o.operation !== undefined) throw new ScaffoldRefusal('--operation needs --provider');
    toWrite.push(`${stepFile}: the step's work in run (the template records the order's total)`);
  } else {
    let provider = providers[o.provider];
    const providerFile = `providers/${o.provider}.provider.ts`;
    if (provider && !existsSync(path.join(root, providerFile))) {
      throw new ScaffoldRefusal(`${providerFile} not found: the step template imports ${o.provider} from there`);
    } else if (!provider) {
      if (existsSync(path.join(root, providerFile))) throw new ScaffoldRefusal(`${providerFile} exists, unregistered`);
      const limits = { callsPerSecond: 1, concurrentCallsPerWorker: 1 };
      const name = o.provider;
      provider = refuseOnError(() => defineProvider({ name, title: '', limits, operations: { send: {} as never } }));
      const Provider = `${o.provider.charAt(0).toUpperCase()}${o.provider.slice(1)}`;
      const vars = { provider: o.provider, Provider, PROVIDER: o.provider.toUpperCase() };
      const line = [`import { ${o.provider} } from './${o.provider}.provider.js';`, `${o.provider},`] as const;
      files.push({ path: providerFile, mark: '+', content: fill('provider.ts.tmpl', vars) });
      files.push(registryLine(root, 'providers/index.ts', IMPORT_MARKER, ...line));
      guessed.push(`${providerFile}: a template (a notification API): its title, path, schemas, example, limits`);
    }
    const operations = Object.keys(provider.operations);
    const operation = o.operation ?? (operations.length === 1 ? operations[0]! : '');
    if (!operation) throw new ScaffoldRefusal(`${o.provider} has several operations: --operation ${operations}`);
    Object.assign(tokens, { provider: o.provider, operation });
    step = { ...stub, kind: 'provider', provider, operation, key: String, request: unused };
    if (files.length > 0) {
      tokens.request = `to: order.customerEmail, text: \`${label}: order \${orderId}\``;
      guessed.push(`${stepFile}: its request (the customer's email as to, a sentence as text)`);
    } else {
      const shape = (provider.operations[operation]?.request as { shape?: object } | undefined)?.shape ?? {};
      const members = Object.keys(shape).join(', ');
      tokens.request = `\n// EDIT: ${members}\n`;
      toWrite.push(`${stepFile}: the request of ${o.provider}.${operation} (${members}): it compiles once written`);
    }
  }
  tokens.description = o.provider === undefined ? `${label}.` : `${label} (${o.provider}.${tokens.operation}).`;
  guessed.push(`${CATALOGUE_FILE}: its description "${tokens.description}"`);
  refuseOnError(() => validateSteps([...steps.slice(0, position), step, ...steps.slice(position)]));
  if (existsSync(path.join(root, stepFile))) throw new ScaffoldRefusal(`${stepFile} exists: choose another name`);
  const kind = o.provider === undefined ? 'database' : 'provider';
  const entry = `\n${fill(`${kind}.entry.ts.tmpl`, tokens).trimEnd()}`;
  files.unshift({ path: stepFile, mark: '+', content: fill(`${kind}.step.ts.tmpl`, tokens) });
  files.splice(1, 0, registryLine(root, CATALOGUE_FILE, CATALOGUE_MARKER, entry, `${name},`, o.before, o.after));
  const what =
    o.provider === undefined ? 'a database step' : `a provider step calling ${o.provider}.${tokens.operation}`;
  const report = [
    `${name}: ${what}, ${phase}, step ${position + 1} of ${steps.length + 1}; status ${status} (${label})` +
      (position === steps.length ? '; as the last step it writes completed instead' : ''),
    ...[o['dry-run'] ? 'would write (dry run):' : 'wrote:', ...files.map((f) => `  ${f.mark} ${f.path}`)],
    ...(toWrite.length > 0 ? ['to write (EDIT):', ...toWrite.map((w) => `  - ${w}`)] : []),
    ...['guessed (check each):', ...guessed.map((g) => `  ! ${g}`)],
    'next: npm run docs:tables; npm run typecheck && npm run lint; npm run test:conformance',
  ];
  return { files: await Promise.all(files.map((f) => format(root, f))), report };
}

/** Plans, then writes under `root` (unless `--dry-run`). @returns the text to print. */
export async function runNewStep(argv: readonly string[], root: string, registries?: Registries): Promise<string> {
  const { values } = parse(argv);
  if (values.help) return USAGE;
  const { files, report } = await planNewStep(argv, root, registries);
  if (!values['dry-run']) for (const file of files) await writeFile(path.join(root, file.path), file.content);
  return report.join('\n');
}

/** A template with every `__token__` replaced (longest first: `__PROVIDER__` before `__provider__`). */
function fill(template: string, tokens: Record<string, string>): string {
  const sorted = Object.entries(tokens).sort(([a], [b]) => b.length - a.length);
  return sorted.reduce(
    (t, [k, v]) => t.replaceAll(`__${k}__`, v),
    readFileSync(path.join(TEMPLATES, template), 'utf8'),
  );
}

/** Registry `file` with `head` above `above`, and `entry` above its list's marker or next to a step's line. */
function registryLine(
  root: string,
  file: string,
  above: string,
  head: string,
  entry: string,
  before?: string,
  after?: string,
) {
  const text = readFileSync(path.join(root, file), 'utf8');
  const marker = ENTRY_MARKER.exec(text);
  if (!marker || !text.includes(above)) throw new ScaffoldRefusal(`${file} has no new:step markers`);
  const lines = text.replace(above, `${head}\n${above}`).split('\n');
  const anchor = before ?? after;
  const at =
    anchor === undefined
      ? lines.findIndex((l) => l.startsWith(marker[0]))
      : lines.findIndex((l) => l.trim() === `${anchor},`) + (after === undefined ? 0 : 1);
  if (anchor !== undefined && lines[at - (after === undefined ? 0 : 1)]?.trim() !== `${anchor},`) {
    throw new ScaffoldRefusal(`${file} has no line "${anchor},": place the step by hand`);
  }
  lines.splice(at, 0, `${marker[1]}${entry}`);
  return { path: file, mark: '~' as const, content: lines.join('\n') };
}

async function format(root: string, file: ScaffoldFile): Promise<ScaffoldFile> {
  const filepath = path.join(root, file.path);
  const config = await prettier.resolveConfig(filepath);
  return { ...file, content: await prettier.format(file.content, { ...config, filepath }) };
}

const unused = (): never => {
  throw new Error('never run');
};
