// ESLint flat config: typescript-eslint recommended rules, Prettier for formatting, and the import
// boundaries of shared/DESIGN.md enforced as rules rather than left to review.
import js from '@eslint/js';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';

const nodeBuiltins = [...builtinModules, ...builtinModules.map((m) => `node:${m}`)];

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'prisma/generated/', '.tools/', '.data/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  prettier,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // Workflows run in Temporal's deterministic sandbox: only the workflow SDK, its common types, their
    // own sandbox-safe files, and `import type` from activities.
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({ name, message: 'Node built-ins cannot load in the workflow sandbox.' })),
          patterns: [
            { group: ['@nestjs/*', '@prisma/*', 'prisma', 'pg', 'express'], message: 'Not sandbox-safe.' },
            {
              group: ['../src/*', '../src/**', '../prisma/**', '../simulators/**'],
              message: 'Workflows may not import app code.',
            },
            {
              group: ['../activities/*', '../activities/**'],
              allowTypeImports: true,
              message: 'Use `import type` from activities.',
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
    // Activities depend on their ports, never on Nest or the app.
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
            { group: ['../src/*', '../src/**'], message: 'Activities depend on ports, not on app code.' },
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
    // Simulators stand in for other companies' services: they share only the pure Idempotency-Key protocol
    // with the app (src/idempotency/idempotency-protocol.ts), nothing else from src/.
    files: ['simulators/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)src/(?!idempotency/idempotency-protocol\\.js$)',
              message: 'Simulators may import only src/idempotency/idempotency-protocol.js from the app.',
            },
          ],
        },
      ],
    },
  },
  {
    // The app may use the workflow contract, never a workflow implementation as a value.
    files: ['src/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/workflows/*.workflow.js', '**/workflows/index.js'],
              allowTypeImports: true,
              message: 'Import workflows/order-fulfilment.contract.js; start workflows by type name.',
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
