/**
 * What the battery's child process (fixtures/step-process.ts) and the test process share. Imports nothing that
 * needs vitest, so the child can load it.
 */
import type { Info } from '@temporalio/activity';
import type { Logger } from '@temporalio/common';
import type { StepInput } from '../../activities/kit/run.js';

/** Where a child process finds the registry of a lane: a module (absolute path) and the name of its export. */
export interface RegistrySource {
  module: string;
  exportName: string;
}

/** Where a child process runs (fixtures/step-process.ts reads it from `CONFORMANCE_LANE` at start). */
export interface ChildLane {
  registry: RegistrySource;
  databaseUrl: string;
}

/** What a child process runs (one JSON line on its stdin, once it printed `ready`). */
export interface ChildJob {
  /** The activity's name (a step of the registry). */
  activity: string;
  input: StepInput;
  info: Partial<Info>;
  /**
   * True: the child's database port holds every transaction open after the step's work, prints `before-commit`
   * and waits (to be killed before COMMIT). False: a normal run.
   */
  hangBeforeCommit: boolean;
}

/** A logger that drops everything: the battery provokes failures on purpose. */
export const SILENT_LOGGER: Logger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
};
