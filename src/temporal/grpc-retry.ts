/**
 * The gRPC retry interceptor of the API's Temporal connection: the SDK's own ({@link makeGrpcRetryInterceptor} with
 * {@link defaultGrpcRetryOptions}: UNAVAILABLE and the like retried with backoff), made safe for shutdown.
 *
 * The SDK's interceptor schedules each retry with a timer that nothing cancels: a call whose caller gave up (an
 * aborted health check, a probe past its deadline) keeps retrying in the background while Temporal is down, and a
 * retry that fires after the connection was closed throws "Channel has been shut down" from the timer, an uncaught
 * exception (seen when the API stops during a Temporal outage). Here a retry that finds the channel closed ends the
 * call with status CANCELLED instead, which the retry policy does not retry.
 */
import { Metadata, status as GrpcStatus, type Interceptor } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

/** What an interceptor's `nextCall` returns (grpc-js does not export the interface by name). */
type NextCallResult = ReturnType<Parameters<Interceptor>[1]>;

/** A call that never reaches the network and ends at once with CANCELLED and `details`. */
function endedCall(details: string): NextCallResult {
  return {
    start(_metadata, listener) {
      setImmediate(() =>
        listener?.onReceiveStatus?.({ code: GrpcStatus.CANCELLED, details, metadata: new Metadata() }),
      );
    },
    sendMessage() {},
    sendMessageWithContext() {},
    startRead() {},
    halfClose() {},
    cancelWithStatus() {},
    getPeer: () => '',
    getAuthContext: () => null,
  };
}

/** The SDK's retry interceptor whose retries end quietly (CANCELLED) once the channel is closed. */
export function makeShutdownSafeRetryInterceptor(): Interceptor {
  const retrying = makeGrpcRetryInterceptor(defaultGrpcRetryOptions());
  return (options, nextCall) =>
    retrying(options, (callOptions) => {
      try {
        return nextCall(callOptions);
      } catch (err) {
        return endedCall(err instanceof Error ? err.message : String(err));
      }
    });
}
