/**
 * `npm run check:extending`: applies the marked blocks of docs/extending.md (`<!-- ci: run|write <path>|patch -->`) to
 * a copy of HEAD, checks what each `new:step` reported, the docs tables, typecheck and lint, then `npm test` in the
 * copy with an e2e test of the added steps (docs/extending.md#what-ci-proves-with-these-examples). Options: `--keep`,
 * `--no-test`, `--exclude <glob>` (repeatable, left out of the copy's `npm test`). Exit 0 when every check passed.
 */
import { appendFile, chmod, mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs, stripVTControlCharacters } from 'node:util';
import { execa } from 'execa';
import { fromMarkdown } from 'mdast-util-from-markdown';
import { repoRoot, runMain } from './lib/env.js';
import { ensureTemporalCli } from './lib/temporal-cli.js';

/** `git <args>` in `cwd`: the lines of its output. */
const git = async (cwd: string, ...args: string[]): Promise<string[]> =>
  (await execa('git', args, { cwd })).stdout.split('\n').filter(Boolean);

/** The document whose examples this applies. */
export const EXTENDING_DOC = 'docs/extending.md';

/** One marked block of the document, with the `## ` section that holds it. */
export type ExampleAction = { section: string } & (
  { kind: 'run'; command: string } | { kind: 'write'; path: string; content: string } | { kind: 'patch'; diff: string }
);

/**
 * The marked blocks of a markdown document, in order: one `run` action per command (blank lines and `#` comments
 * skipped, a trailing `\\` joins the next line), one `write` or `patch` each. @throws Error for a marker without a fence.
 */
export function readExamples(markdown: string): ExampleAction[] {
  const nodes = fromMarkdown(markdown).children;
  const actions: ExampleAction[] = [];
  let section = '';
  nodes.forEach((node, i) => {
    const { start, end } = node.position!;
    if (node.type === 'heading' && node.depth === 2) section = markdown.slice(start.offset! + 3, end.offset).trim();
    const marker = node.type === 'html' ? /^<!-- ci: (run|patch|write) ?(\S*) -->$/.exec(node.value.trim()) : null;
    if (!marker) return;
    const block = nodes[i + 1];
    if (block?.type !== 'code')
      throw new Error(`${EXTENDING_DOC}:${start.line}: the marker is not followed by a fenced block`);
    if (marker[1] === 'write') actions.push({ section, kind: 'write', path: marker[2]!, content: `${block.value}\n` });
    if (marker[1] === 'patch') actions.push({ section, kind: 'patch', diff: `${block.value}\n` });
    if (marker[1] !== 'run') return;
    let pending = '';
    for (const raw of block.value.split('\n')) {
      const text = raw.trim();
      if (pending === '' && (text === '' || text.startsWith('#'))) continue;
      if (text.endsWith('\\')) {
        pending += `${text.slice(0, -1).trim()} `;
        continue;
      }
      actions.push({ section, kind: 'run', command: `${pending}${text}` });
      pending = '';
    }
  });
  return actions;
}

/** The arguments after `new:step --` of a command, when it is one (quoted arguments kept whole). */
export function newStepArguments(command: string): string[] | undefined {
  const match = /\bnpm run new:step -- (.*)$/.exec(command);
  return match ? [...match[1]!.matchAll(/"([^"]*)"|'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!) : undefined;
}

/** How one command ended. */
type Ran = { command: string; code: number; output: string };

/** Runs `command` with bash in `cwd`, its output streamed indented (`buffered`: printed at its end) and captured. */
async function run(
  command: string,
  cwd: string,
  env: NodeJS.ProcessEnv,
  input?: string,
  buffered = false,
): Promise<Ran> {
  const indent = (text: string) => `  │ ${text.replace(/\n(?=.)/g, '\n  │ ')}`;
  if (!buffered) console.log(`\n$ ${command}`);
  const started = performance.now();
  const child = execa(command, { shell: 'bash', cwd, env, all: true, reject: false, ...(input ? { input } : {}) });
  if (!buffered) child.all.on('data', (chunk: Buffer) => process.stdout.write(indent(chunk.toString())));
  const result = await child;
  const code = result.exitCode ?? 1;
  const all = String(result.all ?? '');
  if (buffered) console.log(`\n$ ${command}\n${all ? indent(`${all.trimEnd()}\n`) : ''}`);
  console.log(`  └ exit ${code} after ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return { command, code, output: stripVTControlCharacters(all) };
}

/** A failed check: its message is the one line CI prints. */
class CheckFailed extends Error {}
function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new CheckFailed(message);
}

/** The copy's working tree as a git tree (everything staged), to tell what an action changed. */
async function snapshot(dir: string): Promise<string> {
  await git(dir, 'add', '-A');
  return (await git(dir, 'write-tree'))[0]!;
}

/** A clean copy of `source`'s HEAD in a new world-readable temporary folder, node_modules linked in. @returns its path. */
async function copyRepository(source: string): Promise<string> {
  const parent = await mkdtemp(path.join(tmpdir(), 'check-extending-'));
  await chmod(parent, 0o755);
  const dir = path.join(parent, 'repo');
  const [head] = await git(source, 'rev-parse', 'HEAD');
  await git(source, 'clone', '--quiet', '--local', '--no-checkout', source, dir);
  await git(dir, 'checkout', '--quiet', '--detach', head!);
  await symlink(await realpath(path.join(source, 'node_modules')), path.join(dir, 'node_modules'), 'dir');
  // .gitignore's `node_modules/` matches a folder, not a link: keep the copy's status clean.
  await appendFile(path.join(dir, '.git/info/exclude'), '\nnode_modules\n');
  const dirty = await git(dir, 'status', '--porcelain', '--untracked-files=all');
  check(dirty.length === 0, `the copy is not clean: ${dirty.join(', ')}`);
  return dir;
}

/** What one example (a `## ` section of the document) changed, and the lines of it written by hand. */
type ExampleReport = { files: Set<string>; handWritten: number };

/** Runs the check. @returns the process's exit code. */
async function main(): Promise<number> {
  const [flag, list] = [{ type: 'boolean' }, { type: 'string', multiple: true }] as const;
  const options = { keep: flag, 'no-test': flag, exclude: list };
  const { values } = parseArgs({ options, strict: true });
  const started = performance.now();
  const source = repoRoot();
  const cli = await ensureTemporalCli();
  // Without npm's own variables (`npm run check:extending` sets npm_config_local_prefix and others to this checkout):
  // the commands run in the copy must find the copy's package.json.
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_'))),
    ...(cli ? { TEMPORAL_CLI_PATH: cli } : {}),
    NO_COLOR: '1',
    FORCE_COLOR: '0',
  };
  const copy = await copyRepository(source);
  console.log(`copy of HEAD: ${copy}`);
  const reports = new Map<string, ExampleReport>();
  let ok = false;
  try {
    check((await run('npx prisma generate', copy, env)).code === 0, 'npx prisma generate failed in the copy');
    const actions = readExamples(await readFile(path.join(copy, EXTENDING_DOC), 'utf8'));
    const added: string[] = [];
    check(actions.length > 0, `${EXTENDING_DOC}: no marked blocks (<!-- ci: run|write|patch -->)`);
    for (const action of actions) {
      const report = reports.get(action.section) ?? { files: new Set<string>(), handWritten: 0 };
      reports.set(action.section, report);
      const before = await snapshot(copy);
      if (action.kind === 'write') {
        await mkdir(path.dirname(path.join(copy, action.path)), { recursive: true });
        await writeFile(path.join(copy, action.path), action.content);
        report.handWritten += action.content.trimEnd().split('\n').length;
        console.log(`\nwrote ${action.path} (${action.content.trimEnd().split('\n').length} lines, from the document)`);
      } else if (action.kind === 'patch') {
        const applied = await run('git apply --verbose -', copy, env, action.diff);
        check(applied.code === 0, `a patch of "${action.section}" does not apply to what the scaffold wrote`);
        report.handWritten += action.diff.split('\n').filter((l) => l.startsWith('+') && !l.startsWith('+++')).length;
      } else {
        const result = await run(action.command, copy, env);
        check(result.code === 0, `\`${action.command}\` (from ${EXTENDING_DOC}) failed in the copy`);
        const args = newStepArguments(action.command);
        if (args) {
          const changed = await git(copy, 'diff', '--name-only', before, await snapshot(copy));
          const reported = [...result.output.matchAll(/^\s+[+~] (\S+)$/gm)].map((m) => m[1]!);
          check(
            [...changed].sort().join() === [...reported].sort().join(),
            `new:step changed ${changed.join(', ')} but reported ${reported.join(', ')}`,
          );
          check(changed.length <= (args.includes('--provider') ? 4 : 2), `new:step changed ${changed.length} files`);
          added.push(args[0]!);
        }
      }
      for (const file of await git(copy, 'diff', '--name-only', before, await snapshot(copy))) report.files.add(file);
    }
    check(added.length > 0, `${EXTENDING_DOC}: no \`npm run new:step -- ...\` command in a marked block`);
    const checks = [
      ['the docs tables and the files shown by reference', 'npm run docs:tables -- --check'],
      ['the typecheck', 'npm run typecheck'],
      ['the lint', 'npm run lint'],
    ] as const;
    const results = await Promise.all(checks.map(([, command]) => run(command, copy, env, undefined, true)));
    checks.forEach(([what], i) => check(results[i]!.code === 0, `${what} fail(s) after the examples`));
    if (!values['no-test']) {
      const excluded = (values.exclude ?? []).map((glob) => ` --exclude '${glob}'`).join('');
      // test/extending/examples.e2e-spec.ts places one order with the added steps.
      const suite = await run(`npm test --${excluded}`, copy, { ...env, EXTENDING_EXAMPLE_STEPS: added.join(',') });
      check(suite.code === 0, `npm test fails in the copy with the examples' steps (${added.join(', ')})`);
      check(/worked examples: order \S+ completed/.test(suite.output), 'the end-to-end order did not report');
    }
    ok = true;
  } catch (err) {
    if (!(err instanceof CheckFailed)) throw err;
    console.error(`\ncheck:extending FAILED: ${err.message}`);
  } finally {
    if (values.keep) console.log(`kept the copy: ${copy}`);
    else await rm(path.dirname(copy), { recursive: true, force: true });
    for (const [section, report] of reports) {
      console.log(`\n${section}: ${report.files.size} files, ${report.handWritten} lines written by hand`);
      for (const file of [...report.files].sort()) console.log(`  ${file}`);
    }
    console.log(`\ncheck:extending: ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
  const tested = values['no-test'] ? '' : ', and npm test holds with them';
  if (ok) console.log(`check:extending passed: ${EXTENDING_DOC}'s examples apply to HEAD${tested}`);
  return ok ? 0 : 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  runMain(main, 'check:extending: ');
}
