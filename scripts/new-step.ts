/**
 * `npm run new:step -- <activityName> [--provider <name>] [--after <step>]`: writes a working step definition and
 * places it in the step registry; for a provider the registry does not know, also writes the provider and registers
 * it (scripts/lib/new-step.ts). Refuses with one line and exit 1, writing nothing, when the name is taken or invalid,
 * `--after` names no step, or the provider name is not `[a-z][a-z0-9]*`. See docs/extending.md.
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
