// Sign-in with the code-hosting provider (`codehost` policies): OAuth2 against GitHub's web flow
// and REST API. The same client talks to github.com (or GitHub Enterprise, through
// config.auth.codehost.url/apiUrl) in production and to test/support/codehost.ts in tests.
//
// Organization membership comes only from the signed-in person's own membership API
// (`GET /user/memberships/orgs/{org}` with their token, state `active`): the spec's rule 6 says a
// public organization listing is not sufficient, and private membership must be visible to our
// verifier by the organization owners' choice. GitHub answers 403 for an organization whose owners
// have not granted this OAuth app access (OAuth app access restrictions) and 404 for one the person
// is not in; both mean "not verified", so not admitted. A pending invitation is not membership.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import type { Logger } from '../logger.js';

export interface CodehostSettings {
  /** Web origin: the authorize and token endpoints (https://github.com). */
  readonly url: string;
  /** REST API base (https://api.github.com; GitHub Enterprise: https://HOST/api/v3). */
  readonly apiUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
}

export interface CodehostOptions {
  /** Each request to the provider. Default 10 s. */
  timeoutMs?: number;
  /** Membership requests in flight at once for one sign-in. Default 4. */
  concurrency?: number;
  log?: Logger;
}

export interface CodehostUser {
  /** The person's access token: for activeMemberships() during this sign-in; never stored or logged. */
  token: string;
  /** As the provider spells it (compare lowercased). */
  login: string;
  /** Stable across login renames. */
  id: number;
  name?: string;
  /** The primary address, only when the provider has verified it. */
  email?: string;
}

export interface CodehostClient {
  /** The authorization URL to send the browser to, and the state the callback must carry back. */
  start(opts: { redirectUri: string }): { url: URL; state: string };
  /** Exchanges the callback's code (see codehostCallback) and reads who signed in. */
  finish(code: string, redirectUri: string): Promise<CodehostUser>;
  /** Of `orgs`, the lowercased logins of those where the person's membership is verified active. */
  activeMemberships(token: string, orgs: readonly string[]): Promise<Set<string>>;
}

/** Same meanings as OidcFailure: `unavailable` try later, `denied` the person or provider said no, `invalid` a check failed. */
export type CodehostFailure = 'unavailable' | 'denied' | 'invalid';

export class CodehostError extends Error {
  override readonly name = 'CodehostError';
  constructor(
    readonly reason: CodehostFailure,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** read:org lets the membership API answer for private memberships; user:email gives verified addresses. */
export const codehostScope = 'read:user user:email read:org';

const tokenAnswer = z.union([
  z.object({ access_token: z.string().min(1), token_type: z.string().optional(), scope: z.string().optional() }),
  z.object({ error: z.string(), error_description: z.string().optional() }),
]);
const userAnswer = z.object({ login: z.string().min(1), id: z.number().int(), name: z.string().nullish(), email: z.string().nullish() });
const emailsAnswer = z.array(z.object({ email: z.string(), primary: z.boolean(), verified: z.boolean() }));
const orgName = /^[a-z0-9][a-z0-9._-]{0,99}$/;
const membershipAnswer = z.object({ state: z.string(), role: z.string().optional(), organization: z.object({ login: z.string() }) });

/**
 * The code from a callback request, after checking its state against the one start() returned
 * (in constant time). A callback carrying `error` (the person declined) is `denied`.
 */
export function codehostCallback(callbackUrl: URL, expectedState: string): string {
  const q = callbackUrl.searchParams;
  const state = Buffer.from(q.get('state') ?? '');
  const expected = Buffer.from(expectedState);
  if (!expectedState || state.length !== expected.length || !timingSafeEqual(state, expected))
    throw new CodehostError('invalid', 'code host callback: state does not match this sign-in');
  const error = q.get('error');
  if (error)
    throw new CodehostError(
      'denied',
      `code host callback: ${error}${q.get('error_description') ? ` (${q.get('error_description')})` : ''}`,
    );
  const code = q.get('code');
  if (!code) throw new CodehostError('invalid', 'code host callback: no code');
  return code;
}

export class GitHubCodehost implements CodehostClient {
  private readonly timeoutMs: number;
  private readonly concurrency: number;

  constructor(
    private readonly settings: CodehostSettings,
    private readonly options: CodehostOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.concurrency = Math.max(1, options.concurrency ?? 4);
  }

  start({ redirectUri }: { redirectUri: string }): { url: URL; state: string } {
    const state = randomBytes(32).toString('base64url');
    const url = new URL(`${this.settings.url}/login/oauth/authorize`);
    url.search = new URLSearchParams({
      client_id: this.settings.clientId,
      redirect_uri: redirectUri,
      state,
      scope: codehostScope,
    }).toString();
    return { url, state };
  }

  async finish(code: string, redirectUri: string): Promise<CodehostUser> {
    const exchanged = await this.request('token exchange', `${this.settings.url}/login/oauth/access_token`, {
      method: 'POST',
      headers: { accept: 'application/json', 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        client_id: this.settings.clientId,
        client_secret: this.settings.clientSecret,
        code,
        redirect_uri: redirectUri,
      }).toString(),
    });
    if (exchanged.status !== 200) throw this.statusError('token exchange', exchanged);
    // GitHub answers a refused exchange with 200 and an `error` member.
    const answer = parse('token exchange', tokenAnswer, exchanged.body);
    if ('error' in answer)
      throw new CodehostError(
        'invalid',
        `code host token exchange: refused: ${answer.error}${answer.error_description ? ` (${answer.error_description})` : ''}`,
      );
    const token = answer.access_token;

    const userRes = await this.api('user', '/user', token);
    if (userRes.status !== 200) throw this.statusError('user', userRes);
    const user = parse('user', userAnswer, userRes.body);

    // Only a verified primary address; /user's `email` is whatever the person made public.
    let email: string | undefined;
    const emailsRes = await this.api('user emails', '/user/emails', token);
    if (emailsRes.status === 200) email = parse('user emails', emailsAnswer, emailsRes.body).find((e) => e.primary && e.verified)?.email;
    else if (emailsRes.status !== 403 && emailsRes.status !== 404) throw this.statusError('user emails', emailsRes);

    return { token, login: user.login, id: user.id, ...(user.name ? { name: user.name } : {}), ...(email ? { email } : {}) };
  }

  async activeMemberships(token: string, orgs: readonly string[]): Promise<Set<string>> {
    const pending = [...new Set(orgs.map((o) => o.toLowerCase()))];
    const active = new Set<string>();
    const worker = async () => {
      for (let org = pending.shift(); org !== undefined; org = pending.shift()) {
        if (await this.isActiveMember(token, org)) active.add(org);
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.concurrency, pending.length) }, worker));
    return active;
  }

  private async isActiveMember(token: string, org: string): Promise<boolean> {
    // Not a name any organization can have (`..`, `a/b`): nothing to ask, and nothing to put in a path.
    if (!orgName.test(org)) return false;
    const res = await this.api(`membership of ${org}`, `/user/memberships/orgs/${encodeURIComponent(org)}`, token);
    if (res.status === 200) {
      const m = parse(`membership of ${org}`, membershipAnswer, res.body);
      // A renamed organization answers under its new login; the policy named the old one.
      return m.state === 'active' && m.organization.login.toLowerCase() === org;
    }
    if (res.status === 403 && !rateLimited(res)) {
      this.options.log?.info(
        { org },
        'code host organization has not granted this OAuth app access (or the person is not a member): membership not verified',
      );
      return false;
    }
    if (res.status === 404 || (res.status >= 300 && res.status < 400)) return false;
    throw this.statusError(`membership of ${org}`, res);
  }

  private api(what: string, path: string, token: string): Promise<Answer> {
    return this.request(what, `${this.settings.apiUrl}${path}`, {
      headers: { accept: 'application/vnd.github+json', authorization: `Bearer ${token}`, 'x-github-api-version': '2022-11-28' },
    });
  }

  private async request(
    what: string,
    url: string,
    init: { method?: string; headers: Record<string, string>; body?: string },
  ): Promise<Answer> {
    try {
      const res = await fetch(url, {
        ...init,
        headers: { 'user-agent': 'svc-platform', ...init.headers },
        redirect: 'manual',
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      return { status: res.status, headers: res.headers, body: await res.text() };
    } catch (err) {
      const why = err instanceof Error && err.name === 'TimeoutError' ? `no answer within ${this.timeoutMs} ms` : describe(err);
      throw new CodehostError('unavailable', `code host ${what}: ${why}`, { cause: err });
    }
  }

  private statusError(what: string, res: Answer): CodehostError {
    const detail = githubMessage(res.body);
    const text = `code host ${what}: ${res.status}${detail ? ` (${detail})` : ''}`;
    if (res.status === 401) return new CodehostError('invalid', `${text}: the access token is not valid`);
    if (rateLimited(res)) return new CodehostError('unavailable', `${text}: rate limited`);
    return new CodehostError(res.status >= 500 ? 'unavailable' : 'invalid', text);
  }
}

interface Answer {
  status: number;
  headers: Headers;
  body: string;
}

/** GitHub's primary (403/429 with no requests remaining) and secondary (retry-after) rate limits. */
function rateLimited(res: Answer): boolean {
  return (
    (res.status === 403 || res.status === 429) &&
    (res.headers.get('x-ratelimit-remaining') === '0' || res.headers.has('retry-after') || res.status === 429)
  );
}

function parse<T>(what: string, shape: z.ZodType<T>, body: string): T {
  let json: unknown;
  try {
    json = JSON.parse(body);
  } catch {
    throw new CodehostError('unavailable', `code host ${what}: the answer is not JSON`);
  }
  const r = shape.safeParse(json);
  if (!r.success)
    throw new CodehostError(
      'unavailable',
      `code host ${what}: unexpected answer: ${r.error.issues[0]?.path.join('.') ?? ''} ${r.error.issues[0]?.message ?? ''}`.trimEnd(),
    );
  return r.data;
}

function githubMessage(body: string): string | undefined {
  try {
    const m = z.object({ message: z.string() }).safeParse(JSON.parse(body));
    return m.success ? m.data.message : undefined;
  } catch {
    return undefined;
  }
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  return err.cause instanceof Error ? `${err.message}: ${err.cause.message}` : err.message;
}

/**
 * Which members of a `codehost: [...]` list need a membership check for this login: none when
 * the login itself is listed (compared lowercased), else every value (a value may name a person
 * or an organization; the membership API tells them apart by answering 404 for a person).
 */
export function codehostCandidates(values: readonly string[], login: string): { login: boolean; orgs: string[] } {
  const me = login.toLowerCase();
  const listed = [...new Set(values.map((v) => v.toLowerCase()))];
  return listed.includes(me) ? { login: true, orgs: [] } : { login: false, orgs: listed };
}

/** Whether a `codehost` policy member admits `login` with these verified active memberships; 'any' is `codehost: true`. */
export function codehostAdmits(values: readonly string[] | 'any', login: string, activeOrgs: ReadonlySet<string>): boolean {
  if (values === 'any') return true;
  const me = login.toLowerCase();
  return values.some((raw) => {
    const v = raw.toLowerCase();
    return v === me || activeOrgs.has(v);
  });
}
