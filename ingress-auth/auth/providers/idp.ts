// `idp` sign-in: OpenID Connect (lib/auth/oidc.ts). Admission reads the verified address and the
// signed `hd` claim; an unverified address is dropped, so it can neither match `idp: [mailbox]`
// nor `emails`.
import { OidcClient, OidcError, type OidcSaved } from '../../../lib/auth/oidc.js';
import type { ProviderRoute } from '../routes.js';
import { callbackUrl, finishFlow, startFlow, type CallbackRoute, type ProviderDeps } from './flow.js';

export function idpProvider(
  deps: ProviderDeps,
  client = new OidcClient(deps.config.auth.idp!, { log: deps.log }),
): { routes: Map<string, ProviderRoute>; callbacks: Map<string, CallbackRoute> } {
  const redirectUri = callbackUrl(deps.config, 'idp');
  const start: ProviderRoute = (r, signIn) =>
    startFlow(r, signIn, 'idp', async () => {
      const { url, state } = await client.start({ redirectUri });
      return { url, state: state.state, secrets: { ...state } };
    });
  const callback: CallbackRoute = (_req, res, url, requestId) =>
    finishFlow(
      deps,
      res,
      url,
      requestId,
      'idp',
      async (flow) => {
        const who = await client.finish(url, flow.secrets as unknown as OidcSaved, redirectUri);
        return {
          provider: 'idp',
          subject: `idp:${who.subject}`,
          email: who.emailVerified && who.email ? who.email.toLowerCase() : '',
          ...(who.name ? { name: who.name } : {}),
          facts: who.hostedDomain ? { hd: who.hostedDomain } : {},
        };
      },
      (err) => (err instanceof OidcError ? err.reason : undefined),
    );
  return { routes: new Map([['GET idp/start', start]]), callbacks: new Map([['GET /_svc/auth/idp/callback', callback]]) };
}
