// A Node module hook (node --import): appends the URL of every module the process loads, one a line, to the file
// named by RECORD_LOADED_MODULES. Registered after tsx's hooks, it runs first and sees the files tsx resolved (.ts).
// Used by test/unit/api-import-graph.spec.ts to read the import graph of a process as it ran.
import { register } from 'node:module';

const hooks = `
import { appendFileSync } from 'node:fs';
export async function load(url, context, next) {
  if (url.startsWith('file:')) appendFileSync(process.env.RECORD_LOADED_MODULES, url + '\\n');
  return next(url, context);
}`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`, import.meta.url);
