/**
 * Who sent a request, for logs and metrics (`client` field and label).
 *
 * Requests are not authenticated yet, so every request is {@link ANONYMOUS_CLIENT} (`anonymous`), the same name the
 * idempotency layer uses as its key scope. When API keys arrive, this is the one place that maps a request to its
 * client: logs (src/logging) and metrics (src/metrics) pick it up from here.
 */
import type { IncomingMessage } from 'node:http';
import { ANONYMOUS_CLIENT } from '../metrics/metric-definitions.js';

export { ANONYMOUS_CLIENT };

/**
 * The client a request belongs to: a short, bounded identifier safe for a log field and a metric label (never a
 * credential or personal data).
 * @returns `anonymous` until requests are authenticated.
 */
export function requestClient(_req: IncomingMessage): string {
  return ANONYMOUS_CLIENT;
}
