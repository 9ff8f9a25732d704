/**
 * The pseudonymous `CustomerId` search attribute (src/orders/workflow/customer-id.ts): HMAC-SHA256 of the trimmed,
 * lower-cased email with the configured secret, first 16 hex digits.
 */
import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { customerSearchId } from '../../src/orders/workflow/customer-id.js';

const SECRET = 'test-secret-0123456789';

describe('customerSearchId', () => {
  it('is the first 16 hex digits of HMAC-SHA256(secret, lower-cased email)', () => {
    const expected = createHmac('sha256', SECRET).update('ada@example.com').digest('hex').slice(0, 16);
    expect(customerSearchId('ada@example.com', SECRET)).toBe(expected);
    expect(expected).toMatch(/^[0-9a-f]{16}$/);
  });

  it('ignores letter case and surrounding spaces, and never contains the email', () => {
    const id = customerSearchId('ada@example.com', SECRET);
    expect(customerSearchId('  Ada@Example.COM ', SECRET)).toBe(id);
    expect(id).not.toContain('ada');
  });

  it('differs between customers and between secrets', () => {
    expect(customerSearchId('grace@example.com', SECRET)).not.toBe(customerSearchId('ada@example.com', SECRET));
    expect(customerSearchId('ada@example.com', `${SECRET}-rotated`)).not.toBe(
      customerSearchId('ada@example.com', SECRET),
    );
  });
});
