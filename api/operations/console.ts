// The console's sign-in and sign-out (docs/decisions/0031-console.md). Sign-in is public: it mails a
// one-time link to the account with that address, answered the same whether or not there is one;
// the link lands on GET /console/auth (api/console/routes.ts), outside /api. Sign-out revokes the
// session's token and clears its cookie.
import { z } from 'zod';
import { ApiError, invalid } from '../errors.js';
import { RateLimiter } from '../middleware/rate-limit.js';
import type { Operation } from '../operation.js';
import { op } from '../operation.js';
import type { ApiDeps } from '../deps.js';
import type { PublicRequest } from '../router.js';
import { clearSessionCookie, csrfRefusal, readCookie, sessionCookieName } from '../console/session.js';

/** The sign-in's links (ApiDeps.console) and the tokens sign-out revokes. */
type Deps = Pick<ApiDeps, 'log'> & { console: Pick<ApiDeps['console'], 'sendLink'>; tokens: Pick<ApiDeps['tokens'], 'revoke'> };

// An account's address as accounts are made (`owner@localhost` on the local platform has no dot in
// its domain, which z.email() would refuse): one @, no spaces, and nothing else to parse.
const signInBody = z.strictObject({
  email: z
    .string()
    .max(254)
    .regex(/^[^\s@]+@[^\s@]+$/, 'must be an email address'),
});

/** Sign-in requests per client address: a burst of 5, then one every 12 s. */
export const signInRate = { perSecond: 1 / 12, burst: 5 } as const;

export function consoleOperations(s: Deps): Operation[] {
  const limiter = new RateLimiter(
    signInRate.perSecond,
    signInRate.burst,
    Date.now,
    () => 'too many console sign-in requests from this address; try again in a minute',
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
        limiter.take(`console-sign-in:${request.ip}`);
        // Only the console's own page may ask for a link (the link itself points at the configured
        // public origin, never at this request's Host).
        const refusal = csrfRefusal(request.browser);
        if (refusal)
          throw new ApiError('forbidden', refusal.replace('the console session cookie is accepted', 'console sign-in is accepted'));
        const email = (await request.body(signInBody)).email.trim().toLowerCase();
        // Answered before anything is looked up, so neither the words nor the time tell whether
        // the address has an account.
        void s.console.sendLink(email).catch((err: unknown) => s.log.error({ err }, 'Sending a console sign-in link failed'));
        return { status: 202, body: { status: 'sent_if_allowed', message: `if ${email} has an account, a sign-in link is on its way` } };
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
        const cookie = typeof headers.cookie === 'string' ? headers.cookie : undefined;
        const secure = readCookie(cookie, sessionCookieName(true)) !== undefined;
        return { status: 204, body: undefined, headers: { 'Set-Cookie': clearSessionCookie(sessionCookieName(secure), secure) } };
      },
    }),
  ];
}
