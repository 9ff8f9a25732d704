/**
 * A provider's HTTP client, from its definition (./define.ts): what the worker's provider steps call. The API never
 * loads it (eslint.config.js), as it calls no provider.
 */
import { callProvider, type ProviderHttpOptions } from './http.js';
import { ProviderError } from './errors.js';
import {
  operationPath,
  withoutPathParams,
  type AnyOperation,
  type OperationDefinition,
  type ProviderAnswer,
  type ProviderClient,
  type ProviderDefinition,
} from './define.js';

/** Connection settings of one provider's client, and its settings (e.g. `{ from }`). */
export interface ProviderClientOptions extends ProviderHttpOptions {
  settings?: Readonly<Record<string, string>>;
}

/**
 * The HTTP client of `provider`: each operation sends its request (with the provider's settings applied) as JSON
 * with `Idempotency-Key: <key>` and the bearer token, to its path filled from the request (the path's members left
 * out of the body when the operation says `paramsInBody: false`), and parses the 2xx answer with the operation's
 * schema.
 * @returns one method per operation.
 * @throws (from each method) ProviderError: `unavailable` (5xx, 408, 425, 429, a timeout after `timeoutMs` ms, a
 *   network error, a 2xx whose body does not match the response schema), `conflict` (409: the key is in flight),
 *   `unauthorized` (401/403), `rejected` (other 4xx, or a request that cannot be sent: see ./http.ts and
 *   {@link operationPath}; `mayHaveActed` false).
 */
export function createProviderClient<Ops extends Record<string, AnyOperation>>(
  provider: ProviderDefinition<Ops>,
  options: ProviderClientOptions,
): ProviderClient<Ops> {
  const settings = options.settings ?? {};
  const client: Record<string, (request: unknown, key: string) => Promise<ProviderAnswer>> = {};
  for (const [name, operation] of Object.entries(provider.operations) as Array<[string, OperationDefinition]>) {
    client[name] = async (request, idempotencyKey) => {
      const full = operation.withSettings ? operation.withSettings(request, settings) : request;
      const path = operationPath(operation.path, full);
      const body = operation.paramsInBody === false ? withoutPathParams(operation.path, full) : full;
      const { status, body: answer } = await callProvider(options, {
        provider: provider.name,
        method: operation.method,
        path,
        idempotencyKey,
        body,
      });
      return parseAnswer(provider.name, operation, `${operation.method} ${path}`, status, answer);
    };
  }
  return client as ProviderClient<Ops>;
}

/**
 * Parses a 2xx answer with the operation's response schema.
 * @throws ProviderError `unavailable` (the provider answered 2xx, so it may have acted: `mayHaveActed` true) when
 *   the answer does not match the schema or carries no id.
 */
export function parseAnswer(
  provider: string,
  operation: OperationDefinition,
  what: string,
  status: number,
  answer: unknown,
): ProviderAnswer {
  const parsed = operation.response.safeParse(answer);
  const providerId = parsed.success ? operation.providerId(parsed.data) : undefined;
  if (!parsed.success || typeof providerId !== 'string' || providerId === '') {
    throw new ProviderError(
      `${provider} provider ${what} → ${status} with an answer that does not match its schema`,
      'unavailable',
      status,
    );
  }
  return { response: parsed.data, providerId, status };
}
