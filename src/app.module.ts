/**
 * Root module of the HTTP API: configuration, logging, Prisma, the Temporal client side (starter and
 * reconciler), and the orders, inventory and health features.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { createRequire } from 'node:module';
import { type DynamicModule, Module } from '@nestjs/common';
import { LoggerModule, type Params as PinoParams } from 'nestjs-pino';
import { type AppConfig, loadConfig } from './config/config.js';
import { ConfigModule } from './config/config.module.js';
import { HealthModule } from './health/health.module.js';
import { InventoryModule } from './inventory/inventory.module.js';
import { OrdersModule } from './orders/orders.module.js';
import { PrismaModule } from './prisma/prisma.module.js';
import { TemporalModule } from './temporal/temporal.module.js';

/** True when `pino-pretty` (a dev dependency) is installed. */
function hasPinoPretty(): boolean {
  try {
    createRequire(import.meta.url).resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/**
 * nestjs-pino options: level `LOG_LEVEL`, pretty output only when stdout is a TTY and pino-pretty is
 * installed (JSON lines otherwise), request ids from `X-Request-Id` (or a new UUID), credentials redacted,
 * health probes not logged.
 */
export function loggerParams(config: AppConfig): PinoParams {
  return {
    pinoHttp: {
      level: config.LOG_LEVEL,
      transport:
        process.stdout.isTTY && hasPinoPretty() ? { target: 'pino-pretty', options: { singleLine: true } } : undefined,
      genReqId: (req: IncomingMessage) => {
        const header = req.headers['x-request-id'];
        return typeof header === 'string' && header.length > 0 && header.length <= 200 ? header : randomUUID();
      },
      redact: ['req.headers.authorization', 'req.headers.cookie'],
      autoLogging: { ignore: (req: IncomingMessage) => req.url === '/health' },
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
        TemporalModule,
        OrdersModule,
        InventoryModule,
        HealthModule,
      ],
    };
  }
}
