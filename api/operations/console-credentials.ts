// The console's sign-in by passkey and at the identity provider, and an owner's console passkeys
// (docs/decisions/0033-console-sign-in.md). Every public call here is the console page's own: the
// X-Svc-Console header and the API's Origin (consoleOnly), and a rate per client address. A
// successful sign-in answers as a mailed link's does: the session cookie, HttpOnly and Strict.
import { z } from 'zod';
import { PasskeyError, type Passkey, type PasskeyFailure } from '../../lib/auth/passkeys.js';
import { isSecretShape, newSecret } from '../../lib/auth/secrets.js';
import { codeLifetimeMs } from '../console/codes.js';
import { consoleOnly, readCookie, sessionCookie, signedInHeaders, signInCookieName, type BrowserRequest } from '../console/session.js';
import type { ApiDeps } from '../deps.js';
import { ApiError, invalid, type ErrorCode } from '../errors.js';
import { RateLimiter } from '../middleware/rate-limit.js';
import { op, type HandlerResult, type Operation } from '../operation.js';
import type { PublicRequest } from '../router.js';

type Deps = Pick<ApiDeps, 'console' | 'consolePasskeys' | 'consoleIdp'>;

/**
 * Steps of sign-in by passkey, and of sign-in at the identity provider, each per client address: a
 * burst of 30, then one a second. A passkey cannot be guessed: this spares the database and the
 * provider, as the mailed codes' limit does (console.ts redeemRate).
 */
export const credentialSignInRate = { perSecond: 1, burst: 30 } as const;

const passkeyRefusals: Record<PasskeyFailure, ErrorCode> = {
  malformed: 'invalid_request',
  challenge: 'invalid_request',
  invalid: 'invalid_request',
  exists: 'conflict',
  'unknown-credential': 'forbidden',
  cloned: 'forbidden',
  disabled: 'forbidden',
};

/** A WebAuthn step: a PasskeyError becomes its 4XX, in its words. */
async function ceremony<T>(step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    if (err instanceof PasskeyError) throw new ApiError(passkeyRefusals[err.reason], err.message);
    throw err;
  }
}

/** The browser's answer to a ceremony: the challenge it was given, and what the authenticator said (checked by lib/auth/passkeys.ts). */
const ceremonyBody = z.strictObject({
  challenge_id: z.string().min(1).max(64),
  response: z.record(z.string(), z.unknown()),
});

const idpFinishBody = z.strictObject({
  /** The callback page's query as the provider sent it (?code=…&state=…, or ?error=…&state=…). */
  search: z.string().max(4096),
});

const ceremonyOptions = z.object({ challenge_id: z.string(), options: z.record(z.string(), z.unknown()) });
const passkeyShape = z.object({
  id: z.string(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  transports: z.array(z.string()),
});
const signedIn = z.object({ status: z.literal('signed_in') });

const presentPasskey = (p: Passkey) => ({
  id: p.id,
  created_at: p.createdAt.toISOString(),
  last_used_at: p.lastUsedAt?.toISOString() ?? null,
  transports: p.transports,
});

/** The answer of a sign-in that proved `accountId`: a new session's cookie. */
async function signInAnswer(s: Deps, browser: BrowserRequest, accountId: string, how: string): Promise<HandlerResult> {
  const session = await s.console.session(accountId, how);
  return { status: 200, body: { status: 'signed_in' }, headers: signedInHeaders(browser.secure, session) };
}

export function consoleCredentialOperations(s: Deps): Operation[] {
  const limiter = new RateLimiter(
    credentialSignInRate.perSecond,
    credentialSignInRate.burst,
    Date.now,
    () => 'too many console sign-in attempts from this address; try again in a minute',
  );
  /** The request of a public console call, checked: the console's own page, within the address's rate. */
  const guarded = (request: PublicRequest | undefined, kind: 'passkey' | 'idp', what: string): PublicRequest => {
    if (!request) throw new ApiError('internal', `${what} was called without its request`);
    consoleOnly(request.browser, what);
    limiter.take(`console-${kind}:${request.ip}`);
    return request;
  };
  const passkeysPossible = () => {
    const why = s.consolePasskeys.unavailable;
    if (why) throw new ApiError('not_found', why);
  };
  const idp = () => {
    if (!s.consoleIdp)
      throw new ApiError('not_found', 'no identity provider is configured on this platform (SVC_IDP_ISSUER); sign in by email');
    return s.consoleIdp;
  };

  return [
    {
      method: 'GET',
      path: '/console/providers',
      operationId: 'listConsoleSignInProviders',
      tag: 'account',
      summary:
        'How an owner may sign in to the console here: email always; passkey when the API is published at a host name; idp when configured',
      action: null,
      response: z.object({ email: z.literal(true), passkey: z.boolean(), idp: z.boolean() }),
      handler: () => ({ body: { email: true, passkey: s.consolePasskeys.unavailable === undefined, idp: s.consoleIdp !== undefined } }),
    },
    {
      method: 'POST',
      path: '/console/passkeys/sign-in/options',
      operationId: 'startConsolePasskeySignIn',
      tag: 'account',
      summary:
        'Begin a console sign-in by passkey: the options for navigator.credentials.get() (discoverable credentials) and the challenge to answer',
      action: null,
      response: ceremonyOptions,
      handler: async (request?: PublicRequest) => {
        guarded(request, 'passkey', 'a console passkey sign-in');
        passkeysPossible();
        const { challengeId, options } = await s.consolePasskeys.signInOptions();
        return { body: { challenge_id: challengeId, options } };
      },
    },
    {
      method: 'POST',
      path: '/console/passkeys/sign-in',
      operationId: 'signInConsoleWithPasskey',
      tag: 'account',
      summary: 'Finish a console sign-in by passkey (body {"challenge_id", "response"}): signed in, with the session cookie',
      action: null,
      response: signedIn,
      handler: async (request?: PublicRequest) => {
        const r = guarded(request, 'passkey', 'a console passkey sign-in');
        passkeysPossible();
        const body = await r.body(ceremonyBody);
        const accountId = await ceremony(() => s.consolePasskeys.signIn(body.challenge_id, body.response));
        return signInAnswer(s, r.browser, accountId, 'passkey');
      },
    },
    {
      method: 'POST',
      path: '/console/idp/start',
      operationId: 'startConsoleIdpSignIn',
      tag: 'account',
      summary:
        'Begin a console sign-in at the identity provider: the URL to send the browser to; the flow is bound to this browser by a cookie',
      action: null,
      response: z.object({ url: z.string() }),
      handler: async (request?: PublicRequest) => {
        const r = guarded(request, 'idp', 'a console sign-in at the identity provider');
        const provider = idp();
        const { secure } = r.browser;
        const held = readCookie(r.browser.cookie, signInCookieName(secure));
        const browserValue = isSecretShape(held) ? held : newSecret();
        const url = await provider.start(browserValue);
        return {
          body: { url },
          headers: {
            'Cache-Control': 'no-store',
            'Set-Cookie': sessionCookie(signInCookieName(secure), browserValue, { secure, maxAgeSeconds: codeLifetimeMs / 1000 }),
          },
        };
      },
    },
    {
      method: 'POST',
      path: '/console/idp/finish',
      operationId: 'finishConsoleIdpSignIn',
      tag: 'account',
      summary:
        'Finish a console sign-in at the identity provider (body {"search"}: the callback page\'s query), in the browser that started it: signed in, with the session cookie',
      action: null,
      response: signedIn,
      handler: async (request?: PublicRequest) => {
        const r = guarded(request, 'idp', 'a console sign-in at the identity provider');
        const provider = idp();
        const { search } = await r.body(idpFinishBody);
        const accountId = await provider.finish(search, readCookie(r.browser.cookie, signInCookieName(r.browser.secure)));
        return signInAnswer(s, r.browser, accountId, 'idp');
      },
    },
    op({
      method: 'GET',
      path: '/console/passkeys',
      operationId: 'listConsolePasskeys',
      tag: 'account',
      summary: "The account owner's console passkeys, oldest first",
      action: 'read',
      accountWide: true,
      response: z.object({ passkeys: z.array(passkeyShape) }),
      handler: async ({ caller }) => ({ body: { passkeys: (await s.consolePasskeys.list(caller.account.id)).map(presentPasskey) } }),
    }),
    op({
      method: 'POST',
      path: '/console/passkeys/options',
      operationId: 'startConsolePasskeyRegistration',
      tag: 'account',
      summary: 'Begin adding a console passkey: the options for navigator.credentials.create() and the challenge to answer',
      action: 'admin',
      accountWide: true,
      response: ceremonyOptions,
      handler: async ({ caller }) => {
        passkeysPossible();
        const { challengeId, options } = await s.consolePasskeys.registrationOptions({
          id: caller.account.id,
          email: caller.account.email,
        });
        return { body: { challenge_id: challengeId, options } };
      },
    }),
    op({
      method: 'POST',
      path: '/console/passkeys',
      operationId: 'addConsolePasskey',
      tag: 'account',
      summary: 'Add a console passkey (body {"challenge_id", "response"}); the owner is told by mail',
      action: 'admin',
      accountWide: true,
      status: 201,
      body: ceremonyBody,
      response: passkeyShape,
      handler: async ({ caller, body, ip }) => {
        passkeysPossible();
        const account = { id: caller.account.id, email: caller.account.email };
        const added = await ceremony(() => s.consolePasskeys.register(account, body.challenge_id, body.response, ip));
        return { status: 201, body: presentPasskey(added) };
      },
    }),
    op({
      method: 'DELETE',
      path: '/console/passkeys/{passkeyID}',
      operationId: 'removeConsolePasskey',
      tag: 'account',
      summary: 'Remove a console passkey: it signs nobody in from then on',
      action: 'admin',
      accountWide: true,
      status: 204,
      handler: async ({ caller, params }) => {
        const id = params.passkeyID!;
        if (id.length > 1400) throw invalid('passkeyID: too long');
        if (!(await s.consolePasskeys.remove(caller.account.id, id))) throw new ApiError('not_found', `no console passkey ${id}`);
        return { status: 204, body: undefined };
      },
    }),
  ];
}
