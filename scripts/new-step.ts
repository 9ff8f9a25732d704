/**
 * `npm run new:step -- <activityName> [options]`: copies a step template and places it in the registry, or refuses
 * with one line and exit 1, writing nothing (scripts/lib/new-step.ts; docs/extending.md).
 */
import { errorMessage, repoRoot } from './lib/env.js';
import { runNewStep, ScaffoldRefusal } from './lib/new-step.js';

try {
  console.log(await runNewStep(process.argv.slice(2), repoRoot()));
} catch (err) {
  if (!(err instanceof ScaffoldRefusal)) throw err;
  console.error(`new:step: ${errorMessage(err)}`);
  process.exit(1);
}
