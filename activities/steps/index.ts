/**
 * The step registry of the worker: one definition (the step's code) per entry of the step catalogue
 * (activities/catalogue/steps.ts), in the catalogue's order. The catalogue is the one list of steps: everything that
 * lists steps or statuses derives from it (the plan each new order runs, and so the workflow's sequence; the API's
 * statuses, labels and step track; the docs tables; the metric labels); this registry adds the code, for the worker's
 * activities, the reconciler's fence and the conformance battery.
 *
 * Each entry's definition is the export of its activity name from `./<kebab-name>.step.ts` (e.g. `shipOrder` from
 * ./ship-order.step.ts), loaded here, so a new step needs no line in this file: its entry in the catalogue and its
 * file (`npm run new:step` writes both). Every definition must spread its entry unchanged: a definition that differs
 * from its entry in any member the catalogue holds (a status, a label, a provider, a compensation's name, a `when`...)
 * stops the worker at start, naming the member. Only the worker (and the tools and tests) import this file; the API
 * reads the catalogue. See docs/extending.md.
 */
import { sameEntry, stepFileName, STEP_CATALOGUE, type StepEntry } from '../catalogue/index.js';
import { validateSteps, type StepDefinition } from '../kit/define.js';

/**
 * The definitions of `entries`, each the export of its name from its step file, checked against its entry.
 * @throws Error naming each entry whose file lacks its export, or whose definition differs from the entry.
 */
async function loadDefinitions(entries: readonly StepEntry[]): Promise<StepDefinition[]> {
  const definitions = await Promise.all(
    entries.map(async (entry) => {
      const file = stepFileName(entry.name).replace(/\.ts$/, '.js');
      // A file name from the catalogue (not a literal): `@vite-ignore` keeps vitest from rewriting it to a glob.
      const module = (await import(/* @vite-ignore */ `./${file}`)) as Record<string, StepDefinition | undefined>;
      return module[entry.name];
    }),
  );
  const problems = entries.flatMap((entry, i) => {
    const definition = definitions[i];
    if (!definition) return [`${entry.name}: ${stepFileName(entry.name)} exports no ${entry.name}`];
    const differ = sameEntry(definition, entry);
    return differ.length > 0 ? [`${entry.name}: its definition differs from its catalogue entry in ${differ}`] : [];
  });
  if (problems.length > 0) throw new Error(`Step registry out of step with the catalogue:\n  ${problems.join('\n  ')}`);
  return definitions as StepDefinition[];
}

/** Every step's definition, in the order an order runs them (the catalogue's). */
export const STEPS: readonly StepDefinition[] = validateSteps(await loadDefinitions(STEP_CATALOGUE));
