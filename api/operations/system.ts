import { z } from 'zod';
import { ApiError } from '../errors.js';
import type { Operation } from '../operation.js';
import type { ApiDeps } from '../deps.js';

/** GET /health answers whether PostgreSQL does. */
type Deps = Pick<ApiDeps, 'database'>;

export function systemOperations(s: Deps, openapi: () => Record<string, unknown>): Operation[] {
  return [
    {
      method: 'GET',
      path: '/health',
      operationId: 'getHealth',
      tag: 'system',
      summary: 'Check API health',
      action: null,
      response: z.object({ status: z.literal('ok'), checks: z.object({ database: z.literal('ok') }) }),
      handler: async () => {
        try {
          await s.database.ping();
        } catch {
          throw new ApiError('unavailable', 'database unavailable');
        }
        return { body: { status: 'ok', checks: { database: 'ok' } } };
      },
    },
    {
      method: 'GET',
      path: '/openapi.json',
      operationId: 'getOpenApi',
      tag: 'system',
      summary: 'Get the OpenAPI 3.1 description',
      action: null,
      handler: () => ({ body: openapi() }),
    },
  ];
}
