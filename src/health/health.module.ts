/** Health feature: `GET /health` (database and Temporal). Needs PRISMA and TEMPORAL_CLIENT. */
import { Module } from '@nestjs/common';
import { HealthController } from './health.controller.js';

@Module({
  controllers: [HealthController],
})
export class HealthModule {}
