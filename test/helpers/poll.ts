/** Polling for the end-to-end suites: wait for what the real stack does in its own time. */

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `read` every 25 ms until `done` holds, for at most `timeoutMs` (default 45 s).
 * @returns the last value read (the caller asserts on it, so a timeout fails with what was seen).
 */
export async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 45_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let value = await read();
  while (!done(value) && Date.now() < deadline) {
    await sleep(25);
    value = await read();
  }
  return value;
}
