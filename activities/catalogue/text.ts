/**
 * Text helpers for steps and their catalogue entries: money, masked personal data (what the Temporal UI and the logs may show), and
 * {@link displayText} for any text a customer controls that a step shows a person (a summary, an email): without
 * invisible characters that could reorder what follows it, a right-to-left name isolated (workflows/display-text.ts).
 */
export { displayText } from '../../workflows/display-text.js';

/**
 * The number of minor-unit digits of an ISO 4217 currency (EUR 2, JPY 0, BHD 3), from the runtime's ICU data;
 * 2 for a code ICU does not know.
 */
export function currencyExponent(currency: string): number {
  try {
    return new Intl.NumberFormat('en', { style: 'currency', currency }).resolvedOptions().maximumFractionDigits ?? 2;
  } catch {
    return 2;
  }
}

/**
 * Formats integer minor units for display with the currency's ISO 4217 exponent, e.g. (1999, 'EUR') → `19.99 EUR`,
 * (1999, 'JPY') → `1999 JPY`, (1999, 'BHD') → `1.999 BHD`. Exact: integer arithmetic on a bigint, no floats.
 */
export function formatMinor(amountMinor: number, currency: string): string {
  const digits = currencyExponent(currency);
  const sign = amountMinor < 0 ? '-' : '';
  const abs = BigInt(Math.abs(Math.trunc(amountMinor)));
  if (digits === 0) return `${sign}${abs} ${currency}`;
  const scale = 10n ** BigInt(digits);
  return `${sign}${abs / scale}.${String(abs % scale).padStart(digits, '0')} ${currency}`;
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

/** `count` with its noun, in English: `1 unit`, `3 units` (`plural` defaults to the noun + `s`). */
export function plural(count: number, noun: string, pluralNoun = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : pluralNoun}`;
}
