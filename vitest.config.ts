/**
 * Vitest configuration. SWC compiles the TypeScript so NestJS gets decorator metadata
 * (esbuild/oxc do not emit `design:paramtypes`), per the NestJS testing recipe for Vitest.
 * One global setup starts what every suite shares: a PostgreSQL template database with all
 * migrations applied, and one Temporal dev server. Each suite then gets its own database (cloned from
 * the template) and its own task queue, so suites never share state.
 */
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  plugins: [
    swc.vite({
      jsc: {
        target: 'es2022',
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
      },
    }),
  ],
  test: {
    // test/cluster runs against a running Temporal cluster (`npm run test:cluster`), never in `npm test`.
    include:
      process.env.VITEST_CLUSTER === '1'
        ? ['test/cluster/**/*.spec.ts']
        : ['test/**/*.spec.ts', 'test/**/*.e2e-spec.ts'],
    // test/extending runs only in the copy scripts/check-extending.ts makes (EXTENDING_EXAMPLE_STEPS names the steps
    // the worked examples added there), never as a skipped file here.
    exclude:
      process.env.VITEST_CLUSTER === '1'
        ? []
        : ['test/cluster/**', 'node_modules/**', ...(process.env.EXTENDING_EXAMPLE_STEPS ? [] : ['test/extending/**'])],
    globalSetup: ['test/helpers/global-setup.ts'],
    setupFiles: ['test/helpers/setup-runtime.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    maxWorkers: 2,
    reporters: ['default'],
  },
});
