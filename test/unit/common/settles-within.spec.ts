import { describe, expect, it } from 'vitest';
import { settlesWithin } from '../../../src/common/settles-within.js';

const after = (ms: number, fail = false) =>
  new Promise<void>((resolve, reject) => setTimeout(() => (fail ? reject(new Error('late failure')) : resolve()), ms));

describe('settlesWithin', () => {
  it('is true when the work resolves in time', async () => {
    expect(await settlesWithin(after(10), 1000)).toBe(true);
  });

  it('is false when the time runs out first, and ignores a later rejection', async () => {
    const started = Date.now();
    expect(await settlesWithin(after(300, true), 50)).toBe(false);
    expect(Date.now() - started).toBeLessThan(250);
    await after(350); // the late rejection must not surface as an unhandled rejection
  });

  it('rethrows a rejection within the time', async () => {
    await expect(settlesWithin(after(10, true), 1000)).rejects.toThrow('late failure');
  });
});
