// The API as a Koa application, built from services so tests can run it in-process.
import Koa from 'koa';
import { buildOpenApi } from './openapi.js';
import type { Operation } from './operation.js';
import { Authenticator } from './middleware/authenticate.js';
import { errorHandler } from './middleware/errors.js';
import { RateLimiter } from './middleware/rate-limit.js';
import { requestContext } from './middleware/request-context.js';
import { buildRouter, unmatched } from './router.js';
import { accountOperations } from './routes/account.js';
import { webhookOperations } from './routes/webhooks.js';
import { appLogOperations } from './routes/app-logs.js';
import { appMetricsOperations } from './routes/app-metrics.js';
import { machineEndpoints } from './machine.js';
import { appAuthOperations } from './routes/app-auth.js';
import { lifecycleOperations } from './routes/app-lifecycle.js';
import { appOperations } from './routes/apps.js';
import { deployOperations } from './routes/deploys.js';
import { previewOperations } from './routes/previews.js';
import { pendingOperations } from './routes/pending.js';
import { sandboxOperations } from './routes/sandboxes.js';
import { buildOperations } from './routes/builds.js';
import { importOperations } from './routes/imports.js';
import { pushHookEndpoint } from './builds/push-hook.js';
import { databaseOperations } from './routes/databases.js';
import { volumeOperations } from './routes/volumes.js';
import { eventOperations } from './routes/events.js';
import { systemOperations } from './routes/system.js';
import type { Services } from './services.js';
import type { ApiState } from './state.js';

export function allOperations(s: Services): Operation[] {
  let document: Record<string, unknown> | undefined;
  const operations: Operation[] = [
    ...systemOperations(s, () => (document ??= buildOpenApi(operations))),
    ...accountOperations(s),
    ...webhookOperations(s),
    ...appOperations(s),
    ...appLogOperations(s),
    ...appMetricsOperations(s),
    ...deployOperations(s),
    ...previewOperations(s),
    ...sandboxOperations(s),
    ...eventOperations(s),
    ...lifecycleOperations(s),
    ...appAuthOperations(s),
    ...databaseOperations(s),
    ...buildOperations(s),
    ...importOperations(s),
    ...volumeOperations(s),
    ...pendingOperations(),
  ];
  return operations;
}

export function createApi(s: Services, operations: Operation[] = allOperations(s)): Koa<ApiState> {
  const app = new Koa<ApiState>();
  const router = buildRouter(operations, s, new Authenticator(s), new RateLimiter(s.config.api.rate.perSecond, s.config.api.rate.burst));
  app.use(requestContext(s.log));
  app.use(errorHandler());
  for (const endpoint of machineEndpoints(s)) app.use(endpoint);
  // Code hosts' push events: signed with the hook's secret, no bearer token.
  app.use(pushHookEndpoint({ repositories: s.repositories, sync: s.gitSync, log: s.log, clock: s.clock }));
  app.use(router.routes());
  app.use(unmatched(router));
  return app;
}
