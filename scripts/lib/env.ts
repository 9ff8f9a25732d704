/** Small helpers shared by the scripts. */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The nearest folder above this file holding a `package.json`. @throws Error when there is none. */
export function repoRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  while (!existsSync(path.join(dir, 'package.json'))) {
    if (dir === path.dirname(dir)) throw new Error(`No package.json above ${fileURLToPath(import.meta.url)}`);
    dir = path.dirname(dir);
  }
  return dir;
}

/** The message of an Error, or the value as a string. */
export const errorMessage = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** Runs a script's `main` and exits with the code it returns (default 0), or prints `<prefix><error>` and exits 1. */
export function runMain(main: () => Promise<number | void>, prefix: string, describe = errorMessage): void {
  main().then(
    (code) => process.exit(code ?? 0),
    (error: unknown) => {
      console.error(`${prefix}${describe(error)}`);
      process.exit(1);
    },
  );
}
