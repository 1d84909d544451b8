// A GitHub-shaped OAuth2 provider for tests, on 127.0.0.1: the endpoints lib/auth/codehost.ts uses,
// with GitHub's paths, parameters, status codes and bodies, laid out as GitHub Enterprise Server
// lays them out (web flow at <url>/login/oauth/..., REST API at <url>/api/v3). github.com itself
// cannot run here; the client under test is the one that talks to it in production.
//
//   GET  /login/oauth/authorize           the person (cookie `test_login`, set by signIn) approves:
//                                         302 to redirect_uri with code and state, or error=access_denied
//   POST /login/oauth/access_token        code (single use, 10 min, same redirect_uri) for a token;
//                                         refusals are 200 with `error`, as GitHub answers
//   GET  /api/v3/user                     the token's user
//   GET  /api/v3/user/emails              their addresses (needs the user:email scope)
//   GET  /api/v3/user/memberships/orgs/O  active/pending membership; 404 not a member; 403 when
//                                         O has not granted the OAuth app access (even to members)
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface TestCodehostUser {
  login: string;
  /** Default: the next free id. */
  id?: number;
  name?: string;
  /** The profile's public address (/user `email`): not necessarily verified. */
  publicEmail?: string;
  emails?: Array<{ email: string; verified: boolean; primary: boolean }>;
  /** Organization login (as spelled on the provider) to membership state. */
  orgs?: Record<string, 'active' | 'pending'>;
}

export interface TestCodehost {
  url: string;
  apiUrl: string;
  clientId: string;
  clientSecret: string;
  /** Adds (or replaces) a user; returns its id. */
  addUser(user: TestCodehostUser): number;
  /** Whether an organization's owners granted the OAuth app access (default: granted). */
  setOrgAccess(org: string, granted: boolean): void;
  /** While on, API requests answer GitHub's primary rate-limit 403. */
  setRateLimited(on: boolean): void;
  /** The person `login`, signed in at the provider, approves (or declines) the authorization request; returns the redirect. */
  signIn(authorizeUrl: URL | string, login: string, opts?: { decline?: boolean }): Promise<URL>;
  /** Every request as "METHOD /path" (no query), in order. */
  readonly requests: readonly string[];
  close(): Promise<void>;
}

interface Code {
  login: string;
  clientId: string;
  redirectUri: string;
  scope: string;
  expires: number;
}

const docs = 'https://docs.github.com/rest';
const codeLifetimeMs = 10 * 60_000;

export async function startTestCodehost(
  opts: { clientId?: string; clientSecret?: string; callbackUrl?: string } = {},
): Promise<TestCodehost> {
  const clientId = opts.clientId ?? `Iv1.${randomBytes(8).toString('hex')}`;
  const clientSecret = opts.clientSecret ?? randomBytes(20).toString('hex');
  const users = new Map<string, Required<Pick<TestCodehostUser, 'login' | 'id'>> & TestCodehostUser>();
  const restricted = new Set<string>();
  const codes = new Map<string, Code>();
  const tokens = new Map<string, { login: string; scope: string }>();
  const requests: string[] = [];
  let nextId = 1000;
  let rateLimited = false;

  const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', ...headers }).end(JSON.stringify(body));
  };
  const notFound = (res: ServerResponse) => json(res, 404, { message: 'Not Found', documentation_url: docs, status: '404' });

  const authorize = (req: IncomingMessage, res: ServerResponse, q: URLSearchParams) => {
    if (q.get('client_id') !== clientId) return notFound(res);
    const redirectUri = q.get('redirect_uri') ?? opts.callbackUrl;
    if (!redirectUri) return json(res, 400, { message: 'no redirect_uri and no callback URL registered' });
    const back = new URL(redirectUri);
    // GitHub: the redirect_uri must be the registered callback URL's host and port, its path a subpath.
    if (opts.callbackUrl) {
      const registered = new URL(opts.callbackUrl);
      if (back.origin !== registered.origin || !back.pathname.startsWith(registered.pathname)) {
        const err = new URL(registered);
        err.search = new URLSearchParams({
          error: 'redirect_uri_mismatch',
          error_description: 'The redirect_uri MUST match the registered callback URL for this application.',
          state: q.get('state') ?? '',
        }).toString();
        return void res.writeHead(302, { location: err.toString() }).end();
      }
    }
    const login = /(?:^|;\s*)test_login=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    const user = login ? users.get(decodeURIComponent(login).toLowerCase()) : undefined;
    if (!user) return void res.writeHead(200, { 'content-type': 'text/html' }).end('<h1>Sign in to GitHub</h1>');
    const state = q.get('state');
    if (q.get('test_decline')) {
      back.search = new URLSearchParams({
        error: 'access_denied',
        error_description: 'The user has denied your application access.',
        ...(state ? { state } : {}),
      }).toString();
    } else {
      const code = randomBytes(10).toString('hex');
      codes.set(code, {
        login: user.login.toLowerCase(),
        clientId,
        redirectUri,
        scope: q.get('scope') ?? '',
        expires: Date.now() + codeLifetimeMs,
      });
      back.searchParams.set('code', code);
      if (state) back.searchParams.set('state', state);
    }
    res.writeHead(302, { location: back.toString() }).end();
  };

  const accessToken = async (req: IncomingMessage, res: ServerResponse) => {
    const raw = await readBody(req);
    const form = (req.headers['content-type'] ?? '').includes('application/json')
      ? new URLSearchParams(Object.entries(JSON.parse(raw || '{}') as Record<string, string>))
      : new URLSearchParams(raw);
    const answer = (body: Record<string, string>) => {
      if ((req.headers.accept ?? '').includes('application/json')) json(res, 200, body);
      else
        res
          .writeHead(200, { 'content-type': 'application/x-www-form-urlencoded; charset=utf-8' })
          .end(new URLSearchParams(body).toString());
    };
    const refuse = (error: string, error_description: string) =>
      answer({ error, error_description, error_uri: `${docs}/apps/troubleshooting-authorization-request-errors` });
    if (form.get('client_id') !== clientId || form.get('client_secret') !== clientSecret)
      return refuse('incorrect_client_credentials', 'The client_id and/or client_secret passed are incorrect.');
    const code = codes.get(form.get('code') ?? '');
    // A code is spent by any exchange attempt with it, as GitHub does.
    if (code) codes.delete(form.get('code') ?? '');
    if (!code || code.clientId !== clientId || code.expires < Date.now())
      return refuse('bad_verification_code', 'The code passed is incorrect or expired.');
    if (form.has('redirect_uri') && form.get('redirect_uri') !== code.redirectUri)
      return refuse('redirect_uri_mismatch', 'The redirect_uri MUST match the registered callback URL for this application.');
    const token = `gho_${randomBytes(18).toString('base64url')}`;
    tokens.set(token, { login: code.login, scope: code.scope });
    answer({
      access_token: token,
      token_type: 'bearer',
      scope: code.scope
        .split(/[\s,]+/)
        .filter(Boolean)
        .join(','),
    });
  };

  const api = (req: IncomingMessage, res: ServerResponse, path: string) => {
    if (rateLimited) {
      return json(
        res,
        403,
        { message: 'API rate limit exceeded for user ID 1.', documentation_url: `${docs}/overview/rate-limits-for-the-rest-api` },
        { 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(Math.ceil(Date.now() / 1000) + 3600) },
      );
    }
    const auth = /^(?:bearer|token)\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const grant = auth ? tokens.get(auth) : undefined;
    const user = grant ? users.get(grant.login) : undefined;
    if (!grant || !user) return json(res, 401, { message: 'Bad credentials', documentation_url: docs, status: '401' });
    if (req.method !== 'GET') return notFound(res);
    if (path === '/user') {
      return json(res, 200, {
        login: user.login,
        id: user.id,
        node_id: `U_${user.id}`,
        type: 'User',
        name: user.name ?? null,
        email: user.publicEmail ?? null,
      });
    }
    if (path === '/user/emails') {
      if (!grant.scope.split(/[\s,]+/).includes('user:email')) return notFound(res);
      return json(
        res,
        200,
        (user.emails ?? []).map((e) => ({ ...e, visibility: e.primary ? 'private' : null })),
      );
    }
    const m = /^\/user\/memberships\/orgs\/([^/]+)$/.exec(path);
    if (m) {
      const asked = decodeURIComponent(m[1]!).toLowerCase();
      if (restricted.has(asked)) {
        return json(res, 403, {
          message: `Although you appear to have the correct authorization credentials, the \`${asked}\` organization has enabled OAuth App access restrictions, meaning that data access to third-parties is limited. For more information on these restrictions, including how to enable this app, visit https://docs.github.com/articles/restricting-access-to-your-organization-s-data/`,
          documentation_url: `${docs}/orgs/members#get-an-organization-membership-for-the-authenticated-user`,
          status: '403',
        });
      }
      const entry = Object.entries(user.orgs ?? {}).find(([org]) => org.toLowerCase() === asked);
      if (!entry) return notFound(res);
      const [org, state] = entry;
      return json(res, 200, {
        url: `${base}/api/v3/orgs/${org}/memberships/${user.login}`,
        state,
        role: 'member',
        organization_url: `${base}/api/v3/orgs/${org}`,
        organization: { login: org, id: 1 },
        user: { login: user.login, id: user.id },
      });
    }
    return notFound(res);
  };

  const server = createServer((req, res) => {
    const u = new URL(req.url ?? '/', 'http://x');
    requests.push(`${req.method} ${u.pathname}`);
    const route = async () => {
      if (req.method === 'GET' && u.pathname === '/login/oauth/authorize') return authorize(req, res, u.searchParams);
      if (req.method === 'POST' && u.pathname === '/login/oauth/access_token') return accessToken(req, res);
      if (u.pathname.startsWith('/api/v3/')) return api(req, res, u.pathname.slice('/api/v3'.length));
      return notFound(res);
    };
    route().catch((err: unknown) => {
      if (!res.headersSent) json(res, 500, { message: err instanceof Error ? err.message : String(err) });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url: base,
    apiUrl: `${base}/api/v3`,
    clientId,
    clientSecret,
    requests,
    addUser(user) {
      const id = user.id ?? nextId++;
      users.set(user.login.toLowerCase(), { ...user, id });
      return id;
    },
    setOrgAccess(org, granted) {
      if (granted) restricted.delete(org.toLowerCase());
      else restricted.add(org.toLowerCase());
    },
    setRateLimited(on) {
      rateLimited = on;
    },
    async signIn(authorizeUrl, login, { decline = false } = {}) {
      const url = new URL(authorizeUrl);
      if (decline) url.searchParams.set('test_decline', '1');
      const res = await fetch(url, { redirect: 'manual', headers: { cookie: `test_login=${encodeURIComponent(login)}` } });
      const location = res.headers.get('location');
      const body = await res.text();
      if (res.status !== 302 || !location) throw new Error(`test code host: authorize answered ${res.status}: ${body.slice(0, 300)}`);
      return new URL(location);
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((err) => (err ? reject(err) : resolve()));
      }),
  };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
