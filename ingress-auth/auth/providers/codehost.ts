// `codehost` sign-in: OAuth2 with the code host (lib/auth/codehost.ts). At sign-in the login is
// recorded, and for the organizations the app's policy names (other than the login itself) the
// active memberships the platform may see, so admission needs no call to the code host later. A
// policy naming a new organization takes effect at the next sign-in.
import { codehostCallback, CodehostError, codehostCandidates, GitHubCodehost, type CodehostClient } from '../../../lib/auth/codehost.js';
import type { App } from '../../../lib/resources/index.js';
import type { ProviderRoute } from '../routes.js';
import { callbackUrl, finishFlow, startFlow, type CallbackRoute, type ProviderDeps } from './flow.js';

function policyValues(app: App): string[] {
  const out = new Set<string>();
  for (const r of app.spec.auth?.rules ?? []) for (const v of r.admit.codehost?.values ?? []) out.add(v);
  return [...out];
}

export function codehostProvider(
  deps: ProviderDeps,
  client: CodehostClient = new GitHubCodehost(deps.config.auth.codehost!, { log: deps.log }),
): { routes: Map<string, ProviderRoute>; callbacks: Map<string, CallbackRoute> } {
  const redirectUri = callbackUrl(deps.config, 'codehost');
  const start: ProviderRoute = (r, signIn) =>
    startFlow(r, signIn, 'codehost', async () => {
      const { url, state } = client.start({ redirectUri });
      return { url, state, secrets: { state } };
    });
  const callback: CallbackRoute = (_req, res, url, requestId) =>
    finishFlow(
      deps,
      res,
      url,
      requestId,
      'codehost',
      async (flow, app) => {
        const code = codehostCallback(url, flow.secrets.state!);
        const user = await client.finish(code, redirectUri);
        const { orgs } = codehostCandidates(policyValues(app), user.login);
        const active = orgs.length ? await client.activeMemberships(user.token, orgs) : new Set<string>();
        return {
          provider: 'codehost',
          subject: `codehost:${user.id}`,
          email: user.email?.toLowerCase() ?? '',
          ...(user.name ? { name: user.name } : {}),
          facts: { login: user.login.toLowerCase(), orgs: [...active] },
        };
      },
      (err) => (err instanceof CodehostError ? err.reason : undefined),
    );
  return { routes: new Map([['GET codehost/start', start]]), callbacks: new Map([['GET /_svc/auth/codehost/callback', callback]]) };
}
