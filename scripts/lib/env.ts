/** Small helpers shared by the scripts. */

/**
 * Reads a TCP port from the environment variable `name`, or `fallback` when it is unset or empty.
 * @throws Error when it is set but is not an integer in 1..65535.
 */
export function portFromEnv(name: string, fallback: number): number {
  const raw = process.env[name]?.trim();
  if (!raw) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 1 || value > 65535) throw new Error(`${name}=${raw} is not a TCP port`);
  return value;
}

/** The message of an Error, or the value as a string. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
