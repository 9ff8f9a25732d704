/**
 * `GET /steps` → 200 {@link StepsView}: the step registry as clients and the web page need it (the steps an order
 * runs now, in order, and every status with its label), so nothing outside the registry lists steps or statuses.
 * Any valid API key.
 */
import { Controller, Get } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { z } from 'zod';
import { STEP_CATALOGUE } from '../../activities/catalogue/index.js';
import { isTerminalStatus, OrderStatus } from '../../workflows/order-fulfilment.contract.js';
import { StepPhase } from '../../workflows/order-plan.js';
import { ORDER_STATUSES, STATUS_LABELS } from './order-steps.js';
import { orderStatusSchema, stepNameSchema, stepPhaseSchema } from './order-response.dto.js';

/** The registry as `GET /steps` shows it. */
export const stepsViewSchema = z
  .object({
    steps: z.array(
      z.object({
        name: stepNameSchema,
        label: z.string().meta({ example: 'Shipped' }),
        description: z.string(),
        phase: stepPhaseSchema,
        kind: z.enum(['database', 'provider', 'event']).meta({
          description: '`event`: a bounded wait for an outside event (e.g. the warehouse reporting the order packed)',
        }),
        provider: z.string().nullable().meta({ description: 'The provider a provider step calls', example: 'email' }),
        status: orderStatusSchema,
        compensation: z.string().nullable().meta({ description: 'The compensation’s activity name, if any' }),
      }),
    ),
    statuses: z.array(
      z.object({
        status: orderStatusSchema,
        label: z.string(),
        final: z.boolean(),
        cancellable: z.boolean().meta({ description: 'An order in this status may still be cancelled' }),
      }),
    ),
  })
  .meta({ id: 'Steps' });

/** The body of `GET /steps`. */
export type StepsView = z.infer<typeof stepsViewSchema>;

/** The registry's view, computed once: the registry does not change while the process runs. */
function stepsView(): StepsView {
  const pivotAt = STEP_CATALOGUE.findIndex((s) => s.phase === StepPhase.Pivot);
  const beforePivot = new Set([
    OrderStatus.Received as string,
    ...STEP_CATALOGUE.slice(0, pivotAt).map((s) => s.status),
  ]);
  return {
    steps: STEP_CATALOGUE.map((s, i) => ({
      name: s.name,
      label: s.label,
      description: s.description,
      phase: s.phase,
      kind: s.kind,
      provider: s.kind === 'provider' ? s.provider : null,
      status: i === STEP_CATALOGUE.length - 1 ? OrderStatus.Completed : s.status,
      compensation: s.compensation?.name ?? null,
    })),
    statuses: ORDER_STATUSES.map((status) => ({
      status,
      label: STATUS_LABELS[status] ?? status,
      final: isTerminalStatus(status),
      cancellable: beforePivot.has(status),
    })),
  };
}

const VIEW = stepsView();

@ApiTags('orders')
@Controller('steps')
export class StepsController {
  /** The steps of a new order and every status. */
  @Get()
  @ApiOperation({
    operationId: 'getSteps',
    summary: 'The steps an order runs and its statuses',
    description:
      'The step registry: each step with its phase around the point of no return (the pivot), the status it leads ' +
      'to and its compensation; every status with its label. An order placed now runs these steps; each order ' +
      'shows its own plan in `steps`. Any valid API key.',
  })
  @ApiOkResponse({ description: 'The registered steps in order, and every status', standardSchema: stepsViewSchema })
  get(): StepsView {
    return VIEW;
  }
}
