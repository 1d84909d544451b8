// The API as a Koa application, built from services so tests can run it in-process.
import Koa from 'koa';
import { buildOpenApi } from './openapi.js';
import type { Operation } from './operation.js';
import { Authenticator } from './middleware/authenticate.js';
import { errorHandler, logAppErrors } from './middleware/errors.js';
import { RateLimiter } from './middleware/rate-limit.js';
import { requestContext } from './middleware/request-context.js';
import { untrustedForwardingWarning } from './middleware/forwarding.js';
import { buildRouter, unmatched } from './router.js';
import { accountOperations } from './operations/account.js';
import { webhookOperations } from './operations/webhooks.js';
import { appDataOperations } from './operations/app-data.js';
import { appLogOperations } from './operations/app-logs.js';
import { appMetricsOperations } from './operations/app-metrics.js';
import { machineEndpoints } from './machine.js';
import { appAuthOperations } from './operations/app-auth.js';
import { lifecycleOperations } from './operations/app-lifecycle.js';
import { appOperations } from './operations/apps.js';
import { deployOperations } from './operations/deploys.js';
import { previewOperations } from './operations/previews.js';
import { domainOperations } from './operations/domains.js';
import { pendingOperations } from './operations/pending.js';
import { registrarOperations } from './operations/registrar.js';
import { sandboxOperations } from './operations/sandboxes.js';
import { buildOperations } from './operations/builds.js';
import { importOperations } from './operations/imports.js';
import { pushHookEndpoint } from './builds/push-hook.js';
import { databaseOperations } from './operations/databases.js';
import { volumeOperations } from './operations/volumes.js';
import { eventOperations } from './operations/events.js';
import { systemOperations } from './operations/system.js';
import { consoleOperations } from './operations/console.js';
import { consoleCredentialOperations } from './operations/console-credentials.js';
import { cliLoginOperations } from './operations/cli-login.js';
import { consoleRoutes } from './console/routes.js';
import type { ApiDeps } from './deps.js';
import type { ApiState } from './state.js';

export function allOperations(s: ApiDeps): Operation[] {
  let document: Record<string, unknown> | undefined;
  const operations: Operation[] = [
    ...systemOperations(s, () => (document ??= buildOpenApi(operations))),
    ...accountOperations(s),
    ...webhookOperations(s),
    ...appOperations(s),
    ...appLogOperations(s),
    ...appDataOperations(s),
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
    ...domainOperations(s),
    ...registrarOperations(s),
    ...pendingOperations(),
    ...consoleOperations(s),
    ...consoleCredentialOperations(s),
    ...cliLoginOperations(s),
  ];
  return operations;
}

export function createApi(s: ApiDeps, operations: Operation[] = allOperations(s)): Koa<ApiState> {
  const app = new Koa<ApiState>();
  // Behind trusted proxies, the client's address is the one the nearest of them saw (ctx.ip keys
  // the per-address limits), and the scheme and host are the ones people used.
  if (s.config.api.proxyHops > 0) {
    app.proxy = true;
    app.maxIpsCount = s.config.api.proxyHops;
  } else {
    app.use(untrustedForwardingWarning(s.log));
  }
  const router = buildRouter(operations, s, new Authenticator(s), new RateLimiter(s.config.api.rate.perSecond, s.config.api.rate.burst));
  app.use(requestContext(s.log));
  logAppErrors(app, s.log);
  app.use(errorHandler());
  for (const endpoint of machineEndpoints(s)) app.use(endpoint);
  // Code hosts' push events: signed with the hook's secret, no bearer token.
  app.use(pushHookEndpoint({ importedRepos: s.importedRepos, sync: s.gitSync, log: s.log, clock: s.clock }));
  // The web console's files and where its mailed sign-in links land, at /console/ (decision 0031).
  app.use(consoleRoutes());
  app.use(router.routes());
  app.use(unmatched(router));
  return app;
}
