// The console's sign-in and sign-out (docs/decisions/0031-console.md). Sign-in is public: it mails a
// one-time link to the account with that address, answered the same whether or not there is one,
// and binds the link to the asking browser with a cookie. The link opens the console's page at
// /console/auth, which presents the code here (POST /console/auth): in the browser that asked, it
// signs in; elsewhere it names the account and signs in only once the person confirms. Sign-out
// revokes the session's token and clears its cookie.
import { z } from 'zod';
import { isSecretShape, newSecret } from '../../lib/auth/secrets.js';
import { ApiError, invalid } from '../errors.js';
import { RateLimiter } from '../middleware/rate-limit.js';
import type { Operation } from '../operation.js';
import { op } from '../operation.js';
import type { ApiDeps } from '../deps.js';
import type { PublicRequest } from '../router.js';
import { codeLifetimeMs } from '../console/codes.js';
import { clearSessionCookies, consoleOnly, readCookie, sessionCookie, signedInHeaders, signInCookieName } from '../console/session.js';

/** The sign-in's links and their redemption (ApiDeps.console), and the tokens sign-out revokes. */
type Deps = Pick<ApiDeps, 'log'> & {
  console: Pick<ApiDeps['console'], 'sendLink' | 'redeem'>;
  tokens: Pick<ApiDeps['tokens'], 'revoke'>;
};

// An account's address as accounts are made (`owner@localhost` on the local platform has no dot in
// its domain, which z.email() would refuse): one @, no spaces, and nothing else to parse.
const signInBody = z.strictObject({
  email: z
    .string()
    .max(254)
    .regex(/^[^\s@]+@[^\s@]+$/, 'must be an email address'),
});

const authBody = z.strictObject({
  code: z.string().max(100),
  /** The person saw the account named and chose to sign in here (the link was asked for elsewhere). */
  confirm: z.boolean().default(false),
});

/** Sign-in requests per client address: a burst of 5, then one every 12 s. */
export const signInRate = { perSecond: 1 / 12, burst: 5 } as const;
/** Codes presented per client address: a burst of 20, then one a second (a code is 256 random bits: this spares the database, not the codes). */
export const redeemRate = { perSecond: 1, burst: 20 } as const;

export function consoleOperations(s: Deps): Operation[] {
  const signInLimiter = new RateLimiter(
    signInRate.perSecond,
    signInRate.burst,
    Date.now,
    () => 'too many console sign-in requests from this address; try again in a minute',
  );
  const redeemLimiter = new RateLimiter(
    redeemRate.perSecond,
    redeemRate.burst,
    Date.now,
    () => 'too many console sign-in links presented from this address; try again shortly',
  );
  return [
    {
      method: 'POST',
      path: '/console/sign-in',
      operationId: 'signInConsole',
      tag: 'account',
      summary: 'Email a console sign-in link (body {"email"}; sent only from the console, with X-Svc-Console: 1)',
      action: null,
      status: 202,
      response: z.object({ status: z.literal('sent_if_allowed'), message: z.string() }),
      handler: async (request?: PublicRequest) => {
        if (!request) throw new ApiError('internal', 'the console sign-in was called without its request');
        // Only the console's own page may ask for a link (the link itself points at the configured
        // public origin, never at this request's Host).
        consoleOnly(request.browser, 'console sign-in');
        signInLimiter.take(`console-sign-in:${request.ip}`);
        const email = (await request.body(signInBody)).email.trim().toLowerCase();
        // The browser keeps one value while it has one, so a second request does not orphan the first link.
        const { secure } = request.browser;
        const held = readCookie(request.browser.cookie, signInCookieName(secure));
        const browserValue = isSecretShape(held) ? held : newSecret();
        // Answered before anything is looked up, so neither the words nor the time tell whether
        // the address has an account.
        void s.console.sendLink(email, browserValue).catch((err: unknown) => s.log.error({ err }, 'Sending a console sign-in link failed'));
        return {
          status: 202,
          body: { status: 'sent_if_allowed', message: `if ${email} has an account, a sign-in link is on its way` },
          headers: {
            'Set-Cookie': sessionCookie(signInCookieName(secure), browserValue, { secure, maxAgeSeconds: codeLifetimeMs / 1000 }),
          },
        };
      },
    },
    {
      method: 'POST',
      path: '/console/auth',
      operationId: 'redeemConsoleSignIn',
      tag: 'account',
      summary:
        'Present a mailed sign-in code (body {"code", "confirm"}; from the console only): signed in, or the account to confirm when the link was asked for in another browser',
      action: null,
      status: 200,
      response: z.discriminatedUnion('status', [
        z.object({ status: z.literal('signed_in') }),
        z.object({ status: z.literal('confirm'), email: z.string() }),
      ]),
      handler: async (request?: PublicRequest) => {
        if (!request) throw new ApiError('internal', 'the console sign-in was called without its request');
        // The header and Origin: no page of another origin can present a code (a login CSRF).
        consoleOnly(request.browser, 'a console sign-in code');
        redeemLimiter.take(`console-auth:${request.ip}`);
        const { code, confirm } = await request.body(authBody);
        const { secure } = request.browser;
        const result = await s.console.redeem(code, {
          value: readCookie(request.browser.cookie, signInCookieName(secure)),
          confirmed: confirm,
        });
        if (!result)
          throw new ApiError(
            'gone',
            'this sign-in link no longer works: it was used already, is older than ten minutes, or is not one of ours; ask for a new one',
          );
        if ('confirm' in result) return { status: 200, body: { status: 'confirm', email: result.confirm } };
        return { status: 200, body: { status: 'signed_in' }, headers: signedInHeaders(secure, result) };
      },
    },
    op({
      method: 'POST',
      path: '/console/sign-out',
      operationId: 'signOutConsole',
      tag: 'account',
      summary: 'End the console session: revoke its token and clear its cookie',
      action: 'read',
      status: 204,
      handler: async ({ caller, headers }) => {
        // A bearer header wins over the cookie: that would revoke a CLI's token, which is DELETE /account/tokens/{nonce}'s job.
        if (headers.authorization !== undefined)
          throw invalid('sign-out ends a console session (its cookie); revoke an API token with DELETE /account/tokens/{nonce}');
        await s.tokens.revoke(caller.account.id, caller.principal.nonce);
        return { status: 204, body: undefined, headers: { 'Set-Cookie': clearSessionCookies() } };
      },
    }),
  ];
}
