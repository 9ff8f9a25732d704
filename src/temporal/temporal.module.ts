/**
 * Global module of the Temporal client: the {@link TEMPORAL_CLIENT} `Client` (the order's workflow services that use
 * it are in src/orders/workflow/). Requires APP_CONFIG.
 *
 * The connection is lazy (`Connection.lazy`): the API starts, and accepts orders, while Temporal is down;
 * each call connects on demand and fails after its deadline. The connection closes on shutdown.
 */
import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Client, Connection } from '@temporalio/client';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { temporalConnectionOptions } from '../config/temporal-connection.js';
import { makeShutdownSafeRetryInterceptor } from './grpc-retry.js';
import { TEMPORAL_CLIENT } from './temporal.constants.js';

/**
 * gRPC channel arguments of the API's connection: after Temporal was unreachable, grpc-js waits before it tries to
 * reconnect, backing off up to 120 s by default, and every call fails fast meanwhile; capped at 1 s here, so the
 * first call after Temporal returns finds the channel connected again (the start dispatcher resumes within about a
 * second). Names: https://grpc.github.io/grpc/core/group__grpc__arg__keys.html
 */
export const TEMPORAL_CHANNEL_ARGS = {
  'grpc.initial_reconnect_backoff_ms': 100,
  'grpc.min_reconnect_backoff_ms': 100,
  'grpc.max_reconnect_backoff_ms': 1_000,
} as const;

/**
 * Builds a Client on a lazy connection to `TEMPORAL_ADDRESS` (TLS and credentials from
 * {@link temporalConnectionOptions}, the SDK's gRPC retries made shutdown-safe), namespace `TEMPORAL_NAMESPACE`.
 * @throws ConfigError when a configured certificate file cannot be read.
 */
export function createTemporalClient(config: AppConfig): Client {
  const connection = Connection.lazy({
    ...temporalConnectionOptions(config),
    channelArgs: TEMPORAL_CHANNEL_ARGS,
    interceptors: [makeShutdownSafeRetryInterceptor()],
  });
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
}

@Global()
@Module({
  providers: [{ provide: TEMPORAL_CLIENT, inject: [APP_CONFIG], useFactory: createTemporalClient }],
  exports: [TEMPORAL_CLIENT],
})
export class TemporalModule implements OnApplicationShutdown {
  constructor(@Inject(TEMPORAL_CLIENT) private readonly client: Client) {}

  /** Closes the gRPC connection. */
  async onApplicationShutdown(): Promise<void> {
    await this.client.connection.close();
  }
}
