/** A bounded wait, for shutdown steps that must not hold the process open (closing a database pool). */
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Waits for `work` at most `ms` milliseconds.
 * @returns true when `work` resolved in time, false when the time ran out first (`work` goes on unobserved; its
 *   rejection after that is ignored). A rejection within the time is rethrown.
 */
export async function settlesWithin(work: Promise<unknown>, ms: number): Promise<boolean> {
  const abort = new AbortController();
  work.catch(() => undefined);
  try {
    return await Promise.race([work.then(() => true), sleep(ms, false, { signal: abort.signal }).catch(() => false)]);
  } finally {
    abort.abort();
  }
}
