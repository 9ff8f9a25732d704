/** Assertion helper for provider client tests. */
import { expect } from 'vitest';
import { ProviderError } from '../../providers/kit/errors.js';

/** Runs `fn` and returns the ProviderError it throws; fails the test if it throws anything else or nothing. */
export async function providerError(fn: () => Promise<unknown>): Promise<ProviderError> {
  try {
    await fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ProviderError);
    return error as ProviderError;
  }
  throw new Error('expected a ProviderError');
}
