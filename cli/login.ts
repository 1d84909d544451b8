// `svc login` and `svc logout`: signing in through the browser with a device code (as `gh auth
// login` does, RFC 8628's flow). svc asks the API for a code (POST /cli/logins, no token), the
// person opens the address it gives, checks that the console shows the same code and approves;
// svc polls POST /cli/logins/token every `interval` seconds (5 s more after each 429, as RFC 8628
// says of slow_down) until it is handed the token, once, and stores it (cli/config.ts). `logout`
// revokes that token with itself (DELETE /account/tokens/{nonce}) and removes the file. The two
// public calls are made with fetch, not the typed client: it sends a token, and the document has
// no request bodies for them (the answers' types are the document's).
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { ApiError, ApiUnreachableError, createApiClient, type paths } from '../lib/client/index.js';
import { GroupUsageError, parseGroupArgs, printUsage, type CommandContext, type CommandGroup } from './command.js';
import {
  credentialsPath,
  CredentialsError,
  defaultApiUrl,
  ensureConfigDir,
  normalizeApiUrl,
  readCredentials,
  removeCredentials,
  writeCredentials,
  type Credentials,
  type Env,
} from './config.js';

/** POST /cli/logins's answer (201), as the API's document has it. */
type LoginStarted = paths['/cli/logins']['post']['responses'][201]['content']['application/json'];
/** POST /cli/logins/token's answer when approved (200), handed out once. */
type LoginApproved = Extract<paths['/cli/logins/token']['post']['responses'][200]['content']['application/json'], { status: 'approved' }>;

/** What login and logout need of the world besides the context (tests give their own). */
export interface LoginDeps {
  env: Env;
  now(): number;
  hostname(): string;
  /** Whether stdout is a terminal: the browser is opened only then. */
  stdoutIsTTY(): boolean;
  /** Opens an http(s) address in the browser, or does nothing; never throws. */
  openBrowser(url: string): void;
}

const maxName = 100;
/** Seconds added to the interval at each 429 (RFC 8628, 3.5: slow_down). */
const slowDownSeconds = 5;

const loginUsage = `usage:
  svc login [--api URL] [--name NAME] [--no-browser] [--json]
                                               sign in through the browser: open the address svc
                                               prints, check that the page shows the same code, and
                                               approve; svc stores the token it is given
  --api         the API root (default: $SVC_API_URL, else the last login's, else
                ${defaultApiUrl}); https://api.example.com stands for https://api.example.com/api
  --name        the token's name in the console (default: "<hostname> (svc CLI)", at most ${maxName})
  --no-browser  only print the address (to open it on another device); the browser is opened only
                when stdout is a terminal
  --json        print {"email","nonce","expires_at","api_url"} on stdout
The token is stored in credentials.json of $SVC_CONFIG_DIR, else $XDG_CONFIG_HOME/svc, else
~/.config/svc (mode 0600). --token and $SVC_TOKEN still win over it. svc logout revokes it.
example:
  svc login --api https://api.svc.example/api`;

const logoutUsage = `usage:
  svc logout [--json]                          revoke the token svc login stored, and remove it
  --json        print {"signed_out","revoked","nonce","api_url"} on stdout
Signed out already (no credentials file): says so and exits 0. Any token may revoke itself, whatever
its actions. When the API cannot be reached or refuses, the file is kept and svc exits 1.
example:
  svc logout`;

/** The browser of this desktop, if there is a way to reach it: xdg-open, or macOS's open. */
function openInBrowser(url: string): void {
  const command = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? undefined : 'xdg-open';
  if (!command) return;
  try {
    const child = spawn(command, [url], { stdio: 'ignore', detached: true });
    child.on('error', () => undefined);
    child.unref();
  } catch {
    // No browser to open: the address is printed.
  }
}

const processDeps: LoginDeps = {
  env: process.env,
  now: () => Date.now(),
  hostname,
  stdoutIsTTY: () => process.stdout.isTTY === true,
  openBrowser: openInBrowser,
};

/** --api as given: an http(s) API root; an origin alone stands for its /api. */
function apiUrlOption(value: string): string {
  let url: URL;
  try {
    url = new URL(value.trim());
  } catch {
    throw new GroupUsageError(`--api is not a URL: ${value}`, loginUsage);
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new GroupUsageError('--api is an http(s) URL', loginUsage);
  if (url.search || url.hash) throw new GroupUsageError('--api is the API root, without ? or #', loginUsage);
  if (url.pathname === '/' || url.pathname === '') url.pathname = '/api';
  return normalizeApiUrl(url.href);
}

/** The console's page of the account's tokens, next to the API (the console is served at its origin). */
const tokensPage = (apiUrl: string) => {
  try {
    return `${new URL(apiUrl).origin}/console/tokens`;
  } catch {
    return 'the console’s tokens page';
  }
};

/** A call of a public endpoint (no token): its status and JSON; no answer at all is an ApiUnreachableError. */
async function publicPost(apiUrl: string, path: string, body: unknown): Promise<{ status: number; json: unknown; requestId?: string }> {
  let res: Response;
  try {
    res = await fetch(`${apiUrl}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
    });
  } catch (err) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
    throw new ApiUnreachableError(apiUrl, cause);
  }
  const text = await res.text();
  let json: unknown;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    // Not the API's JSON (a proxy's page): its words as they came.
    json = text;
  }
  return { status: res.status, json, requestId: res.headers.get('x-request-id') ?? undefined };
}

const apiWords = (json: unknown, status: number) => {
  const error = (json as { error?: unknown } | undefined)?.error;
  return typeof error === 'string' ? error : typeof json === 'string' && json ? json : `HTTP ${status}`;
};

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0;

function startedOf(json: unknown, status: number, requestId?: string): LoginStarted {
  const s = json as Partial<LoginStarted> | undefined;
  if (
    !isString(s?.device_code) ||
    !isString(s.user_code) ||
    !isString(s.verification_url) ||
    typeof s.expires_in !== 'number' ||
    typeof s.interval !== 'number'
  )
    throw new ApiError(status, 'the API answered POST /cli/logins without a device code', requestId);
  return s as LoginStarted;
}

function approvedOf(json: unknown, requestId?: string): LoginApproved {
  const a = json as Partial<LoginApproved> | undefined;
  // The email may be empty (an account without one): the token is what matters.
  if (!isString(a?.token) || !isString(a.nonce) || typeof a.email !== 'string' || !isString(a.expires_at))
    throw new ApiError(200, 'the API approved the login without a token', requestId);
  return a as LoginApproved;
}

const minutes = (ms: number) => `${Math.max(1, Math.round(ms / 60_000))} min`;

async function login(ctx: CommandContext, deps: LoginDeps, o: { api?: string; name?: string; browser: boolean; json: boolean }) {
  const env = deps.env;
  let previous: Credentials | undefined;
  try {
    previous = readCredentials(env);
  } catch (err) {
    if (!(err instanceof CredentialsError)) throw err;
    ctx.err(`svc: ${err.message}`);
    ctx.err(`svc: signing in replaces ${credentialsPath(env)}`);
  }
  const apiUrl = o.api ?? normalizeApiUrl(env.SVC_API_URL?.trim() || previous?.api_url || defaultApiUrl);
  const name = o.name ?? `${deps.hostname().slice(0, maxName - ' (svc CLI)'.length)} (svc CLI)`;
  // Where the token will go, made before anything is asked of anyone: a token handed out once
  // and then not storable would be lost.
  try {
    ensureConfigDir(env);
  } catch (err) {
    throw new CredentialsError(`cannot make the config directory: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (/^http:/.test(apiUrl) && !/^http:\/\/(127\.0\.0\.1|localhost|\[::1\])[:/]/.test(apiUrl))
    ctx.err(`svc: warning: ${apiUrl} is plain http: the token will travel unencrypted`);

  const start = await publicPost(apiUrl, '/cli/logins', { name }).catch((err: unknown) => {
    // Said here, not as $SVC_API_URL's fault (describeFailure): the API may be --api's.
    if (err instanceof ApiUnreachableError)
      throw new Error(`${err.message}; is it the API root (svc login --api https://api.example.com/api)?`);
    throw err;
  });
  if (start.status !== 201 && start.status !== 200) throw new ApiError(start.status, apiWords(start.json, start.status), start.requestId);
  const started = startedOf(start.json, start.status, start.requestId);

  ctx.err(`Open ${started.verification_url} and check that it shows the code ${started.user_code}`);
  if (o.browser && deps.stdoutIsTTY() && /^https?:\/\//.test(started.verification_url)) {
    try {
      deps.openBrowser(started.verification_url);
    } catch {
      // The address is printed: that is enough.
    }
  }
  const deadline = deps.now() + started.expires_in * 1000;
  ctx.err(`Waiting for the approval (the code expires in ${minutes(started.expires_in * 1000)}; ^C to give up)...`);

  let interval = Math.max(1, started.interval);
  let nextNote = deps.now() + 60_000;
  let trouble: string | undefined;
  let approved: LoginApproved | undefined;
  while (!approved) {
    await ctx.sleep(interval * 1000);
    let poll: Awaited<ReturnType<typeof publicPost>> | undefined;
    try {
      poll = await publicPost(apiUrl, '/cli/logins/token', { device_code: started.device_code });
    } catch (err) {
      if (!(err instanceof ApiUnreachableError)) throw err;
      // A moment without the API (a restart, the network): the code is still good, so try again.
      if (trouble === undefined) ctx.err(`svc: ${err.message}; still trying`);
      trouble = err.message;
    }
    if (poll?.status === 200) approved = approvedOf(poll.json, poll.requestId);
    else if (poll?.status === 410) {
      const words = apiWords(poll.json, poll.status);
      ctx.err(`svc: ${words}`);
      if (!/svc login/.test(words)) ctx.err('svc: not signed in; run svc login to start again');
      return 1;
    } else if (poll?.status === 429) {
      interval += slowDownSeconds;
      ctx.err(`svc: the API asks to poll more slowly: every ${interval} s from now on`);
    } else if (poll && poll.status >= 500) {
      if (trouble === undefined) ctx.err(`svc: ${poll.status} ${apiWords(poll.json, poll.status)}; still trying`);
      trouble = String(poll.status);
    } else if (poll && poll.status !== 202) throw new ApiError(poll.status, apiWords(poll.json, poll.status), poll.requestId);
    else if (poll) trouble = undefined;
    if (approved) break;
    const now = deps.now();
    if (now >= deadline) {
      ctx.err(`svc: the code ${started.user_code} expired before it was approved; run svc login to start again`);
      return 1;
    }
    if (now >= nextNote) {
      ctx.err(`Still waiting (${minutes(deadline - now)} left)...`);
      nextNote = now + 60_000;
    }
  }

  const credentials: Credentials = {
    api_url: apiUrl,
    token: approved.token,
    nonce: approved.nonce,
    email: approved.email,
    expires_at: approved.expires_at,
  };
  let file: string;
  try {
    file = await writeCredentials(credentials, env);
  } catch (err) {
    // The token is not shown: it would stay in a terminal's scrollback. It is revoked by its id.
    throw new CredentialsError(
      `signed in as ${approved.email}, but the token cannot be stored in ${credentialsPath(env)}: ` +
        `${err instanceof Error ? err.message : String(err)}. Revoke it (token ${approved.nonce}) at ${tokensPage(apiUrl)}`,
    );
  }
  ctx.err(`Signed in as ${approved.email || 'an account without an email'} (token ${approved.nonce}, expires ${approved.expires_at})`);
  ctx.err(`The token is stored in ${file}`);
  if (previous && previous.nonce !== approved.nonce && normalizeApiUrl(previous.api_url) === apiUrl)
    ctx.err(`The token it replaces (${previous.nonce}) is still valid until ${previous.expires_at}: svc tokens rm ${previous.nonce}`);
  if (env.SVC_TOKEN?.trim()) ctx.err('svc: note: $SVC_TOKEN is set and wins over the stored token: unset SVC_TOKEN to use this login');
  if (o.json) ctx.out(JSON.stringify({ email: approved.email, nonce: approved.nonce, expires_at: approved.expires_at, api_url: apiUrl }));
  return 0;
}

async function logout(ctx: CommandContext, deps: LoginDeps, json: boolean): Promise<number> {
  const env = deps.env;
  const file = credentialsPath(env);
  const result = (signedOut: boolean, revoked: boolean, c?: Credentials) =>
    json && ctx.out(JSON.stringify({ signed_out: signedOut, revoked, nonce: c?.nonce ?? null, api_url: c?.api_url ?? null }));
  let stored: Credentials | undefined;
  try {
    // A file others could read is signed out of all the same: that is the way out of it.
    stored = readCredentials(env, { anyMode: true });
  } catch (err) {
    if (!(err instanceof CredentialsError)) throw err;
    // Not what svc login writes: nothing to revoke with; the file goes.
    await removeCredentials(env);
    ctx.err(`svc: ${err.message}`);
    ctx.err(`Removed ${file}; no token was revoked`);
    result(true, false);
    return 0;
  }
  if (!stored) {
    ctx.err(`not signed in (no ${file})`);
    result(false, false);
    return 0;
  }
  const api = createApiClient({ baseUrl: normalizeApiUrl(stored.api_url), token: stored.token });
  let revoked = false;
  try {
    await api.DELETE('/account/tokens/{nonce}', { params: { path: { nonce: stored.nonce } } });
    revoked = true;
  } catch (err) {
    if (err instanceof ApiError && (err.status === 401 || err.status === 404)) {
      // Revoked or expired already, or gone: nothing left to revoke.
      ctx.err(`The token ${stored.nonce} was no longer valid (${err.apiMessage})`);
    } else {
      // No answer, or a failure of the API's: the file is kept, so that svc logout can be run again.
      const why = err instanceof Error ? err.message : String(err);
      ctx.err(`svc: ${why}`);
      ctx.err(
        `svc: the token ${stored.nonce} was not revoked and ${file} is kept: run svc logout again, or remove the file to sign out without revoking`,
      );
      return 1;
    }
  }
  await removeCredentials(env);
  ctx.err(`${revoked ? `Revoked the token ${stored.nonce} and signed out` : 'Signed out'} of ${stored.api_url} (removed ${file})`);
  if (env.SVC_TOKEN?.trim()) ctx.err('svc: note: $SVC_TOKEN is still set: commands use it');
  result(true, revoked, stored);
  return 0;
}

/** The two groups, on the world given (tests) or this process's. */
export function createLoginGroups(given: Partial<LoginDeps> = {}): { login: CommandGroup; logout: CommandGroup } {
  const deps: LoginDeps = { ...processDeps, ...given };
  const loginGroup: CommandGroup = {
    name: 'login',
    synopsis: `  svc login [--api URL] [--no-browser]        sign in through the browser; the token is stored in
                                              ~/.config/svc/credentials.json`,
    usage: loginUsage,
    async run(args, ctx) {
      const { values, positionals } = parseGroupArgs(this, args, {
        api: { type: 'string' },
        name: { type: 'string' },
        'no-browser': { type: 'boolean' },
        json: { type: 'boolean' },
      });
      if (values.help) return printUsage(this, ctx);
      if (positionals.length) throw new GroupUsageError(`svc login takes no arguments (got ${positionals.join(' ')})`, loginUsage);
      if (values.token !== undefined) throw new GroupUsageError('svc login makes a token: it takes no --token', loginUsage);
      const name = values.name?.trim();
      if (values.name !== undefined && !name) throw new GroupUsageError('--name is empty', loginUsage);
      if (name && name.length > maxName) throw new GroupUsageError(`--name is at most ${maxName} characters`, loginUsage);
      return login(ctx, deps, {
        api: values.api === undefined ? undefined : apiUrlOption(values.api),
        name,
        browser: values['no-browser'] !== true,
        json: values.json === true,
      });
    },
  };
  const logoutGroup: CommandGroup = {
    name: 'logout',
    synopsis: `  svc logout                                  revoke the token svc login stored, and remove it`,
    usage: logoutUsage,
    async run(args, ctx) {
      const { values, positionals } = parseGroupArgs(this, args, { json: { type: 'boolean' } });
      if (values.help) return printUsage(this, ctx);
      if (positionals.length) throw new GroupUsageError(`svc logout takes no arguments (got ${positionals.join(' ')})`, logoutUsage);
      if (values.token !== undefined)
        throw new GroupUsageError('svc logout revokes the stored token; another one: svc tokens rm ID', logoutUsage);
      return logout(ctx, deps, values.json === true);
    },
  };
  return { login: loginGroup, logout: logoutGroup };
}

const groups = createLoginGroups();
export const loginGroup = groups.login;
export const logoutGroup = groups.logout;
