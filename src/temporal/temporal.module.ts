/**
 * Global module of the Temporal client side: the {@link TEMPORAL_CLIENT} `Client`, the
 * {@link OrderWorkflowStarter}, the {@link OrderWorkflowActions} (cancel, retry) and the {@link OrderWorkflowReconciler}
 * loop (with its sweeper). Requires APP_CONFIG and PRISMA.
 *
 * The connection is lazy (`Connection.lazy`): the API starts, and accepts orders, while Temporal is down;
 * each call connects on demand and fails after its deadline. The connection closes on shutdown.
 */
import { Global, Inject, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Client, Connection } from '@temporalio/client';
import { APP_CONFIG, type AppConfig } from '../config/config.js';
import { OrderWorkflowActions } from './order-workflow-actions.service.js';
import { OrderWorkflowReconciler } from './order-workflow-reconciler.service.js';
import { OrderWorkflowStarter } from './order-workflow-starter.service.js';
import { TEMPORAL_CLIENT } from './temporal.constants.js';

/** Builds a Client on a lazy connection to `TEMPORAL_ADDRESS`, namespace `TEMPORAL_NAMESPACE`. */
export function createTemporalClient(config: AppConfig): Client {
  const connection = Connection.lazy({ address: config.TEMPORAL_ADDRESS });
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
}

@Global()
@Module({
  providers: [
    { provide: TEMPORAL_CLIENT, inject: [APP_CONFIG], useFactory: createTemporalClient },
    OrderWorkflowStarter,
    OrderWorkflowActions,
    OrderWorkflowReconciler,
  ],
  exports: [TEMPORAL_CLIENT, OrderWorkflowStarter, OrderWorkflowActions, OrderWorkflowReconciler],
})
export class TemporalModule implements OnApplicationShutdown {
  constructor(@Inject(TEMPORAL_CLIENT) private readonly client: Client) {}

  /** Closes the gRPC connection. */
  async onApplicationShutdown(): Promise<void> {
    await this.client.connection.close();
  }
}
