/**
 * promtool, Prometheus' checker of rule files, rule unit tests and PromQL, found or built from the Go module proxy
 * (scripts/lib/go-tools.ts): `PROMTOOL_PATH`, else `.tools/promtool-<module version>/promtool`, else `go install`
 * (about 6 minutes on 2 cores with cold Go caches).
 */
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

/**
 * Runs `promtool <args...>` (2 minutes at most) without throwing on a non-zero exit.
 * @returns its exit code and its stdout and stderr, interleaved.
 */
export async function runPromtool(promtool: string, args: readonly string[], cwd?: string) {
  const result = await execa(promtool, [...args], { cwd, all: true, reject: false, timeout: 120_000, stdin: 'ignore' });
  return { exitCode: result.exitCode ?? 1, output: String(result.all ?? '') };
}
