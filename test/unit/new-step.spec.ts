/**
 * The step scaffold (`npm run new:step`, scripts/lib/new-step.ts): what it refuses (one line, nothing written),
 * where it places the step (last, `--before`, `--after`, and the phase that follows), what it writes (the templates
 * of scripts/templates/ with the names substituted: the step's file, its catalogue entry and its line in the
 * catalogue's list, a new provider's file and its lines in the provider registry) and what it lists as
 * guessed or to write. It runs on whatever the registry holds, and its own steps' names are the spec's, so a step
 * someone adds never collides with them. Each case writes into a temporary folder holding the registry files; the
 * last case scaffolds a database step and a provider step with a new provider into a copy of the working tree and
 * proves they pass the typecheck, eslint, prettier and the conformance battery there.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify, stripVTControlCharacters } from 'node:util';
import { afterEach, beforeEach, describe, expect, inject, it } from 'vitest';
import { StepPhase } from '../../activities/kit/define.js';
import { STEPS } from '../../activities/steps/index.js';
import { PROVIDERS } from '../../providers/index.js';
import { repoRoot } from '../../scripts/lib/env.js';
import { runNewStep, ScaffoldRefusal, USAGE } from '../../scripts/lib/new-step.js';
import { testpay } from '../helpers/test-payments.js';

const run = promisify(execFile);
const REGISTRY_FILES = ['activities/catalogue/steps.ts', 'providers/index.ts', '.prettierrc.json'];
const FIRST = STEPS[0]!.name;
const PIVOT = STEPS.find((s) => s.phase === StepPhase.Pivot)!.name;
const LAST = STEPS.at(-1)!.name;
/** A registered provider and its file, for the cases that call an existing provider. */
const [EXISTING] = Object.keys(PROVIDERS);

let root: string;

beforeEach(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'new-step-'));
  await mkdir(path.join(root, 'activities/steps'), { recursive: true }); // where step files go
  for (const file of [...REGISTRY_FILES, `providers/${EXISTING}.provider.ts`]) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await cp(path.join(repoRoot(), file), path.join(root, file));
  }
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
});

/** Every file of the temporary checkout, by path, with its content. */
async function snapshot(): Promise<Record<string, string>> {
  const files = (await readdir(root, { recursive: true, withFileTypes: true })).filter((e) => e.isFile());
  const entries = await Promise.all(
    files.map(async (e) => {
      const file = path.relative(root, path.join(e.parentPath, e.name));
      return [file, await readFile(path.join(root, file), 'utf8')] as const;
    }),
  );
  return Object.fromEntries(entries.sort(([a], [b]) => a.localeCompare(b)));
}

/** Runs new:step and returns the refusal's message (the test fails if it was not refused, or wrote anything). */
async function refusal(argv: string[], registries?: Parameters<typeof runNewStep>[2]): Promise<string> {
  const before = await snapshot();
  const error = await runNewStep(argv, root, registries).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(ScaffoldRefusal);
  expect(await snapshot()).toEqual(before);
  const message = (error as Error).message;
  expect(message).not.toContain('\n');
  return message;
}

/** The step lines of `validateCatalogue([...])` in the written catalogue, in order. */
async function registryOrder(): Promise<string[]> {
  const text = await readFile(path.join(root, 'activities/catalogue/steps.ts'), 'utf8');
  const list = /validateCatalogue\(\[([^\]]*)\]\)/.exec(text)![1]!;
  return list
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => /^\w+,$/.test(l))
    .map((l) => l.slice(0, -1));
}

const read = (file: string) => readFile(path.join(root, file), 'utf8');

describe('refusals: one line, nothing written', () => {
  it.each([
    [[], /one activity name/],
    [['scaffoldSpecA', 'scaffoldSpecB'], /one activity name/],
    [['scaffoldSpecA', '--bogus'], /Unknown option/],
    [['scaffoldSpecA', '--before', FIRST, '--after', LAST], /--before or --after, not both/],
    [['scaffoldSpecA', '--after', 'noSuchStep'], /no step noSuchStep/],
    [['ScaffoldSpecA'], /ScaffoldSpecA: not a camelCase activity name/],
    [['scaffold-spec'], /not a camelCase activity name/],
    [[FIRST], new RegExp(`step ${FIRST}: the name is taken`)],
    [['haltOrder'], /step haltOrder: the name is taken/],
    [['scaffoldSpecA', '--status', STEPS[0]!.status], new RegExp(`status ${STEPS[0]!.status} is taken`)],
    [['scaffoldSpecA', '--status', 'completed'], /status completed is taken/],
    [['scaffoldSpecA', '--status', 'Not-Snake'], /status Not-Snake is not snake_case/],
    [['scaffoldSpecA', '--provider', 'SMS'], /provider name SMS is not \[a-z\]\[a-z0-9\]\*/],
    [['scaffoldSpecA', '--provider', '9sms'], /provider name 9sms is not/],
    [['scaffoldSpecA', '--operation', 'send'], /--operation needs --provider/],
    [['scaffoldSpecA', '--provider', EXISTING!, '--operation', 'fax'], new RegExp(`has no operation fax`)],
    [['scaffoldSpecA', '--provider', 'scaffoldspec', '--operation', 'notify'], /has no operation notify/],
  ] as Array<[string[], RegExp]>)('%j', async (argv, message) => {
    expect(await refusal(argv)).toMatch(message);
  });

  it('asks which operation of a provider with several, and refuses a provider whose file it cannot import', async () => {
    const registries = { steps: STEPS, providers: { ...PROVIDERS, testpay } };
    expect(await refusal(['scaffoldSpecA', '--provider', 'testpay', '--operation', 'capture'], registries)).toMatch(
      /providers\/testpay.provider.ts not found: the step template imports testpay from there/,
    );
    await writeFile(path.join(root, 'providers/testpay.provider.ts'), '// as the registry has it\n');
    expect(await refusal(['scaffoldSpecA', '--provider', 'testpay'], registries)).toMatch(
      /testpay has several operations: --operation authorize,capture,void/,
    );
  });

  it('refuses a step file or a provider file that exists, and the same command run twice', async () => {
    await writeFile(path.join(root, 'providers/scaffoldspec.provider.ts'), '// not registered\n');
    expect(await refusal(['scaffoldSpecA', '--provider', 'scaffoldspec'])).toMatch(/exists, unregistered/);
    await runNewStep(['scaffoldSpecB'], root);
    expect(await refusal(['scaffoldSpecB'])).toMatch(/activities\/steps\/scaffold-spec-b.step.ts exists/);
  });

  it('prints the usage for --help, writing nothing', async () => {
    const before = await snapshot();
    expect(await runNewStep(['--help'], root)).toBe(USAGE);
    expect(await snapshot()).toEqual(before);
  });
});

describe('what it writes and where', () => {
  it('a provider step with a new provider: four files, the templates with the names, one line per marker', async () => {
    const report = await runNewStep(
      ['scaffoldSpecNotice', '--provider', 'scaffoldspec', '--after', PIVOT, '--status', 'scaffold_spec_sent'],
      root,
    );
    expect(report.split('\n').filter((l) => /^ {2}[+~] /.test(l))).toEqual([
      '  + activities/steps/scaffold-spec-notice.step.ts',
      '  ~ activities/catalogue/steps.ts',
      '  + providers/scaffoldspec.provider.ts',
      '  ~ providers/index.ts',
    ]);
    expect(report).toMatch(/^scaffoldSpecNotice: a provider step calling scaffoldspec.send, after-pivot, step /);
    // Everything it chose itself is listed; the status was given, so it is not.
    expect(report).toContain('guessed (check each):');
    expect(report).toContain('providers/scaffoldspec.provider.ts: a template (a notification API)');
    expect(report).toContain("its request (the customer's email as to, a sentence as text)");
    expect(report).toContain('the label "Scaffold spec sent" (from the status: --label)');
    expect(report).not.toContain('the status scaffold_spec_sent');

    const step = await read('activities/steps/scaffold-spec-notice.step.ts');
    expect(step).not.toMatch(/__\w+__/);
    expect(step).toContain("import { scaffoldSpecNotice as entry } from '../catalogue/steps.js';");
    expect(step).toContain('  ...entry,\n  provider: scaffoldspec,');
    expect(step).toContain("import { scaffoldspec } from '../../providers/scaffoldspec.provider.js';");
    const catalogue = await read('activities/catalogue/steps.ts');
    expect(catalogue).toContain("phase: StepPhase.AfterPivot,\n  status: 'scaffold_spec_sent',");
    expect(catalogue).toContain("provider: 'scaffoldspec',");
    expect(catalogue).toContain('key: (orderId) => `scaffold-spec-notice:${orderId}`');
    expect(catalogue).toMatch(/} satisfies ProviderStepEntry;\n\/\/ new:step inserts entries above this line\./);
    const provider = await read('providers/scaffoldspec.provider.ts');
    expect(provider).not.toMatch(/__\w+__/);
    expect(provider).toContain('`SCAFFOLDSPEC_PROVIDER_URL`, `SCAFFOLDSPEC_PROVIDER_API_KEY`');

    expect(await registryOrder()).toEqual([
      ...STEPS.slice(0, STEPS.findIndex((s) => s.name === PIVOT) + 1).map((s) => s.name),
      'scaffoldSpecNotice',
      ...STEPS.slice(STEPS.findIndex((s) => s.name === PIVOT) + 1).map((s) => s.name),
    ]);
    const providers = await read('providers/index.ts');
    expect(providers).toContain('  scaffoldspec,\n  // new:step inserts providers above this line.');
  });

  it('a database step: two files, last by default (it then writes completed), the plain status listed', async () => {
    const report = await runNewStep(['scaffoldSpecPoints'], root);
    expect(report).toContain('step ' + (STEPS.length + 1) + ' of ' + (STEPS.length + 1));
    expect(report).toContain('as the last step it writes completed instead');
    expect(report).toContain('the status scaffold_spec_points_done and its label (plain defaults: --status)');
    expect(report).toContain(
      "to write (EDIT):\n  - activities/steps/scaffold-spec-points.step.ts: the step's work in run",
    );
    expect(report.split('\n').filter((l) => /^ {2}[+~] /.test(l))).toEqual([
      '  + activities/steps/scaffold-spec-points.step.ts',
      '  ~ activities/catalogue/steps.ts',
    ]);
    expect(report).toContain('activities/catalogue/steps.ts: its description "Scaffold spec points done."');
    expect(Object.keys(await snapshot())).toContain('activities/steps/scaffold-spec-points.step.ts');
    expect((await registryOrder()).at(-1)).toBe('scaffoldSpecPoints');
    expect(await read('activities/steps/scaffold-spec-points.step.ts')).toContain("idempotency: 'recorded'");
  });

  it('places a step first with --before, before the pivot; before-pivot up to the pivot, after-pivot past it', async () => {
    const first = await runNewStep(['scaffoldSpecFirst', '--before', FIRST], root);
    expect(first).toContain('before-pivot, step 1 of');
    expect((await registryOrder())[0]).toBe('scaffoldSpecFirst');
    expect(await read('activities/catalogue/steps.ts')).toMatch(
      /name: 'scaffoldSpecFirst',\n {2}phase: StepPhase.BeforePivot,/,
    );
    expect(await runNewStep(['scaffoldSpecBefore', '--before', PIVOT], root)).toContain(', before-pivot, ');
    expect(await runNewStep(['scaffoldSpecAfter', '--after', PIVOT], root)).toContain(', after-pivot, ');
  });

  it('an existing provider: its operation, imported from its file, the request left to write and listed', async () => {
    const operation = Object.keys(PROVIDERS[EXISTING as keyof typeof PROVIDERS].operations)[0]!;
    const report = await runNewStep(['scaffoldSpecCall', '--provider', EXISTING!, '--after', PIVOT], root);
    expect(Object.keys(await snapshot())).not.toContain(`providers/${EXISTING}.provider.ts~`);
    expect(report).toContain(
      `  - activities/steps/scaffold-spec-call.step.ts: the request of ${EXISTING}.${operation}`,
    );
    expect(report.split('\n').filter((l) => /^ {2}[+~] /.test(l))).toHaveLength(2);
    const step = await read('activities/steps/scaffold-spec-call.step.ts');
    expect(step).toContain(`import { ${EXISTING} } from '../../providers/${EXISTING}.provider.js';`);
    expect(step).toMatch(/request: \(\{ orderId, order \}\) => \(\{\n {4}\/\/ EDIT: \w+/);
  });

  it('--dry-run prints the plan and writes nothing', async () => {
    const before = await snapshot();
    expect(await runNewStep(['scaffoldSpecDry', '--dry-run'], root)).toContain('would write (dry run):');
    expect(await snapshot()).toEqual(before);
  });
});

describe('scaffolded files, in a copy of the working tree', () => {
  it('a database step and a provider step with a new provider pass the typecheck, eslint, prettier and the conformance battery', async () => {
    const copy = await mkdtemp(path.join(tmpdir(), 'new-step-copy-'));
    try {
      const source = repoRoot();
      const { stdout } = await run('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
        cwd: source,
        maxBuffer: 64 * 1024 * 1024,
      });
      for (const file of stdout.split('\0').filter(Boolean)) {
        await mkdir(path.dirname(path.join(copy, file)), { recursive: true });
        await cp(path.join(source, file), path.join(copy, file)).catch(() => undefined); // deleted, not yet staged
      }
      await symlink(path.join(source, 'node_modules'), path.join(copy, 'node_modules'), 'dir');
      await symlink(path.join(source, 'prisma/generated'), path.join(copy, 'prisma/generated'), 'dir');
      const sh = (command: string, args: string[], env: NodeJS.ProcessEnv = {}) =>
        run(command, args, { cwd: copy, env: { ...process.env, ...env }, maxBuffer: 64 * 1024 * 1024 });
      await sh('npx', ['tsx', 'scripts/new-step.ts', 'scaffoldSpecPoints', '--after', LAST]);
      await sh('npx', [
        'tsx',
        'scripts/new-step.ts',
        'scaffoldSpecNotice',
        '--provider',
        'scaffoldspec',
        '--after',
        PIVOT,
      ]);
      const files = [
        'activities/steps/scaffold-spec-points.step.ts',
        'activities/steps/scaffold-spec-notice.step.ts',
        'providers/scaffoldspec.provider.ts',
        'activities/catalogue/steps.ts',
        'providers/index.ts',
      ];
      // Side by side (each mostly single-threaded; this file is the longest of the suite), the battery on this run's
      // Temporal server (its global setup then starts none of its own). Each rejects when its command fails.
      // All settle before the copy is removed (a check still running writes into it), and a failure shows what the
      // command printed (tsc reports on stdout).
      const settled = await Promise.allSettled([
        sh('npx', ['tsc', '--noEmit', '-p', 'tsconfig.json']),
        sh('npx', ['eslint', ...files]).then(() => sh('npx', ['prettier', '--check', ...files])),
        sh('npx', ['vitest', 'run', 'test/conformance/steps.conformance.spec.ts'], {
          CONFORMANCE_STEPS: 'scaffoldSpecPoints,scaffoldSpecNotice',
          TEMPORAL_ADDRESS: inject('temporalAddress'),
          TEMPORAL_UI_URL: inject('temporalUiUrl'),
        }),
      ]);
      const failures = settled.flatMap((r) => {
        if (r.status === 'fulfilled') return [];
        const err = r.reason as Error & { stdout?: string; stderr?: string };
        return [`${err.message.split('\n')[0]}\n${err.stdout ?? ''}${err.stderr ?? ''}`.slice(0, 4000)];
      });
      expect(failures).toEqual([]);
      const battery = (settled[2] as PromiseFulfilledResult<{ stdout: string; stderr: string }>).value;
      const output = stripVTControlCharacters(`${battery.stdout}${battery.stderr}`);
      expect(output).toMatch(/Tests\s+\d+ passed/);
      expect(output).toContain('scaffoldSpecNotice: a provider that never answers in time');
    } finally {
      await rm(copy, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
    }
  }, 600_000);
});
