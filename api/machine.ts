// The machine listener: all of the platform a machine (a tenant's pod) may reach. It serves the
// artifact a machine fetches at start, the keys it verifies identity assertions with, and the
// backups databases' backup Jobs send (with a credential for their database), and the plans and
// outputs builds' Jobs send (with a credential for their build), and nothing else; the API proper listens on loopback (locally) and the nodes' firewall lets pods reach
// only this port of the host (hack/nodes.sh, docs/security.md).
import Koa from 'koa';
import { artifactEndpoint } from './artifacts.js';
import { jwksEndpoint } from './jwks.js';
import { errorHandler, logAppErrors } from './middleware/errors.js';
import { requestContext } from './middleware/request-context.js';
import type { ApiDeps } from './deps.js';
import type { ApiState } from './state.js';

/** What the machine endpoints serve from: artifacts (with their key), the assertion keys, and the backup and build receivers. */
export type MachineDeps = Pick<ApiDeps, 'artifacts' | 'clock'> & {
  config: { deploys: Pick<ApiDeps['config']['deploys'], 'artifactKey'> };
  assertionKeys: Pick<ApiDeps['assertionKeys'], 'jwks'>;
  backups: Pick<ApiDeps['backups'], 'endpoint'>;
  builds: Pick<ApiDeps['builds'], 'endpoint'>;
};

/** The endpoints machines use, mounted on the machine listener and on the API itself. */
export function machineEndpoints(s: MachineDeps): Koa.Middleware[] {
  // One key store per API (ApiDeps), whichever listener asks: its cache spares PostgreSQL a read per request.
  return [
    artifactEndpoint(s.artifacts, s.config.deploys.artifactKey, s.clock),
    jwksEndpoint(s.assertionKeys),
    s.backups.endpoint,
    s.builds.endpoint,
  ];
}

export function createMachineApi(s: MachineDeps & Pick<ApiDeps, 'log'>): Koa<ApiState> {
  const app = new Koa<ApiState>();
  app.use(requestContext(s.log));
  logAppErrors(app, s.log);
  app.use(errorHandler());
  for (const endpoint of machineEndpoints(s)) app.use(endpoint);
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = { error: `${ctx.path} is not served to machines (only /artifacts/, /_svc/auth/jwks.json, /backups/ and /builds/ are)` };
  });
  return app;
}
