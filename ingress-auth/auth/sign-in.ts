// Sign-in state as ingress-auth uses it on every request: which identity a session cookie stands
// for (cached in memory; revocations reach every replica at once through PostgreSQL
// LISTEN/NOTIFY, with a short time limit on cached entries as the backstop), the identity headers
// for the app (assertions cached per session and hostname until half their lifetime), and starting
// a session once a provider has established who someone is.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Knex } from 'knex';
import pg from 'pg';
import type { ComponentConfig } from '../../lib/config.js';
import type { Logger } from '../../lib/logger.js';
import { AppUserStore } from '../../lib/auth/app-users.js';
import { becomesAppUser, type Identity } from '../../lib/auth/identity.js';
import { LinkStore } from '../../lib/auth/links.js';
import { RateLimiter } from '../../lib/auth/rate-limit.js';
import { revokedChannel, SessionStore, sessionLimits, touchEveryMs, type Session } from '../../lib/auth/sessions.js';
import type { AssertedIdentity } from '../../lib/identity/assertion.js';
import type { App } from '../../lib/resources/index.js';
import { cookieNames, setCookie, type CookieNames } from './cookies.js';
import { identityHeaders } from '../../lib/contract.js';
import { isTls } from '../tls/connection.js';
import { sendableValue } from '../upstream/upstream.js';

/** What this process reads of the configuration (lib/config.ts, components). */
type Config = ComponentConfig<'ingress-auth'>;

/** A cached session is trusted this long without asking PostgreSQL again (NOTIFY usually ends it sooner). */
const cacheMs = 10_000;
const cacheMax = 100_000;

interface IdentityEntry {
  headers: string[];
  host: string;
  appUid: string | undefined;
  refreshAt: number;
}

interface Cached {
  session: Session | undefined;
  appUid: string;
  host: string;
  checkedAt: number;
}

export interface SignInOptions {
  db: Knex;
  config: Config;
  log: Logger;
  signer: { sign(identity: AssertedIdentity, audienceHost: string | readonly string[]): Promise<string> };
  assertionLifetimeSeconds: number;
  clock?: () => Date;
  /**
   * The app hostname `app` holds, if it holds it (the oldest App of its name: RouteTable.app):
   * an assertion on a custom domain names it too (decision 0028). Never a name another tenant's
   * older App of the same name holds. Unset: assertions name the request's host only.
   */
  heldHostname?: (app: App) => string | undefined;
}

export class SignIn {
  readonly sessions: SessionStore;
  readonly users: AppUserStore;
  readonly links: LinkStore;
  readonly rate: RateLimiter;
  readonly cookies: CookieNames;
  readonly clock: () => Date;
  private readonly cache = new Map<string, Cached>();
  /** Reads of the store under way, by token, app and hostname (as many as lookups in flight at most). */
  private readonly reading = new Map<string, Promise<Session | undefined>>();
  /** Counts revocations heard, so a lookup can tell one overtook it (session()). */
  private revocations = 0;
  private readonly heard: Array<() => void> = [];
  /** Told of every revocation with the App's uid ('' for all), after the cache dropped it (live data streams). */
  private readonly revokedListeners: Array<(appUid: string) => void> = [];
  /** Identity headers (with the signed assertion) by session, hostname and app. */
  private readonly identities = new Map<string, IdentityEntry>();
  /** The entry last used for a session object (weak: it goes with the session's cached copy). */
  private readonly lastIdentity = new WeakMap<Session, IdentityEntry>();
  private listener: pg.Client | undefined;
  private stopped = false;

  constructor(private readonly opts: SignInOptions) {
    this.clock = opts.clock ?? (() => new Date());
    this.sessions = new SessionStore(opts.db, this.clock);
    this.users = new AppUserStore(opts.db, this.clock);
    this.links = new LinkStore(opts.db, this.clock);
    this.rate = new RateLimiter(opts.db, this.clock);
    this.cookies = cookieNames(opts.config.auth.secureCookies);
  }

  /** Whether cookies are `Secure` on plain HTTP (config `auth.secureCookies`); over TLS they always are (cookiesFor). */
  get secure(): boolean {
    return this.opts.config.auth.secureCookies;
  }

  /**
   * The cookie names and `Secure` flag of a request: over TLS (the HTTPS listener) `__Host-` names,
   * `Secure`; on plain HTTP as the configuration says (`cookies`, `secure`).
   */
  cookiesFor(req: IncomingMessage | undefined): { names: CookieNames; secure: boolean } {
    return req && isTls(req) ? tlsCookies : { names: this.cookies, secure: this.secure };
  }

  /** Listens for revocations; reconnects (dropping the whole cache, revocations may have been missed) when the connection breaks. */
  async start(): Promise<void> {
    if (this.stopped) return;
    const client = new pg.Client({ connectionString: this.opts.config.databaseUrl });
    client.on('notification', (n) => this.forgetApp(n.payload ?? ''));
    client.on('error', (err) => {
      this.opts.log.warn({ err: err.message }, 'Session revocation listener failed; reconnecting');
      this.forgetApp('');
      client.end().catch(() => undefined);
      if (this.listener === client) this.listener = undefined;
      if (!this.stopped) setTimeout(() => void this.start().catch(() => undefined), 1000).unref();
    });
    await client.connect();
    await client.query(`LISTEN ${revokedChannel}`);
    this.listener = client;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.listener?.end().catch(() => undefined);
  }

  /** Drops the cached sessions of an app ('': of every app). */
  private forgetApp(appUid: string): void {
    this.revocations++;
    for (const [token, c] of this.cache) if (c.appUid === appUid || !appUid) this.cache.delete(token);
    for (const heard of this.heard.splice(0)) heard();
    for (const fn of this.revokedListeners) fn(appUid);
  }

  /** Calls `fn` with the App's uid ('' for every app) after each revocation is applied. */
  onRevoked(fn: (appUid: string) => void): void {
    this.revokedListeners.push(fn);
  }

  /** Calls `heard` once, after the next revocation was applied (tests wait on it). */
  onRevocation(heard: () => void): void {
    this.heard.push(heard);
  }

  /**
   * What the cache knows of a cookie value on this app and hostname, without waiting: the live
   * session, `null` for a cookie known to stand for none, `undefined` when the store must be
   * asked (not cached, too old, or a use that is due to be written back for idle expiry). Most
   * requests of a signed-in visitor end here, which keeps them off the promise queue
   * (docs/benchmarks.md "bench/proxy").
   */
  cachedSession(token: string, app: App, host: string): Session | null | undefined {
    const hit = this.cache.get(token);
    if (!hit || hit.appUid !== app.metadata.uid || hit.host !== host || Date.now() - hit.checkedAt >= cacheMs) return undefined;
    if (!hit.session) return null;
    const at = this.clock();
    return this.sessions.alive(hit.session, at) && at.getTime() - hit.session.lastSeenAt.getTime() <= touchEveryMs
      ? hit.session
      : undefined;
  }

  /**
   * The live session of a cookie value on this app and hostname. Lookups of the same one at the
   * same time share one read: when a cached entry ages out, every open connection of that visitor
   * would otherwise read PostgreSQL at once. Only a read started since the last revocation heard
   * is joined (the count is in the key): a revocation heard before a lookup always counts for it.
   */
  session(token: string, app: App, host: string): Promise<Session | undefined> {
    const cached = this.cachedSession(token, app, host);
    if (cached !== undefined) return Promise.resolve(cached ?? undefined);
    const key = `${token}\n${app.metadata.uid}\n${host}\n${this.revocations}`;
    let reading = this.reading.get(key);
    if (!reading) {
      reading = this.read(token, app, host).finally(() => this.reading.delete(key));
      this.reading.set(key, reading);
    }
    return reading;
  }

  private async read(token: string, app: App, host: string): Promise<Session | undefined> {
    // A revocation announced while the store was being read may not be in what it read: read
    // again, and never cache a reading a revocation overtook (it would stand for 10 s).
    for (let attempt = 0; ; attempt++) {
      const checkedAt = Date.now();
      const seen = this.revocations;
      const session = await this.sessions.find(token, app.metadata.uid!, host);
      if (seen !== this.revocations) {
        if (attempt < 2) continue;
        return session;
      }
      if (this.cache.size >= cacheMax) this.cache.clear();
      this.cache.set(token, { session, appUid: app.metadata.uid!, host, checkedAt });
      return session;
    }
  }

  /** The identity headers of a session on this hostname while its cached assertion is fresh; undefined when one must be signed. */
  cachedIdentityHeaders(session: Session, host: string, app: App): string[] | undefined {
    // The cached session object is the same on each request until it is read again: its last
    // entry answers without building the key (bench/https).
    const last = this.lastIdentity.get(session);
    const hit =
      last && last.host === host && last.appUid === app.metadata.uid ? last : this.identities.get(identityKey(session, host, app));
    if (!hit || hit.refreshAt <= Date.now()) return undefined;
    if (hit !== last) this.lastIdentity.set(session, hit);
    return hit.headers;
  }

  /**
   * `X-Svc-Auth-*` for the app, as a flat [name, value, ...] list: the spec's four, plus the
   * name (percent-encoded: header values are bytes), verified and owner flags the runtime's HTML
   * apps read (docs/api/identity-assertion.md). Built once per session, hostname and assertion,
   * which is re-signed at half its lifetime.
   */
  async identityHeaders(session: Session, host: string, app: App): Promise<string[]> {
    const cached = this.cachedIdentityHeaders(session, host, app);
    if (cached) return cached;
    const id = session.identity;
    const now = Date.now();
    // The owner flag is signed too: an app that verifies the assertion can trust all it grants.
    const owner = id.provider === 'svc' && id.facts?.namespace === app.metadata.namespace;
    // On a custom domain, made out to that name and the app's own hostname too (decision 0028): the
    // platform runtime checks the app hostname, an app of its own may check either. Only a hostname
    // this App holds: another namespace's older App of the same name holds `<name>.<apps domain>`.
    const appHost = this.opts.heldHostname?.(app);
    const assertion = await this.opts.signer.sign(
      { sub: id.subject, email: id.email, provider: id.provider, name: id.name, ...(owner ? { owner: true } : {}) },
      appHost ? [host, appHost] : host,
    );
    const headers = [
      identityHeaders.subject,
      id.subject,
      identityHeaders.email,
      id.email,
      identityHeaders.provider,
      id.provider,
      identityHeaders.assertion,
      assertion,
    ];
    if (id.name) headers.push(identityHeaders.name, encodeURIComponent(id.name));
    if (id.email) headers.push(identityHeaders.verified, 'true');
    if (owner) headers.push(identityHeaders.owner, 'true');
    // Checked once here, not on each request (UpstreamRequest.checked): a provider's subject or
    // address with a line break would otherwise end its header line early.
    const unsendable = headers.findIndex((v, i) => i % 2 === 1 && !sendableValue(v));
    if (unsendable !== -1)
      throw new Error(`the identity header ${headers[unsendable - 1]} cannot be sent: its value has a control character`);
    if (this.identities.size >= cacheMax) this.identities.clear();
    const entry = { headers, host, appUid: app.metadata.uid, refreshAt: now + (this.opts.assertionLifetimeSeconds * 1000) / 2 };
    this.identities.set(identityKey(session, host, app), entry);
    this.lastIdentity.set(session, entry);
    return headers;
  }

  /**
   * Signs `identity` in on this app's hostname and sets the session cookie. A verified address
   * the policy admits as an app user becomes (or stays) one (rule 3); the address of a disabled app
   * user is refused, through every provider.
   */
  async establish(res: ServerResponse, app: App, host: string, identity: Identity): Promise<Session | 'disabled'> {
    let who = identity;
    // Disabled means out, whichever provider vouches for the address (an identity provider or a code
    // host listing the same verified email included).
    if (who.email && (await this.users.byEmail(app.metadata.uid!, who.email))?.disabledAt) return 'disabled';
    if (!who.appUserId && who.email && becomesAppUser(app.spec.auth, who.email)) {
      const user = await this.users.signIn(
        { uid: app.metadata.uid!, namespace: app.metadata.namespace!, name: app.metadata.name! },
        who.email,
        who.provider,
        who.name,
      );
      // Disabled between the check above and now.
      if (!user) return 'disabled';
      else {
        who = { ...who, appUserId: user.id, ...(who.provider === 'email' || who.provider === 'passkey' ? { subject: user.id } : {}) };
      }
    }
    const { token, session } = await this.sessions.create(app.metadata.uid!, host, who);
    const maxAge = sessionLimits[session.kind].absoluteMs / 1000;
    const cookies = this.cookiesFor(res.req);
    appendSetCookie(res, setCookie(cookies.names.session, token, { secure: cookies.secure, maxAgeSeconds: maxAge }));
    this.opts.log.info(
      { app: app.metadata.name, ns: app.metadata.namespace, provider: who.provider, subject: who.subject, kind: session.kind },
      'Signed in',
    );
    return session;
  }

  async signOut(token: string): Promise<void> {
    this.cache.delete(token);
    await this.sessions.revokeToken(token);
  }
}

const tlsCookies = Object.freeze({ names: cookieNames(true), secure: true });

function identityKey(session: Session, host: string, app: App): string {
  return `${session.id}\n${host}\n${app.metadata.uid}`;
}

export function appendSetCookie(res: ServerResponse, cookie: string): void {
  const prev = res.getHeader('set-cookie');
  const list = prev === undefined ? [] : Array.isArray(prev) ? prev : [String(prev)];
  res.setHeader('set-cookie', [...list, cookie]);
}
