// The machine listener: all of the platform a machine (a tenant's pod) may reach. It serves the
// artifact a machine fetches at start and the keys it verifies identity assertions with, and
// nothing else; the API proper listens on loopback (locally) and the nodes' firewall lets pods reach
// only this port of the host (hack/nodes.sh, docs/security.md).
import Koa from 'koa';
import { AssertionKeyStore } from '../lib/identity/assertion-keys.js';
import { artifactEndpoint } from './artifacts.js';
import { jwksEndpoint } from './jwks.js';
import { errorHandler } from './middleware/errors.js';
import { requestContext } from './middleware/request-context.js';
import type { Services } from './services.js';
import type { ApiState } from './state.js';

/**
 * One key store per API, whichever listener asks: its cache (refreshed each minute) is what spares
 * PostgreSQL a read per request, and two stores would each read.
 */
const keyStores = new WeakMap<Services, AssertionKeyStore>();

/** The endpoints machines use, mounted on the machine listener and on the API itself. */
export function machineEndpoints(s: Services): Koa.Middleware[] {
  let keys = keyStores.get(s);
  if (!keys) {
    keys = new AssertionKeyStore(s.db, { rotationMs: s.config.assertion.rotationMs, maxAssertionLifetimeMs: s.config.assertion.lifetimeSeconds * 1000 });
    keyStores.set(s, keys);
  }
  return [artifactEndpoint(s.artifacts, s.config.deploys.artifactKey, s.clock), jwksEndpoint(keys)];
}

export function createMachineApi(s: Services): Koa<ApiState> {
  const app = new Koa<ApiState>();
  app.use(requestContext(s.log));
  app.use(errorHandler());
  for (const endpoint of machineEndpoints(s)) app.use(endpoint);
  app.use((ctx) => {
    ctx.status = 404;
    ctx.body = { error: `${ctx.path} is not served to machines (only /artifacts/ and /_svc/auth/jwks.json are)` };
  });
  return app;
}
