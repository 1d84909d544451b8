// A real OpenID provider for tests: the `oidc-provider` package on 127.0.0.1 with one confidential
// client (PKCE required) and accounts the test defines. signIn() plays the person at the
// provider without a browser: it follows the authorization request into the provider's
// interaction, which this server answers by logging the chosen account in and granting consent
// (what a login form and a consent screen would do), and returns the callback URL the provider
// redirects to, without following it.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TestOidcAccount {
  sub: string;
  email?: string;
  emailVerified?: boolean;
  /** Hosted domain (Google Workspace's `hd`). */
  hd?: string;
  name?: string;
}

export interface TestOidcProviderOptions {
  /** Redirect URIs registered for the client. */
  redirectUris: string[];
  accounts?: TestOidcAccount[];
  clientId?: string;
  clientSecret?: string;
  /** A fixed port (default: any free one). */
  port?: number;
  /**
   * `id-token` (default): scope claims go in the ID token, as Google and most providers do.
   * `userinfo`: only `sub` (and `hd`) in the ID token, the rest at userinfo: oidc-provider's
   * conformIdTokenClaims, and what some providers do when an access token is issued.
   */
  claimsIn?: 'id-token' | 'userinfo';
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  addAccount(account: TestOidcAccount): void;
  /**
   * Completes the authorization request at the provider as `accountId` (or declines it) and
   * returns the URL the provider redirects the browser to: the client's callback with code and state.
   */
  signIn(authorizationUrl: URL | string, accountId: string, opts?: { decline?: boolean }): Promise<URL>;
  close(): Promise<void>;
}

// The part of oidc-provider's API used here (the package ships no types).
interface InteractionDetails {
  uid: string;
  prompt: {
    name: string;
    details: { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> };
  };
  params: { client_id?: unknown };
  session?: { accountId?: string };
  grantId?: string;
}
interface Grant {
  addOIDCScope(scope: string): void;
  addOIDCClaims(claims: string[]): void;
  addResourceScope(resource: string, scope: string): void;
  save(): Promise<string>;
}
interface Provider {
  callback(): (req: IncomingMessage, res: ServerResponse) => void;
  interactionDetails(req: IncomingMessage, res: ServerResponse): Promise<InteractionDetails>;
  interactionFinished(
    req: IncomingMessage,
    res: ServerResponse,
    result: object,
    opts?: { mergeWithLastSubmission?: boolean },
  ): Promise<void>;
  Grant: { new (init: { accountId: string; clientId: string }): Grant; find(id: string): Promise<Grant | undefined> };
  on(event: 'server_error', listener: (ctx: unknown, err: Error) => void): void;
}
interface ProviderModule {
  Provider: new (issuer: string, configuration: object) => Provider;
}

async function loadProvider(): Promise<ProviderModule> {
  // A non-literal specifier: tsc has no declarations for the package; the shape above is checked here once.
  const specifier: string = 'oidc-provider';
  const mod = (await import(specifier)) as { Provider?: unknown };
  if (typeof mod.Provider !== 'function') throw new Error('oidc-provider: no Provider export');
  return mod as ProviderModule;
}

export async function startTestOidcProvider(opts: TestOidcProviderOptions): Promise<TestOidcProvider> {
  const { Provider } = await loadProvider();
  const clientId = opts.clientId ?? 'svc-platform';
  const clientSecret = opts.clientSecret ?? randomBytes(24).toString('base64url');
  const accounts = new Map<string, TestOidcAccount>((opts.accounts ?? []).map((a) => [a.sub, a]));
  // Set once the server listens (the issuer is its address): until then it answers 503, so not const.
  // eslint-disable-next-line prefer-const -- read by the request handler before it is set
  let provider: Provider | undefined;
  // eslint-disable-next-line prefer-const -- likewise
  let handle: ((req: IncomingMessage, res: ServerResponse) => void) | undefined;
  let lastServerError: Error | undefined;

  const server = createServer((req, res) => {
    if (!provider || !handle) return void res.writeHead(503).end();
    if (new URL(req.url ?? '/', 'http://x').pathname.startsWith('/interaction/')) {
      interaction(provider, req, res).catch((err: unknown) => {
        lastServerError = err instanceof Error ? err : new Error(String(err));
        if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
        res.end(lastServerError.message);
      });
      return;
    }
    handle(req, res);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const signingKey = {
    ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }),
    kid: 'test-1',
    use: 'sig',
    alg: 'RS256',
  };
  provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: opts.redirectUris,
        response_types: ['code'],
        grant_types: ['authorization_code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [signingKey] },
    cookies: { keys: [randomBytes(32).toString('base64url')] },
    pkce: { required: () => true },
    // `hd` is released with `openid`, as Google releases it with every Workspace sign-in.
    claims: { openid: ['sub', 'hd'], email: ['email', 'email_verified'], profile: ['name'] },
    conformIdTokenClaims: opts.claimsIn === 'userinfo',
    features: { devInteractions: { enabled: false } },
    interactions: { url: (_ctx: unknown, i: { uid: string }) => `/interaction/${i.uid}` },
    ttl: { AccessToken: 600, AuthorizationCode: 60, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600 },
    clientBasedCORS: () => false,
    findAccount: (_ctx: unknown, sub: string) => {
      const a = accounts.get(sub);
      if (!a) return undefined;
      return {
        accountId: a.sub,
        claims: async () => ({
          sub: a.sub,
          ...(a.email !== undefined ? { email: a.email, email_verified: a.emailVerified ?? false } : {}),
          ...(a.hd !== undefined ? { hd: a.hd } : {}),
          ...(a.name !== undefined ? { name: a.name } : {}),
        }),
      };
    },
  });
  handle = provider.callback();
  provider.on('server_error', (_ctx, err) => {
    lastServerError = err;
  });

  // The interaction: ?account=<sub> logs that account in; the consent prompt is granted in full;
  // ?decline=1 ends it with access_denied, as a person pressing "Cancel" does.
  async function interaction(p: Provider, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const q = new URL(req.url ?? '/', issuer).searchParams;
    const details = await p.interactionDetails(req, res);
    if (q.get('decline'))
      return p.interactionFinished(
        req,
        res,
        { error: 'access_denied', error_description: 'the person declined' },
        { mergeWithLastSubmission: false },
      );
    if (details.prompt.name === 'login') {
      const sub = q.get('account') ?? '';
      if (!accounts.has(sub))
        return void res.writeHead(400, { 'content-type': 'text/plain' }).end(`no test account ${JSON.stringify(sub)}`);
      return p.interactionFinished(req, res, { login: { accountId: sub } }, { mergeWithLastSubmission: false });
    }
    if (details.prompt.name === 'consent') {
      const accountId = details.session?.accountId;
      if (!accountId || typeof details.params.client_id !== 'string') throw new Error('consent prompt without a session or client');
      const grant =
        (details.grantId ? await p.Grant.find(details.grantId) : undefined) ??
        new p.Grant({ accountId, clientId: details.params.client_id });
      const missing = details.prompt.details;
      if (missing.missingOIDCScope?.length) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
      if (missing.missingOIDCClaims?.length) grant.addOIDCClaims(missing.missingOIDCClaims);
      for (const [resource, scopes] of Object.entries(missing.missingResourceScopes ?? {}))
        grant.addResourceScope(resource, scopes.join(' '));
      return p.interactionFinished(req, res, { consent: { grantId: await grant.save() } }, { mergeWithLastSubmission: true });
    }
    throw new Error(`unexpected interaction prompt ${details.prompt.name}`);
  }

  async function signIn(authorizationUrl: URL | string, accountId: string, { decline = false } = {}): Promise<URL> {
    const jar = new Map<string, string>();
    let url = new URL(authorizationUrl);
    for (let hop = 0; hop < 10; hop++) {
      if (url.pathname.startsWith('/interaction/')) url.search = decline ? '?decline=1' : `?account=${encodeURIComponent(accountId)}`;
      const res = await fetch(url, {
        redirect: 'manual',
        headers: jar.size ? { cookie: [...jar].map(([k, v]) => `${k}=${v}`).join('; ') } : {},
      });
      for (const c of res.headers.getSetCookie()) {
        const [pair = ''] = c.split(';');
        const eq = pair.indexOf('=');
        const [name, value] = [pair.slice(0, eq).trim(), pair.slice(eq + 1).trim()];
        // An expired cookie is the provider removing it.
        if (/expires=Thu, 01 Jan 1970/i.test(c) || value === '') jar.delete(name);
        else jar.set(name, value);
      }
      const location = res.headers.get('location');
      const body = await res.text();
      if (res.status < 300 || res.status >= 400 || !location) {
        throw new Error(
          `test OpenID provider: ${url.pathname} answered ${res.status}: ${body.slice(0, 300)}${lastServerError ? ` (server error: ${lastServerError.message})` : ''}`,
        );
      }
      url = new URL(location, url);
      if (url.origin !== issuer) return url;
    }
    throw new Error('test OpenID provider: more than 10 redirects');
  }

  return {
    issuer,
    clientId,
    clientSecret,
    addAccount: (a) => void accounts.set(a.sub, a),
    signIn,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}
