/**
 * The step catalogue: steps' metadata (./steps.ts), its kit (./define.ts), the plans built from it (./plan.ts) and the
 * text helpers its summaries use (./text.ts). What the API reads of steps: no step code, no SQL, no Prisma, no
 * provider (eslint.config.js keeps src/ outside the worker on this folder; test/unit/api-import-graph.spec.ts proves
 * the API process never loads step code).
 */
export * from './define.js';
export * from './plan.js';
export * from './steps.js';
export * from './text.js';
