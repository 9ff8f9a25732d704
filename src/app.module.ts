/**
 * Root module of the HTTP API: configuration, logging, Prisma, the Temporal client side (starter and
 * reconciler), and the orders, returns, inventory and health features; `GET /metrics` and the web page at `/`.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type DynamicModule, Module } from '@nestjs/common';
import { LoggerModule, type Params as PinoParams } from 'nestjs-pino';
import { AuthModule } from './auth/auth.module.js';
import { requestClientLogProps } from './common/request-client.js';
import { type AppConfig, loadConfig } from './config/config.js';
import { ConfigModule } from './config/config.module.js';
import { HealthModule } from './health/health.module.js';
import { InventoryModule } from './inventory/inventory.module.js';
import { baseLoggerOptions } from './logging/logging.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { OrdersModule } from './orders/orders.module.js';
import { PrismaModule } from './prisma/prisma.module.js';
import { ReturnsModule } from './returns/returns.module.js';
import { TemporalModule } from './temporal/temporal.module.js';
import { WebModule } from './web/web.module.js';

/** Paths whose requests are not logged: probes and scrapes. */
const UNLOGGED_PATHS = new Set(['/health', '/metrics']);

/** The `req` field of API log lines: `{ id, method, url }` (pino-http hands in its own serialization of the request). */
export function requestSummary(req: { id?: unknown; method?: string; url?: string }): Record<string, unknown> {
  return { id: req.id, method: req.method, url: req.url };
}

/**
 * Level of the one line logged per request: `error` for 5xx (or a failed response), `debug` for successful reads
 * (GET/HEAD: the web page polls them), `info` for everything else (writes, client errors).
 */
export function requestLogLevel(req: IncomingMessage, res: ServerResponse, err?: Error): 'error' | 'info' | 'debug' {
  if (err || res.statusCode >= 500) return 'error';
  if ((req.method === 'GET' || req.method === 'HEAD') && res.statusCode < 400) return 'debug';
  return 'info';
}

/**
 * nestjs-pino options: {@link baseLoggerOptions} (level `LOG_LEVEL`, `LOG_FORMAT`, credential headers redacted,
 * email addresses scrubbed), request ids from `X-Request-Id` (or a new UUID), and on every line logged while
 * handling a request `req: { id, method, url }` and `client` (the API client, or `anonymous`; see request-client.ts). Health probes and
 * metric scrapes are not logged; see {@link requestLogLevel} for the level of the others.
 */
export function loggerParams(config: AppConfig): PinoParams {
  const base = baseLoggerOptions(config);
  return {
    pinoHttp: {
      ...base,
      genReqId: (req: IncomingMessage) => {
        const header = req.headers['x-request-id'];
        return typeof header === 'string' && header.length > 0 && header.length <= 200 ? header : randomUUID();
      },
      // Every line logged while handling a request (and its closing line) carries `req` and `client`; `req` is only
      // { id, method, url }: the default serializer's headers and remote address are personal data or noise.
      serializers: { ...base.serializers, req: requestSummary },
      customProps: requestClientLogProps,
      autoLogging: { ignore: (req: IncomingMessage) => UNLOGGED_PATHS.has((req.url ?? '').split('?')[0]!) },
      customLogLevel: requestLogLevel,
    },
  };
}

@Module({})
export class AppModule {
  /**
   * @param config validated configuration; defaults to {@link loadConfig} over `process.env`.
   */
  static forRoot(config: AppConfig = loadConfig()): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggerModule.forRoot(loggerParams(config)),
        PrismaModule,
        AuthModule,
        TemporalModule,
        OrdersModule,
        ReturnsModule,
        InventoryModule,
        HealthModule,
        MetricsModule,
        WebModule,
      ],
    };
  }
}
