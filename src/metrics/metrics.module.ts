/**
 * The API's metrics: {@link ApiMetrics} (prom-client registry), `GET /metrics`, the request metrics of every route
 * (HttpMetricsMiddleware) and the middleware that counts the answers of `POST /orders`. Needs PRISMA (global).
 */
import { type MiddlewareConsumer, Module, type NestModule, RequestMethod } from '@nestjs/common';
import { ApiMetrics } from './api-metrics.js';
import { MetricsController } from './metrics.controller.js';
import { HttpMetricsMiddleware } from './http-metrics.middleware.js';
import { OrdersMetricsMiddleware } from './orders-metrics.middleware.js';

@Module({
  providers: [ApiMetrics],
  controllers: [MetricsController],
  exports: [ApiMetrics],
})
export class MetricsModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(HttpMetricsMiddleware).forRoutes('*');
    consumer.apply(OrdersMetricsMiddleware).forRoutes({ path: 'orders', method: RequestMethod.POST });
  }
}
