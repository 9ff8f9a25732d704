/** promtool (rules, rule tests, PromQL), found or built by go-tools.ts (`PROMTOOL_PATH`, ~6 min to build on 2 cores). */
import { execa } from 'execa';
import { ensureGoTool, type GoToolSpec } from './go-tools.js';
import type { LogFn } from './processes.js';

/** The Prometheus release the rules are written for (the compose profile's prom/prometheus image). */
export const PROMETHEUS_VERSION = '3.16.0';
/** Its Go module version: Prometheus 3.x is published as module versions v0.3xx.y. */
const MODULE_VERSION = '0.316.0';

const PROMTOOL: GoToolSpec = {
  label: 'promtool',
  folder: `promtool-${MODULE_VERSION}`,
  goPackage: 'github.com/prometheus/prometheus/cmd/promtool',
  version: MODULE_VERSION,
  envVar: 'PROMTOOL_PATH',
  buildArgs: ['-ldflags', `-X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION}`],
};

/** Finds or builds promtool. @throws Error when there is none and no Go toolchain to build it, or the build fails. */
export const ensurePromtool = (log: LogFn): Promise<string> => ensureGoTool(PROMTOOL, log);

/** Runs `promtool <args>` (2 min at most). @returns its exit code and interleaved output; never throws on an exit. */
export async function runPromtool(promtool: string, args: readonly string[], cwd?: string) {
  const result = await execa(promtool, [...args], { cwd, all: true, reject: false, timeout: 120_000, stdin: 'ignore' });
  return { exitCode: result.exitCode ?? 1, output: String(result.all ?? '') };
}
