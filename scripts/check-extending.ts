/**
 * `npm run check:extending` (CI step "extending: worked example"): applies the worked example of docs/extending.md
 * to a fresh copy of the repository, so the document cannot drift from the code.
 *
 * 1. Copies the committed HEAD (`git clone --local`, checked out detached at HEAD's commit) into a temporary folder,
 *    links this checkout's node_modules into it and generates the Prisma client there (prisma/generated is not
 *    committed). `--working-tree` also copies this checkout's uncommitted changes, `--with <path>` (repeatable) the
 *    working-tree version of one file (to try a change before committing it).
 * 2. Runs, in the copy, exactly the commands of the document's fenced blocks marked `<!-- ci: worked-example -->`, in
 *    order, each with `bash`; the `new:step` command among them must change only the files it reports (`+`/`~`).
 * 3. Compares every block marked `<!-- ci: file <path> -->` with that file in the copy: the document shows the
 *    generated files as they are.
 * 4. Checks what the worked example must leave behind, running what its commands did not cover: the docs tables up
 *    to date (`npm run docs:tables -- --check`), the typecheck, eslint on the new files, and the conformance suite,
 *    whose output must name the new step.
 * 5. One real order, end to end, in the copy: a small e2e test written into the copy's test/e2e (not part of the
 *    product) starts the test stack (the Nest API, the workers of the order and provider task queues on a Temporal
 *    dev server, PostgreSQL, every provider's simulator over HTTP), POSTs an order, waits for `completed`, and
 *    checks that the workflow history holds one completed activity of the new step and its provider's ledger one
 *    effect for its key; the replay suite runs with it.
 * 6. Removes the copy (`--keep` keeps it and prints where).
 *
 * `--doc <file>` reads the worked example from another document (to test this check itself).
 *
 * Environment: `TEST_DATABASE_URL` and `TEMPORAL_CLI_PATH` as for the tests (the CLI is found or built like
 * `npm test` does). Exit 0 when every check passed, 1 otherwise, with the failing check named.
 */
import { execFile } from 'node:child_process';
import { chmod, cp, mkdir, mkdtemp, readFile, realpath, rm, symlink, writeFile, appendFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs, promisify, stripVTControlCharacters } from 'node:util';
import { execa } from 'execa';
import { errorMessage, repoRoot } from './lib/env.js';
import { parseNewStepArgs, deriveStepNames } from './lib/new-step.js';
import { ensureTemporalCli } from './lib/temporal-cli.js';

const git = promisify(execFile);

/** The document whose worked example this applies. */
export const EXTENDING_DOC = 'docs/extending.md';
/** The marker of a fenced block of commands CI runs. */
export const COMMANDS_MARKER = '<!-- ci: worked-example -->';
/** The marker of a fenced block that shows a file as the worked example leaves it: `<!-- ci: file <path> -->`. */
export const FILE_MARKER = /<!-- ci: file (\S+) -->/;
/** The marker of a fenced block that shows what the `new:step` command prints (the end of its output). */
export const OUTPUT_MARKER = '<!-- ci: new-step-output -->';
/** The marker of a fenced block that shows `git status --porcelain --untracked-files=all` after `new:step`. */
export const STATUS_MARKER = '<!-- ci: new-step-status -->';
/** The e2e test written into the copy. */
const E2E_FILE = 'test/e2e/extending-worked-example.e2e-spec.ts';

/** What a document's worked example says: the commands to run, and the files it shows. */
export interface WorkedExample {
  commands: string[];
  files: Array<{ path: string; content: string }>;
  /** What the document says `new:step` prints, when it shows it. */
  newStepOutput?: string;
  /** The `git status --porcelain` lines the document shows after `new:step`. */
  newStepStatus?: string[];
}

/** The body of the fenced block that follows `from` in `lines` (blank lines in between only). */
function fencedBlockAfter(lines: readonly string[], from: number, what: string): { body: string[]; end: number } {
  let i = from + 1;
  while (i < lines.length && lines[i]!.trim() === '') i++;
  const fence = /^(\s*)(`{3,}|~{3,})/.exec(lines[i] ?? '');
  if (!fence) throw new Error(`${EXTENDING_DOC}:${from + 1}: ${what} is not followed by a fenced block`);
  const body: string[] = [];
  for (let j = i + 1; j < lines.length; j++) {
    if (lines[j]!.trim().startsWith(fence[2]!)) return { body, end: j };
    body.push(lines[j]!.slice(fence[1]!.length));
  }
  throw new Error(`${EXTENDING_DOC}:${i + 1}: the fenced block is not closed`);
}

/**
 * Reads the worked example of a markdown document: the commands of every block marked {@link COMMANDS_MARKER} (one
 * per line; blank lines and `#` comments skipped, a trailing `\` joins the next line), the content of every
 * block marked with {@link FILE_MARKER}, and the blocks marked {@link OUTPUT_MARKER} and {@link STATUS_MARKER}.
 * @throws Error when a marker is not followed by a fenced block.
 */
export function readWorkedExample(markdown: string): WorkedExample {
  const lines = markdown.split('\n');
  const example: WorkedExample = { commands: [], files: [] };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trim();
    if (line === COMMANDS_MARKER) {
      const { body, end } = fencedBlockAfter(lines, i, COMMANDS_MARKER);
      let pending = '';
      for (const raw of body) {
        const text = raw.trim();
        if (pending === '' && (text === '' || text.startsWith('#'))) continue;
        if (text.endsWith('\\')) {
          pending += `${text.slice(0, -1).trim()} `;
          continue;
        }
        example.commands.push(`${pending}${text}`);
        pending = '';
      }
      if (pending !== '') example.commands.push(pending.trim());
      i = end;
    } else if (line === OUTPUT_MARKER || line === STATUS_MARKER) {
      const { body, end } = fencedBlockAfter(lines, i, line);
      if (line === OUTPUT_MARKER) example.newStepOutput = body.join('\n').trim();
      else example.newStepStatus = body.filter((l) => l.trim() !== '');
      i = end;
    } else {
      const file = FILE_MARKER.exec(line);
      if (file && line === file[0]) {
        const { body, end } = fencedBlockAfter(lines, i, file[0]);
        example.files.push({ path: file[1]!, content: `${body.join('\n')}\n` });
        i = end;
      }
    }
  }
  return example;
}

/** The arguments after `new:step --` of a command, when it is one. */
export function newStepArguments(command: string): string[] | undefined {
  const match = /\bnpm run new:step -- (.*)$/.exec(command);
  return match ? match[1]!.trim().split(/\s+/) : undefined;
}

/** The e2e test of the new step: one order through the copy's whole stack. */
export function e2eSource(step: string): string {
  return `/**
 * Written by scripts/check-extending.ts into a temporary copy of the repository (not part of the product): one
 * order through the whole stack with the step the worked example of docs/extending.md added.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { STEPS } from '../../activities/steps/index.js';
import { startTestStack, type TestStack } from '../helpers/test-stack.js';

const STEP = ${JSON.stringify(step)};
let stack: TestStack;

beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => stack?.close());

it(\`completes an order with \${STEP}: one completed activity, one effect\`, async () => {
  const step = STEPS.find((s) => s.name === STEP);
  expect(step, \`\${STEP} is in the registry\`).toBeDefined();
  const res = await stack.http
    .post('/orders')
    .send({ customer: { email: 'ada@example.com', name: 'Ada Lovelace' }, lines: [{ sku: 'TEE-BLK-M', quantity: 2 }] })
    .expect(202);
  const id = res.body.id as string;
  const order = await stack.waitForOrder(id);
  expect(order.status).toBe('completed');
  const track = order.steps as Array<{ name: string; state: string }>;
  expect(track.find((s) => s.name === STEP)?.state).toBe('done');

  const history = await stack.client.workflow.getHandle(\`order-\${id}\`).fetchHistory();
  const events = history.events ?? [];
  if (step!.kind === 'provider') {
    const scheduled = events
      .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === STEP)
      .map((e) => String(e.eventId));
    const completed = events.filter((e) =>
      scheduled.includes(String(e.activityTaskCompletedEventAttributes?.scheduledEventId ?? '')),
    );
    expect(scheduled, 'one scheduled activity').toHaveLength(1);
    expect(completed, 'one completed activity').toHaveLength(1);
    const key = step!.key(id);
    expect(stack.sims.provider(step!.provider.name).ledger.count(key), \`effects for \${key}\`).toBe(1);
    console.log(\`worked example: order \${id} completed; \${STEP} completed once; \${step!.provider.name} ledger: 1 effect for \${key}\`);
  } else {
    // A database step runs as a local activity: a marker in the history, and its recorded result.
    const markers = events.filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity');
    expect(markers.length).toBeGreaterThan(0);
    const rows = await stack.db.sql.$queryRaw<Array<{ n: number }>>\`
      SELECT count(*)::int AS n FROM order_step_results WHERE order_id = \${id}::uuid AND step = \${STEP}\`;
    expect(rows[0]!.n).toBe(step!.kind === 'database' && step!.idempotency === 'recorded' ? 1 : 0);
    console.log(\`worked example: order \${id} completed with \${STEP}\`);
  }
});
`;
}

/** How one command ended. */
interface Ran {
  command: string;
  code: number;
  output: string;
  seconds: number;
}

/** Runs `command` with bash in `cwd`, streaming its output indented, and captures it (without colours). */
async function run(command: string, cwd: string, env: NodeJS.ProcessEnv): Promise<Ran> {
  console.log(`\n$ ${command}`);
  const started = performance.now();
  const child = execa(command, { shell: 'bash', cwd, env, all: true, reject: false, stdin: 'ignore' });
  child.all.on('data', (chunk: Buffer) => {
    process.stdout.write(
      chunk
        .toString()
        .split('\n')
        .map((l, i, all) => (i === all.length - 1 && l === '' ? '' : `  │ ${l}`))
        .join('\n'),
    );
  });
  const result = await child;
  const seconds = (performance.now() - started) / 1000;
  const code = result.exitCode ?? 1;
  console.log(`  └ exit ${code} after ${seconds.toFixed(1)} s`);
  return { command, code, output: stripVTControlCharacters(String(result.all ?? '')), seconds };
}

/** A failed check: its message is the one line CI prints. */
class CheckFailed extends Error {}

function check(ok: boolean, message: string): asserts ok {
  if (!ok) throw new CheckFailed(message);
}

/** `git status --porcelain --untracked-files=all` of the copy, one entry per line. */
async function porcelain(dir: string): Promise<string[]> {
  const { stdout } = await git('git', ['status', '--porcelain', '--untracked-files=all'], { cwd: dir });
  return stdout.split('\n').filter((l) => l !== '');
}

/**
 * A copy of the checkout `source` at its HEAD commit in a new temporary folder (readable by others: the embedded
 * PostgreSQL runs as another user), with `source`'s node_modules linked in and ignored, and, with `workingTree`,
 * the uncommitted changes of `source` committed on top (with `extra`, those files only).
 * @returns the copy's path.
 */
async function copyRepository(source: string, workingTree: boolean, extra: readonly string[]): Promise<string> {
  const parent = await mkdtemp(path.join(tmpdir(), 'check-extending-'));
  await chmod(parent, 0o755);
  const dir = path.join(parent, 'repo');
  const { stdout: head } = await git('git', ['rev-parse', 'HEAD'], { cwd: source });
  await git('git', ['clone', '--quiet', '--local', '--no-checkout', source, dir]);
  await git('git', ['checkout', '--quiet', '--detach', head.trim()], { cwd: dir });
  await symlink(await realpath(path.join(source, 'node_modules')), path.join(dir, 'node_modules'), 'dir');
  // .gitignore's `node_modules/` matches a folder, not a link: keep the copy's status clean.
  await appendFile(path.join(dir, '.git/info/exclude'), '\nnode_modules\n');
  if (workingTree || extra.length > 0) {
    const list = async (...args: string[]) =>
      (await git('git', ['ls-files', '-z', ...args], { cwd: source })).stdout.split('\0').filter(Boolean);
    const changed = workingTree ? await list('--modified', '--others', '--exclude-standard') : extra;
    for (const file of changed) {
      if (!existsSync(path.join(source, file))) continue;
      await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
      await cp(path.join(source, file), path.join(dir, file));
    }
    if (workingTree) for (const file of await list('--deleted')) await rm(path.join(dir, file), { force: true });
    await git('git', ['add', '-A'], { cwd: dir });
    await git(
      'git',
      [
        '-c',
        'user.name=check-extending',
        '-c',
        'user.email=ci@localhost',
        'commit',
        '--quiet',
        '--allow-empty',
        '-m',
        'working tree',
      ],
      { cwd: dir },
    );
  }
  check((await porcelain(dir)).length === 0, `the copy is not clean: ${(await porcelain(dir)).join(', ')}`);
  return dir;
}

/** Runs the check. @returns the process's exit code. */
async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      'working-tree': { type: 'boolean' },
      with: { type: 'string', multiple: true },
      doc: { type: 'string' },
      keep: { type: 'boolean' },
    },
    strict: true,
  });
  const started = performance.now();
  const source = repoRoot();
  const timings: Array<[string, number]> = [];
  const timed = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      return await fn();
    } finally {
      timings.push([what, (performance.now() - t0) / 1000]);
    }
  };
  const cli = await ensureTemporalCli();
  // Without npm's own variables (`npm run check:extending` sets npm_config_local_prefix and others to this checkout):
  // the commands run in the copy must find the copy's package.json.
  const env: NodeJS.ProcessEnv = {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.toLowerCase().startsWith('npm_'))),
    ...(cli ? { TEMPORAL_CLI_PATH: cli } : {}),
    NO_COLOR: '1',
    FORCE_COLOR: '0',
  };

  const extra = values.with ?? [];
  const copy = await timed('copy of HEAD', () => copyRepository(source, values['working-tree'] === true, extra));
  const what = values['working-tree'] ? ' and the working tree' : extra.length > 0 ? ` and ${extra.join(', ')}` : '';
  console.log(`copy of HEAD${what}: ${copy}`);
  let ok = false;
  try {
    const generate = await timed('prisma generate', () => run('npx prisma generate', copy, env));
    check(generate.code === 0, 'npx prisma generate failed in the copy');

    const doc = values.doc ? path.resolve(values.doc) : path.join(copy, EXTENDING_DOC);
    const example = readWorkedExample(await readFile(doc, 'utf8'));
    const scaffoldIndex = example.commands.findIndex((c) => newStepArguments(c) !== undefined);
    check(scaffoldIndex >= 0, `${EXTENDING_DOC}: no \`npm run new:step -- ...\` command in a ${COMMANDS_MARKER} block`);
    const options = parseNewStepArgs(newStepArguments(example.commands[scaffoldIndex]!)!);
    const names = deriveStepNames(options.name);
    const stepFile = `activities/steps/${names.kebab}.step.ts`;
    console.log(
      `worked example: ${example.commands.length} commands, ${example.files.length} files shown; step ${names.name}`,
    );

    const ran: Ran[] = [];
    let written: string[] = [];
    let status: string[] = [];
    for (const [i, command] of example.commands.entries()) {
      const result = await timed(command, () => run(command, copy, env));
      ran.push(result);
      check(result.code === 0, `\`${command}\` (from ${EXTENDING_DOC}) failed in the copy (exit ${result.code})`);
      if (i === scaffoldIndex) {
        status = await porcelain(copy);
        console.log(`  git status --porcelain --untracked-files=all (${status.length} files):`);
        for (const line of status) console.log(`    ${line}`);
        written = status.map((l) => l.slice(3));
        const reported = [...result.output.matchAll(/^\s+[+~] (\S+)$/gm)].map((m) => m[1]!);
        check(
          [...written].sort().join() === [...reported].sort().join(),
          `new:step changed ${written.join(', ')} but reported ${reported.join(', ')}`,
        );
        check(written.includes(stepFile), `new:step did not write ${stepFile}`);
        check(written.length <= (options.provider ? 4 : 2), `new:step changed ${written.length} files`);
        if (example.newStepStatus) {
          check(
            status.join('\n') === example.newStepStatus.join('\n'),
            `${EXTENDING_DOC} shows another git status after new:step than the copy's (above)`,
          );
        }
        if (example.newStepOutput) {
          check(
            result.output.trimEnd().endsWith(example.newStepOutput),
            `${EXTENDING_DOC} shows another output of new:step than it prints (above)`,
          );
        }
      }
    }

    for (const file of example.files) {
      const actual = await readFile(path.join(copy, file.path), 'utf8').catch(() => undefined);
      check(
        actual !== undefined,
        `${EXTENDING_DOC} shows ${file.path}, which the worked example does not leave behind`,
      );
      if (actual !== file.content) {
        const shown = path.join(path.dirname(copy), 'shown-in-doc');
        await writeFile(shown, file.content);
        await run(`git --no-pager diff --no-index -- ${shown} ${file.path} || true`, copy, env);
      }
      check(
        actual === file.content,
        `${EXTENDING_DOC} shows ${file.path} otherwise than the scaffold writes it (diff above)`,
      );
      console.log(`${EXTENDING_DOC} shows ${file.path} as written`);
    }

    const tables = await timed('docs tables --check', () => run('npm run docs:tables -- --check', copy, env));
    check(tables.code === 0, `the worked example leaves the docs tables stale: it must run \`npm run docs:tables\``);

    const covered = (pattern: RegExp) => ran.find((r) => pattern.test(r.command));
    if (!covered(/\bnpm run typecheck\b|\btsc\b.*--noEmit/)) {
      const tsc = await timed('typecheck', () => run('npx tsc --noEmit -p tsconfig.json', copy, env));
      check(tsc.code === 0, 'the copy does not typecheck after the worked example');
    }
    // eslint on the files new:step created: each must be linted by a command of the worked example, or here.
    const created = written.filter((f, i) => f.endsWith('.ts') && status[i]!.startsWith('??'));
    const linters = ran.filter((r) => /\beslint\b|\bnpm run lint\b/.test(r.command));
    const unlinted = linters.some((r) => /\bnpm run lint\b|\beslint \.(\s|$)/.test(r.command))
      ? []
      : created.filter((f) => !linters.some((r) => r.command.includes(f)));
    if (unlinted.length > 0) {
      const lint = await timed('eslint', () => run(`npx eslint ${unlinted.join(' ')}`, copy, env));
      check(lint.code === 0, `eslint fails on ${unlinted.join(', ')}`);
    }
    let conformance = covered(/\btest:conformance\b|\bvitest run\b.*\btest\/conformance\b/);
    if (!conformance) {
      const battery = 'test/conformance/steps.conformance.spec.ts';
      const target = existsSync(path.join(copy, battery)) ? battery : 'test/conformance';
      conformance = await timed('conformance', () => run(`npx vitest run ${target} --reporter=verbose`, copy, env));
      check(conformance.code === 0, 'the conformance suite fails after the worked example');
    }
    const scenarios = conformance.output.split('\n').filter((l) => l.includes(names.name) && /✓/.test(l));
    check(
      scenarios.length > 0,
      `the conformance output does not name ${names.name} (run it with --reporter=verbose in the worked example)`,
    );
    console.log(`conformance: ${scenarios.length} passed lines name ${names.name}`);

    await writeFile(path.join(copy, E2E_FILE), e2eSource(names.name));
    // The replay of the histories recorded before the step was added, the generic specs of every provider's client
    // and simulator (they run the new provider's example) and the whole kit's unit specs, and one order end to end.
    const e2e = await timed('replay, provider and kit specs, one order end to end', () =>
      run(`npx vitest run test/replay test/unit/providers test/unit/simulators test/unit/kit ${E2E_FILE}`, copy, env),
    );
    check(
      e2e.code === 0,
      `the replay suite, the provider or kit specs, or the order end to end with ${names.name} fail in the copy`,
    );
    check(/worked example: order \S+ completed/.test(e2e.output), 'the end-to-end order did not report its result');
    ok = true;
  } catch (err) {
    if (!(err instanceof CheckFailed)) throw err;
    console.error(`\ncheck:extending FAILED: ${err.message}`);
  } finally {
    if (values.keep) console.log(`kept the copy: ${copy}`);
    else await rm(path.dirname(copy), { recursive: true, force: true });
    console.log('\ntimings:');
    for (const [what, seconds] of timings) console.log(`  ${seconds.toFixed(1).padStart(6)} s  ${what}`);
    console.log(`  ${((performance.now() - started) / 1000).toFixed(1).padStart(6)} s  total`);
  }
  if (ok) console.log(`check:extending passed: ${EXTENDING_DOC}'s worked example applies to HEAD`);
  return ok ? 0 : 1;
}

if (process.argv[1] && path.resolve(process.argv[1]) === path.resolve(import.meta.filename)) {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(`check:extending: ${errorMessage(err)}`);
      process.exit(1);
    },
  );
}
