/** Text helpers for steps: money and masked personal data (what the Temporal UI and the logs may show). */

/** Formats integer minor units for display, e.g. (1999, 'EUR') → `19.99 EUR`. Exact: no floats. */
export function formatMinor(amountMinor: number, currency: string): string {
  const sign = amountMinor < 0 ? '-' : '';
  const abs = Math.abs(amountMinor);
  return `${sign}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')} ${currency}`;
}

/**
 * An email address masked for operators' screens: the first character of the local part and the domain, e.g.
 * `ada.lovelace@example.com` → `a…@example.com`. Never the full address (docs/operations.md, personal data).
 */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at <= 0) return '…';
  return `${email.slice(0, 1)}…${email.slice(at)}`;
}
