// What the identity-provider sign-ins (idp, codehost) share: the start on the app's hostname (or a
// verified custom domain of the app), which binds the flow to this browser with a cookie and sends
// it to the provider, and the end on the platform's sign-in host, which turns the provider's answer
// into a one-time handoff for the hostname the flow started on, redeemed there by the sign-in page
// (bound to the same browser).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ComponentConfig } from '../../../lib/config.js';
import type { Logger } from '../../../lib/logger.js';
import { admitsAppUsers, type Identity } from '../../../lib/auth/identity.js';
import { hashSecret, newSecret } from '../../../lib/auth/secrets.js';
import { flowLifetimeMs } from '../../../lib/auth/links.js';
import type { App } from '../../../lib/resources/index.js';
import { appendSetCookie, type SignIn } from '../sign-in.js';
import { setCookie } from '../cookies.js';
import { safeNext } from '../next.js';
import { escapeHtml } from '../pages.js';
import { redirect, sendJson, sendPage } from '../respond.js';
import type { AuthRequest } from '../routes.js';
import { loginUrl } from '../../../lib/contract.js';
import { originOf } from '../../host.js';
import { httpsOrigin } from '../../tls/connection.js';

/** What this process reads of the configuration (lib/config.ts, components). */
type Config = ComponentConfig<'ingress-auth'>;

export type CallbackRoute = (req: IncomingMessage, res: ServerResponse, url: URL, requestId: string) => Promise<void>;

export interface ProviderDeps {
  config: Config;
  log: Logger;
  signIn: SignIn;
  /**
   * The App a hostname is served by now (appAtHost on the informer caches: an app hostname or a
   * verified custom domain), to check a flow's app is still there, on the hostname it started on.
   */
  appOfHost(host: string): App | undefined;
  /**
   * Whether a hostname is served over HTTPS now (a certificate is served for it, so plain HTTP
   * redirects there): the way back from a provider is then its https origin. Absent: never.
   */
  servedOverTls?(host: string): boolean;
}

/** Failures a provider reports, by what the person can do about them. */
export type FlowFailure = 'unavailable' | 'denied' | 'invalid';

export function callbackUrl(config: Config, provider: string): string {
  return `${config.auth.secureCookies ? 'https' : 'http'}://${config.auth.host}${config.appsUrlSuffix}/_svc/auth/${provider}/callback`;
}

/**
 * Starts a provider sign-in from the app's hostname: a flow cookie (host-only, ten minutes) ties
 * the eventual handoff to this browser, and the flow is stored under the provider's `state`.
 */
export async function startFlow(
  r: AuthRequest,
  signIn: SignIn,
  provider: 'idp' | 'codehost',
  begin: () => Promise<{ url: URL; state: string; secrets: Record<string, string> }>,
): Promise<void> {
  // Only providers whose identities this app can admit: named by the policy, or (for app users)
  // a provider's verified address may match `emails` or make an app user (rule 3).
  if (!(r.app.spec.auth?.rules ?? []).some((rule) => rule.admit[provider]) && !admitsAppUsers(r.app.spec.auth)) {
    return sendJson(r.res, 404, { error: `${r.app.metadata.name} does not use ${provider} sign-in` }, r.requestId);
  }
  const binding = newSecret();
  const { url, state, secrets } = await begin();
  await signIn.links.startFlow(state, {
    appUid: r.app.metadata.uid!,
    // The hostname, normalized: the way back is this hostname (with the configured scheme and port,
    // never a Host header's), and only while it still routes to this App (finishFlow), since the
    // handoff travels in it.
    host: r.host,
    provider,
    secrets,
    binding: hashSecret(binding),
    next: safeNext(r.query.get('next')),
  });
  const cookies = signIn.cookiesFor(r.req);
  appendSetCookie(r.res, setCookie(cookies.names.flow, binding, { secure: cookies.secure, maxAgeSeconds: flowLifetimeMs / 1000 }));
  redirect(r.res, url.href, r.requestId);
}

/**
 * Ends a provider sign-in on the sign-in host: finds the flow by `state`, lets the provider say
 * who signed in, and sends the browser back to the app's sign-in page with a bound handoff.
 */
export async function finishFlow(
  deps: ProviderDeps,
  res: ServerResponse,
  url: URL,
  requestId: string,
  provider: string,
  identify: (flow: { secrets: Record<string, string> }, app: App) => Promise<Identity>,
  isFailure: (err: unknown) => FlowFailure | undefined,
): Promise<void> {
  const state = url.searchParams.get('state');
  const flow = state ? await deps.signIn.links.finishFlow(state, provider) : undefined;
  if (!flow) return failurePage(res, 400, 'This sign-in has expired or was already used. Go back to the app and sign in again.', requestId);
  const app = deps.appOfHost(flow.host);
  if (!app || app.metadata.uid !== flow.appUid) return failurePage(res, 404, 'The app this sign-in was for is gone.', requestId);
  // Back to the hostname the flow started on, which still serves this App (checked just above):
  // the flow cookie that binds the handoff is there, and so is the session it makes.
  const origin = deps.servedOverTls?.(flow.host)
    ? httpsOrigin(flow.host, deps.config.proxy.tlsPublicPort)
    : originOf(deps.config.site, flow.host);
  const back = loginUrl(flow.next, { origin });
  let identity: Identity;
  try {
    identity = await identify(flow, app);
  } catch (err) {
    const failure = isFailure(err);
    if (!failure) throw err;
    deps.log.info({ provider, failure, err: (err as Error).message, reqId: requestId }, 'Provider sign-in did not complete');
    if (failure === 'denied')
      return redirect(res, `${back}&error=${encodeURIComponent('Sign-in was cancelled at the provider.')}`, requestId);
    if (failure === 'unavailable')
      return failurePage(res, 503, 'The sign-in provider is not answering right now. Try again in a minute.', requestId, back);
    return failurePage(res, 400, 'The sign-in provider’s answer could not be verified. Start again.', requestId, back);
  }
  const token = await deps.signIn.links.handoff(flow.appUid, identity, { next: flow.next, binding: flow.binding });
  redirect(res, `${back}#handoff=${token}`, requestId);
}

function failurePage(res: ServerResponse, status: number, message: string, requestId: string, back?: string): void {
  const link = back ? `<p><a href="${escapeHtml(back)}">Back to sign-in</a></p>` : '';
  sendPage(
    res,
    status,
    {
      body: `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>Sign-in</title></head><body><h1>Sign-in did not complete</h1><p id="failure">${escapeHtml(message)}</p>${link}</body></html>\n`,
      csp: "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; frame-ancestors 'none'",
    },
    requestId,
  );
}
