// The platform's routes under /_svc/auth/ on an app's hostname: the login page (which also
// redeems sign-in links), the email-link form, /me, sign-out, and whatever the configured
// providers add (idp, codehost, passkey). They run before the app and never reach it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ComponentConfig } from '../../lib/config.js';
import type { Logger } from '../../lib/logger.js';
import { admitsAppUsers, becomesAppUser, userRecord } from '../../lib/auth/identity.js';
import type { MailEnqueuer, MailMessage } from '../../lib/auth/invitations.js';
import { hashSecret, isSecretShape } from '../../lib/auth/secrets.js';
import type { Session } from '../../lib/auth/sessions.js';
import type { App } from '../../lib/resources/index.js';
import { clearCookie, readCookie } from './cookies.js';
import { isNavigation } from './navigation.js';
import { safeNext } from './next.js';
import { deniedPage, linkSentPage, loginPage, logoutPage, signedOutPage, type MethodView } from './pages.js';
import { BodyError, readForm, redirect, sendJson, sendPage } from './respond.js';
import type { SignIn } from './sign-in.js';
import { loginUrl } from '../../lib/contract.js';

/** What this process reads of the configuration (lib/config.ts, components). */
type Config = ComponentConfig<'ingress-auth'>;

/** One request to a platform route on an app's hostname. */
export interface AuthRequest {
  req: IncomingMessage;
  res: ServerResponse;
  app: App;
  /** The hostname sessions are scoped to: lowercased, without port. */
  host: string;
  /** `http(s)://<Host header>`: where the browser is. */
  origin: string;
  /** The lowercased, normalized path (`/_svc/auth/...`). */
  path: string;
  query: URLSearchParams;
  requestId: string;
  clientIp: string;
}

export interface CurrentSession {
  token: string;
  session: Session;
}

/** Routes a provider adds, by path under /_svc/auth/ (`idp/start`, `passkey/login/options`, ...). */
/** A provider's route; `session` looks up the request's current session when the route needs it. */
export type ProviderRoute = (r: AuthRequest, signIn: SignIn, session: () => Promise<CurrentSession | undefined>) => Promise<void>;

export interface AuthRoutesOptions {
  config: Config;
  log: Logger;
  mail: MailEnqueuer | undefined;
  providerRoutes?: ReadonlyMap<string, ProviderRoute>;
  /** Which providers are set up on this platform (shown as available on the login page). */
  available: { email: boolean; passkey: boolean; idp: boolean; codehost: boolean };
}

const emailShape = /^[^\s@<>(),;:"]{1,64}@[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+$/i;

export class AuthRoutes {
  constructor(
    private readonly signIn: SignIn,
    private readonly opts: AuthRoutesOptions,
  ) {}

  /** The session of the request's cookie on this app and hostname, if any. */
  async currentSession(r: Pick<AuthRequest, 'req' | 'app' | 'host'>): Promise<CurrentSession | undefined> {
    const token = this.sessionCookie(r);
    if (!token) return undefined;
    const session = await this.signIn.session(token, r.app, r.host);
    return session && { token, session };
  }

  /**
   * currentSession() without waiting when the answer is known from the cookie alone or the
   * session cache: the session, `null` for none, `undefined` when only currentSession() can tell.
   */
  knownSession(r: Pick<AuthRequest, 'req' | 'app' | 'host'>): CurrentSession | null | undefined {
    const token = this.sessionCookie(r);
    if (!token) return null;
    const session = this.signIn.cachedSession(token, r.app, r.host);
    return session && { token, session };
  }

  private sessionCookie(r: Pick<AuthRequest, 'req'>): string | undefined {
    const token = readCookie(r.req.headers.cookie, this.signIn.cookiesFor(r.req).names.session);
    return token && isSecretShape(token) ? token : undefined;
  }

  async handle(r: AuthRequest): Promise<void> {
    const method = r.req.method ?? 'GET';
    const route = r.path.slice('/_svc/auth/'.length);
    try {
      if (route === 'login' && (method === 'GET' || method === 'HEAD')) return await this.login(r);
      if (route === 'me' && (method === 'GET' || method === 'HEAD')) return await this.me(r);
      if (route === 'email' && method === 'POST') return await this.emailLink(r);
      if (route === 'redeem' && method === 'POST') return await this.redeem(r);
      if (route === 'logout') return await this.logout(r, method);
      const provider = this.opts.providerRoutes?.get(`${method === 'HEAD' ? 'GET' : method} ${route}`);
      if (provider) return await provider(r, this.signIn, () => this.currentSession(r));
      sendJson(r.res, 404, { error: `no sign-in route ${method} ${r.path}` }, r.requestId);
    } catch (err) {
      if (r.res.headersSent) {
        r.res.destroy();
        return;
      }
      if (err instanceof BodyError) return sendJson(r.res, err.status, { error: err.message }, r.requestId);
      this.opts.log.error({ err, reqId: r.requestId, route }, 'Sign-in route failed');
      sendJson(r.res, 500, { error: 'sign-in failed on the platform side; try again' }, r.requestId);
    }
  }

  /** The methods the app's policy names, whether configured here or not. */
  methods(app: App): MethodView[] {
    const admit = (app.spec.auth?.rules ?? []).map((x) => x.admit);
    const out: MethodView[] = [];
    if (admitsAppUsers(app.spec.auth)) {
      out.push({ provider: 'email', available: this.opts.available.email });
      if (this.opts.available.passkey) out.push({ provider: 'passkey', available: true });
    }
    if (admit.some((a) => a.owner)) out.push({ provider: 'owner', available: true });
    // A provider's verified address can also prove an app user's (rule 3): offered when set up.
    const appUsers = admitsAppUsers(app.spec.auth);
    if (admit.some((a) => a.idp) || (appUsers && this.opts.available.idp))
      out.push({ provider: 'idp', available: this.opts.available.idp });
    if (admit.some((a) => a.codehost) || (appUsers && this.opts.available.codehost))
      out.push({ provider: 'codehost', available: this.opts.available.codehost });
    return out;
  }

  private async login(r: AuthRequest): Promise<void> {
    const current = await this.currentSession(r);
    const id = current?.session.identity;
    sendPage(
      r.res,
      200,
      loginPage({
        app: r.app.metadata.name!,
        next: safeNext(r.query.get('next')),
        methods: this.methods(r.app),
        signedIn: id,
        canAddPasskey: Boolean(id?.appUserId) && this.opts.available.passkey,
        ...(r.query.get('error') ? { notice: r.query.get('error')!.slice(0, 200) } : {}),
      }),
      r.requestId,
    );
  }

  private async me(r: AuthRequest): Promise<void> {
    const id = (await this.currentSession(r))?.session.identity;
    sendJson(r.res, 200, { user: id ? userRecord(id) : null }, r.requestId);
  }

  /**
   * The email form. The answer is the same whether or not the address may sign in, and is sent
   * before the link is made, so neither its words nor its timing tell which.
   */
  private async emailLink(r: AuthRequest): Promise<void> {
    if (!sameOrigin(r)) return sendJson(r.res, 403, { error: 'cross-site sign-in requests are refused' }, r.requestId);
    const form = await readForm(r.req);
    const email = typeof form.email === 'string' ? form.email.trim().toLowerCase() : '';
    const next = safeNext(typeof form.next === 'string' ? form.next : null);
    if (!emailShape.test(email) || email.length > 254) {
      return this.answer(r, 400, { error: 'enter an email address' }, () =>
        loginPage({
          app: r.app.metadata.name!,
          next,
          methods: this.methods(r.app),
          signedIn: undefined,
          canAddPasskey: false,
          notice: 'Enter an email address.',
        }),
      );
    }
    const { perSourceHourly, perAddressHourly } = this.opts.config.auth.emailRate;
    if (!(await this.signIn.rate.take(`source:${r.clientIp}`, perSourceHourly, 3600_000))) {
      r.res.setHeader('retry-after', '3600');
      return this.answer(r, 429, { error: 'too many sign-in link requests from this address; try again later' }, () =>
        loginPage({
          app: r.app.metadata.name!,
          next,
          methods: this.methods(r.app),
          signedIn: undefined,
          canAddPasskey: false,
          notice: 'Too many requests; try again later.',
        }),
      );
    }
    this.answer(r, 202, { status: 'sent_if_allowed', message: `if ${email} may sign in, a sign-in link is on its way` }, () =>
      linkSentPage(r.app.metadata.name!, email, next),
    );
    void this.sendLink(r, email, next, perAddressHourly).catch((err: unknown) =>
      this.opts.log.error({ err, reqId: r.requestId }, 'Sending a sign-in link failed'),
    );
  }

  private async sendLink(r: AuthRequest, email: string, next: string, perAddressHourly: number): Promise<void> {
    const app = r.app;
    const appUid = app.metadata.uid!;
    // Counted for every address, allowed or not, so the limit itself reveals nothing.
    if (!(await this.signIn.rate.take(`address:${appUid}:${email}`, perAddressHourly, 3600_000))) return;
    if (!becomesAppUser(app.spec.auth, email)) return;
    const user = await this.signIn.users.byEmail(appUid, email);
    if (user?.disabledAt) return;
    if (!this.opts.mail) {
      this.opts.log.warn({ app: app.metadata.name }, 'A sign-in link was asked for, but no mail is configured');
      return;
    }
    const token = await this.signIn.links.emailLink(appUid, email, next);
    await this.opts.mail.enqueue(signInMail({ app: app.metadata.name!, origin: r.origin, email, token, next }));
  }

  /** A secret from the sign-in page's fragment, posted same-origin by its script. */
  private async redeem(r: AuthRequest): Promise<void> {
    if (!sameOrigin(r)) return sendJson(r.res, 403, { error: 'sign-in links are redeemed by the app’s own sign-in page' }, r.requestId);
    if (!(r.req.headers['content-type'] ?? '').toLowerCase().startsWith('application/json'))
      return sendJson(r.res, 415, { error: 'send application/json' }, r.requestId);
    const form = await readForm(r.req);
    const token = form.token;
    if (!isSecretShape(token)) return sendJson(r.res, 400, { error: 'token: not a sign-in token' }, r.requestId);
    const cookies = this.signIn.cookiesFor(r.req);
    const flow = readCookie(r.req.headers.cookie, cookies.names.flow);
    const found = await this.signIn.links.redeem(token, r.app.metadata.uid!, flow && isSecretShape(flow) ? hashSecret(flow) : undefined);
    if (!found)
      return sendJson(r.res, 403, { error: 'this sign-in link is not valid (used, expired, revoked or for another app)' }, r.requestId);
    let established;
    if (found.kind === 'email') {
      if (!becomesAppUser(r.app.spec.auth, found.email))
        return sendJson(r.res, 403, { error: 'this address may no longer sign in to this app' }, r.requestId);
      established = await this.signIn.establish(r.res, r.app, r.host, { provider: 'email', subject: '', email: found.email });
    } else {
      established = await this.signIn.establish(r.res, r.app, r.host, found.identity);
    }
    if (established === 'disabled') return sendJson(r.res, 403, { error: 'this user is disabled on this app' }, r.requestId);
    if (flow) r.res.appendHeader('set-cookie', clearCookie(cookies.names.flow, cookies.secure));
    sendJson(r.res, 200, { next: safeNext(found.next), user: userRecord(established.identity) }, r.requestId);
  }

  private async logout(r: AuthRequest, method: string): Promise<void> {
    if (method === 'GET' || method === 'HEAD') return sendPage(r.res, 200, logoutPage(r.app.metadata.name!), r.requestId);
    if (method !== 'POST') return sendJson(r.res, 405, { error: 'use POST to sign out' }, r.requestId);
    if (!sameOrigin(r)) return sendJson(r.res, 403, { error: 'cross-site sign-out requests are refused' }, r.requestId);
    const current = await this.currentSession(r);
    const cookies = this.signIn.cookiesFor(r.req);
    const token = readCookie(r.req.headers.cookie, cookies.names.session);
    if (token && isSecretShape(token)) await this.signIn.signOut(token);
    r.res.appendHeader('set-cookie', clearCookie(cookies.names.session, cookies.secure));
    if (current) this.opts.log.info({ app: r.app.metadata.name, provider: current.session.identity.provider }, 'Signed out');
    this.answer(r, 200, { user: null }, () => signedOutPage(r.app.metadata.name!));
  }

  /** An HTML page for a person (form posts, navigations), JSON for scripts. */
  private answer(r: AuthRequest, status: number, json: unknown, page: () => ReturnType<typeof loginPage>): void {
    const wantsPage =
      isNavigation('GET', r.req.headers) || (r.req.headers['content-type'] ?? '').startsWith('application/x-www-form-urlencoded');
    if (wantsPage) sendPage(r.res, status === 202 ? 200 : status, page(), r.requestId);
    else sendJson(r.res, status, json, r.requestId);
  }

  /** The denied answer for a signed-in visitor the path does not admit. */
  denied(r: Omit<AuthRequest, 'path' | 'query'>, session: Session, navigation: boolean, next: string): void {
    if (navigation) return sendPage(r.res, 403, deniedPage(r.app.metadata.name!, session.identity, next), r.requestId);
    sendJson(
      r.res,
      403,
      {
        error: 'forbidden',
        message: `signed in as ${session.identity.email || session.identity.subject}, which this path does not admit`,
        login_url: loginUrl(next),
      },
      r.requestId,
    );
  }

  /** The unauthenticated answer: 303 to the login page for a person, 401 for a script. */
  challenge(r: Omit<AuthRequest, 'path' | 'query'>, navigation: boolean, next: string): void {
    const login = loginUrl(next);
    if (navigation) return redirect(r.res, login, r.requestId);
    r.res.setHeader('www-authenticate', `Cookie realm="${r.host}", login_url="${login}"`);
    sendJson(r.res, 401, { error: 'authentication_required', login_url: login }, r.requestId);
  }
}

/**
 * A state-changing sign-in request must come from the app's own pages: browsers send Origin on
 * every POST, and Sec-Fetch-Site when they know it; a request with neither (curl) is not a
 * browser being tricked, and is let through.
 */
export function sameOrigin(r: Pick<AuthRequest, 'req' | 'origin'>): boolean {
  const origin = r.req.headers.origin;
  if (origin !== undefined) return origin.toLowerCase() === r.origin.toLowerCase();
  const site = r.req.headers['sec-fetch-site'];
  return site === undefined || site === 'same-origin';
}

export function signInMail(m: { app: string; origin: string; email: string; token: string; next: string }): MailMessage {
  const url = loginUrl(m.next, { origin: m.origin, fragment: `token=${m.token}` });
  const esc = (s: string) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
  return {
    to: m.email,
    subject: `Sign in to ${m.app}`,
    purpose: 'sign-in-link',
    text: `Sign in to ${m.app} with this link:\n\n${url}\n\nThe link keeps working for as long as ${m.email} may use ${m.app}. If you did not ask for it, ignore this message.\n`,
    html: `<p>Sign in to <strong>${esc(m.app)}</strong>:</p><p><a href="${esc(url)}">${esc(url)}</a></p><p>The link keeps working for as long as ${esc(m.email)} may use ${esc(m.app)}. If you did not ask for it, ignore this message.</p>`,
  };
}
