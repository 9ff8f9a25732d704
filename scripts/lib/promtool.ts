/**
 * promtool, Prometheus' own checker of rule files and rule unit tests, found or built from the Go module proxy the
 * way the Temporal cluster's binaries are (scripts/lib/go-tools.ts): `PROMTOOL_PATH`, else
 * `.tools/promtool-<module version>/promtool`, else `GOBIN=<that folder> go install
 * github.com/prometheus/prometheus/cmd/promtool@v<module version>` (about 6 minutes on 2 cores with cold Go caches,
 * seconds with warm ones). Used by scripts/check-observability.ts and test/unit/observability-assets.spec.ts.
 */
import { execa } from 'execa';
import { ensureGoTool, type GoToolSpec } from './go-tools.js';
import type { LogFn } from './processes.js';

/** The Prometheus release the rules are written for (the compose profile's prom/prometheus image). */
export const PROMETHEUS_VERSION = '3.16.0';
/** Its Go module version: Prometheus 3.x is published as module versions v0.3xx.y (3.16.0 is v0.316.0). */
export const PROMETHEUS_MODULE_VERSION = '0.316.0';

/** `github.com/prometheus/prometheus/cmd/promtool`, into `.tools/promtool-<module version>/promtool`. */
export const PROMTOOL_TOOL: GoToolSpec = {
  label: 'promtool',
  folder: `promtool-${PROMETHEUS_MODULE_VERSION}`,
  binary: 'promtool',
  goPackage: 'github.com/prometheus/prometheus/cmd/promtool',
  version: PROMETHEUS_MODULE_VERSION,
  envVar: 'PROMTOOL_PATH',
  // Without it the binary reports an empty version (the release Makefile sets it the same way).
  buildArgs: ['-ldflags', `-X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION}`],
};

/**
 * Finds or builds promtool ({@link ensureGoTool}).
 * @returns the binary's absolute path.
 * @throws Error when there is none and no Go toolchain to build it, or the build fails.
 */
export async function ensurePromtool(log: LogFn): Promise<string> {
  return ensureGoTool(PROMTOOL_TOOL, log);
}

/** What one promtool run printed, and how it ended. */
export interface PromtoolResult {
  /** Exit code (0: every check passed). */
  exitCode: number;
  /** stdout and stderr, interleaved as promtool wrote them. */
  output: string;
}

/**
 * Runs `promtool <args...>` (2 minutes at most) without throwing on a non-zero exit.
 * @param promtool the binary's path ({@link ensurePromtool}).
 * @param cwd the folder relative paths in `args` (and in a rule test file's `rule_files`) start from.
 */
export async function runPromtool(promtool: string, args: readonly string[], cwd?: string): Promise<PromtoolResult> {
  const result = await execa(promtool, [...args], { cwd, all: true, reject: false, timeout: 120_000, stdin: 'ignore' });
  return { exitCode: result.exitCode ?? 1, output: String(result.all ?? '') };
}
