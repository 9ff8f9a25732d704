// ESLint flat config: typescript-eslint with type information (promises, type imports), import cycles, Prettier
// for formatting, and the boundaries between the top-level folders (shared/DESIGN.md) enforced as rules rather
// than left to review.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import importX from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';
import { readdirSync } from 'node:fs';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

// ---------------------------------------------------------------------------------------------------------
// Boundaries: what each top-level folder may import from the others (its own folder and npm packages always).
// Anything not listed is an error (import-x/no-restricted-paths zones, generated below). Finer rules (type-only
// imports, single files) follow in the per-folder blocks further down.
/** @type {Record<string, { may: string[], why: string }>} */
const BOUNDARIES = {
  // Deterministic sandbox code: nothing of ours outside workflows/. The activities' inputs, results and signatures
  // are the workflow's contract (workflows/*.contract.ts), which activities implement: the arrow runs one way.
  workflows: {
    may: [],
    why: 'Workflows run in the sandbox and own their contract: they import nothing from activities/ (or any other folder).',
  },
  // Activities are plain functions over ports: the workflow contract (error types, inputs) and the generated
  // Prisma types their database port names (type-only, below). Never the app that wires them.
  activities: {
    may: ['workflows', 'prisma', 'providers'],
    why: 'Activities depend on their ports, the workflow contract and the provider definitions, never on the app (src/).',
  },
  // Provider definitions are data (zod schemas, simulated answers) plus the shared HTTP call: every process reads
  // them, so they depend on nothing of ours.
  providers: { may: [], why: 'Provider definitions import only zod and their own kit.' },
  // The app is the composition root: it implements the activity ports, starts workflows by their contract and
  // uses the generated Prisma client.
  src: {
    may: ['activities', 'workflows', 'prisma', 'providers'],
    why: 'The product never imports tooling, tests, benchmarks or the provider simulators.',
  },
  // The seed uses the app's Prisma client factory (src/prisma) and its API key store (src/auth, for the development
  // warehouse key docker compose seeds), nothing else of the app.
  prisma: {
    may: ['src'],
    why: 'The seed needs only the Prisma client factory of src/prisma and the key store of src/auth.',
  },
  // Simulators stand in for other companies' services: only the pure Idempotency-Key protocol (below).
  simulators: {
    may: ['src', 'providers'],
    why: 'Simulators are other companies: they play the provider definitions and share only src/idempotency/idempotency-protocol.ts.',
  },
  // Tooling runs the product (keys, search attributes, the workflow contract), but never depends on tests or
  // benchmarks, and starts the simulators as processes rather than importing them.
  scripts: {
    may: ['src', 'workflows', 'activities', 'prisma', 'providers'],
    why: 'Scripts run the product; they never import tests, benchmarks or simulators.',
  },
  // The benchmark measures the product with the stack's own tooling; tests are not its business.
  bench: {
    may: ['src', 'workflows', 'activities', 'prisma', 'scripts', 'providers'],
    why: 'The benchmark may use the product and the scripts, not the tests or the simulators.',
  },
  // Tests may reach everything they test, the tooling included; nothing depends on tests, and tests do not
  // depend on the optional benchmark.
  test: {
    may: ['src', 'workflows', 'activities', 'prisma', 'simulators', 'scripts', 'providers'],
    why: 'Tests may import anything but the benchmark.',
  },
};
// Every top-level folder gets a row: a new one fails the lint until its boundaries are written down. Folders without
// code are listed as unchecked: observability/ holds Prometheus rules and Grafana dashboards (YAML and JSON only).
const UNCHECKED = new Set(['node_modules', 'dist', 'coverage', 'artifacts', 'docs', 'observability']);
for (const entry of readdirSync(import.meta.dirname, { withFileTypes: true })) {
  if (entry.isDirectory() && !entry.name.startsWith('.') && !UNCHECKED.has(entry.name) && !BOUNDARIES[entry.name]) {
    throw new Error(
      `eslint.config.js: no boundary rule for the top-level folder ${entry.name}/ (add it to BOUNDARIES)`,
    );
  }
}
const FOLDERS = Object.keys(BOUNDARIES);
const boundaryZones = [
  ...Object.entries(BOUNDARIES).map(([folder, { may, why }]) => ({
    target: `./${folder}`,
    from: FOLDERS.filter((f) => f !== folder && !may.includes(f)).map((f) => `./${f}`),
    message: why,
  })),
  // Finer: the one file of src/ simulators may use, and the one folder of src/ the seed may use.
  {
    target: './simulators',
    from: './src',
    except: ['./idempotency/idempotency-protocol.ts'],
    message: BOUNDARIES.simulators.why,
  },
  { target: './prisma', from: './src', except: ['./prisma', './auth'], message: BOUNDARIES.prisma.why },
  // Of prisma/, code imports only the generated client; the seed runs as a script (`tsx prisma/seed.ts`).
  {
    target: FOLDERS.filter((f) => f !== 'prisma').map((f) => `./${f}`),
    from: './prisma',
    except: ['./generated'],
    message: 'Import the generated Prisma client (prisma/generated) only; run the seed as a script.',
  },
  // The root config files (vitest, prisma, eslint) configure tools; they import no project code.
  {
    target: './*.{ts,js}',
    from: FOLDERS.map((f) => `./${f}`),
    message: 'Root config files import no project code.',
  },
];

// The worker's files of src/: they load the step code (activities/), the API's files never do.
const WORKER_FILES = ['src/worker/**', 'src/worker.ts', 'src/worker.module.ts'];
/** src/ may use the workflow contract, never a workflow implementation as a value. */
const SRC_WORKFLOWS = {
  group: ['**/workflows/*.workflow.js', '**/workflows/**/*.workflow.js', '**/workflows/index.js'],
  allowTypeImports: true,
  message: 'Import workflows/order-fulfilment.contract.js; start workflows by type name.',
};

export default tseslint.config(
  // test/openapi-client: programs against clients generated at test time (tsc --strict checks them there).
  {
    ignores: [
      'dist/',
      'node_modules/',
      'prisma/generated/',
      '.tools/',
      '.data/',
      'coverage/',
      '.wireit/',
      'test/openapi-client/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    languageOptions: {
      globals: { process: 'readonly', console: 'readonly', URL: 'readonly' },
      // Type information for the rules below, from the nearest tsconfig (tsconfig.json covers every .ts file).
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: {
      // import-x reads TypeScript modules with the TypeScript parser (so `import type` is known) and resolves
      // `./x.js` to `./x.ts` as tsc does.
      ...importX.flatConfigs.typescript.settings,
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: 'tsconfig.json' })],
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // A promise nobody awaits loses its rejection (an unhandled rejection kills the process) and its ordering;
      // mark deliberate fire-and-forget with `void`.
      '@typescript-eslint/no-floating-promises': 'error',
      // A promise where a boolean or a void callback is expected (if (promise), emitter.on('x', async ...)) is
      // always truthy or has its rejection dropped.
      '@typescript-eslint/no-misused-promises': 'error',
      // Type-only imports say so: they vanish from the output, so a type never drags a module (or a cycle) in.
      '@typescript-eslint/consistent-type-imports': [
        'error',
        { prefer: 'type-imports', fixStyle: 'inline-type-imports' },
      ],
      // Cycles make module initialisation order-dependent (undefined at import time) and blur the layers.
      // Type-only imports are erased and do not count.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { zones: boundaryZones }],
    },
  },
  {
    // No source file outside test/ over 600 lines (issue 22): split a longer one along its seams. Every line counts,
    // blank and comment lines too, as `wc -l` counts them.
    files: ['**/*.{ts,js,mjs,cjs}'],
    ignores: ['test/**'],
    rules: { 'max-lines': ['error', { max: 600, skipBlankLines: false, skipComments: false }] },
  },
  {
    // Plain JavaScript (the web page's module, the bench's preloads, this file) is not in a tsconfig.
    files: ['**/*.{js,mjs,cjs}'],
    ...tseslint.configs.disableTypeChecked,
  },
  {
    // Workflows run in Temporal's deterministic sandbox: only the workflow SDK, its common types and their own
    // sandbox-safe files; nothing from activities/, not even types (the activities' types are the workflow's
    // contract, workflows/*.contract.ts). The bench's floor workflows too.
    files: ['workflows/**/*.ts', 'bench/floor/workflows.ts', 'test/**/*.workflow.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Node built-ins cannot load in the workflow sandbox.' })),
          patterns: [
            { group: ['@nestjs/*', '@prisma/*', 'prisma', 'pg', 'express'], message: 'Not sandbox-safe.' },
            {
              regex: '(^|/)activities/',
              message:
                'Workflows import nothing from activities/: put shared types in the contract (workflows/*.contract.ts).',
            },
            {
              group: ['@temporalio/*', '!@temporalio/workflow', '!@temporalio/common'],
              message: 'Only @temporalio/workflow and @temporalio/common are sandbox-safe.',
            },
          ],
        },
      ],
    },
  },
  {
    // Activities depend on their ports, never on Nest or metrics; the Prisma client only as a type (the port).
    files: ['activities/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['@nestjs/*'], message: 'Activities never import Nest; depend on activities/ports.ts.' },
            {
              group: ['prom-client'],
              message:
                'Activities never import metrics code; the worker observes them (src/worker/worker-observability.ts).',
            },
            {
              // The client itself comes through the port (ActivityDeps.db), so tests can hand in their own; the one
              // value allowed is the `Prisma` namespace for `Prisma.sql` fragments of raw statements (no connection).
              regex: '(^|/)prisma/',
              allowTypeImports: true,
              allowImportNames: ['Prisma'],
              message:
                'Activities use the Prisma client through their port: `import type`, or `Prisma` for Prisma.sql.',
            },
          ],
        },
      ],
    },
  },
  {
    // The web page's plain browser module (served as is, no build step).
    files: ['src/web/public/**/*.js'],
    languageOptions: {
      sourceType: 'module',
      globals: {
        document: 'readonly',
        window: 'readonly',
        fetch: 'readonly',
        crypto: 'readonly',
        sessionStorage: 'readonly',
        Node: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
      },
    },
  },
  {
    // The app may use the workflow contract, never a workflow implementation as a value.
    files: ['src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', { patterns: [SRC_WORKFLOWS] }],
    },
  },
  {
    // The API (src/ but the worker: src/worker/, src/worker.ts, src/worker.module.ts) reads steps from the catalogue
    // (activities/catalogue/: names, phases, statuses, labels, providers' names, plans) and never loads the worker's
    // runtime: no step code, no kit (SQL), no activities, no provider client, no provider definition (the registry
    // providers/index.ts and each providers/<name>.provider.ts, with its simulator: the providers' configuration is
    // the worker's, src/worker/worker-config.ts). Types (e.g. the ports) may be imported: they vanish from the
    // output. test/unit/api-import-graph.spec.ts proves it on the running import graph.
    files: ['src/**/*.ts'],
    ignores: WORKER_FILES,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            SRC_WORKFLOWS,
            {
              regex: '(^|/)activities/(index|retention\\.activities)\\.js$|(^|/)activities/(steps|kit)/',
              allowTypeImports: true,
              message:
                'The API reads steps from activities/catalogue/ (metadata and plans); step code, the kit and the activities load in the worker only (src/worker/).',
            },
            {
              regex: '(^|/)providers/kit/(client|http)\\.js$',
              allowTypeImports: true,
              message:
                'The API calls no provider: provider clients are built in the worker (src/worker/provider-clients.ts).',
            },
            {
              regex: '(^|/)providers/(index|[^/]+\\.provider)\\.js$',
              allowTypeImports: true,
              message:
                'The API loads no provider definition (nor its simulator): the providers and their configuration are the worker’s (src/worker/worker-config.ts).',
            },
          ],
        },
      ],
    },
  },
  {
    // The shared Idempotency-Key protocol stays pure, so the simulators can import it.
    files: ['src/idempotency/idempotency-protocol.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [{ group: ['@nestjs/*', '@prisma/*', 'express', '../*', './*'], message: 'Keep this file pure.' }],
        },
      ],
    },
  },
);
