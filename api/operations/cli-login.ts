// `svc login` through the browser (api/cli-login/logins.ts, docs/cli.md): the CLI starts a login
// and polls for its token (both public: the CLI has no token yet); the account's owner, signed in to
// the console, sees the login by its user code with the device's name and address, and approves it
// (choosing the token's actions and lifetime) or denies it. Only a console session may decide: a
// login mints a long-lived token, and the console session is the owner proven by their mailbox.
import { z } from 'zod';
import { actions, type Restriction } from '../../lib/tokens/token.js';
import { CliLogins, loginLifetimeMs, normalUserCode, pollIntervalSeconds } from '../cli-login/logins.js';
import { ApiError, notFound } from '../errors.js';
import { assertTokenRoom, issueWithinQuota } from '../issue-token.js';
import { RateLimiter } from '../middleware/rate-limit.js';
import { op, type Operation } from '../operation.js';
import type { ApiDeps } from '../deps.js';
import type { PublicRequest } from '../router.js';
import type { Principal } from '../../lib/tokens/store.js';

type Deps = Pick<ApiDeps, 'tokens' | 'accountLock' | 'accounts' | 'clock' | 'log'> & {
  cliLogins: CliLogins;
  config: { api: Pick<ApiDeps['config']['api'], 'publicUrl'>; quotas: Pick<ApiDeps['config']['quotas'], 'tokensPerAccount'> };
};

// The device's name reaches the console and the owner's notice mail: one line, no control characters.
const startBody = z.strictObject({
  name: z
    .string()
    .trim()
    .min(1)
    .max(100)
    .regex(/^[^\u0000-\u001f\u007f-\u009f]+$/, 'must be one line without control characters'),
});
const pollBody = z.strictObject({ device_code: z.string().max(100) });
const approveBody = z.strictObject({
  actions: z.array(z.enum(actions)).min(1).optional(),
  expires_in_days: z.number().int().min(1).max(366).default(90),
});

/** Logins started per client address: a burst of 10, then one every 30 s. */
export const startRate = { perSecond: 1 / 30, burst: 10 } as const;
/**
 * Polls per client address: a CLI polls every 2 s, so a burst of 30 and one a second lets a few
 * terminals behind one address log in at once, and stops a guesser of device codes (256 bits: not
 * guessable anyway) from costing the database a query per try.
 */
export const pollRate = { perSecond: 1, burst: 30 } as const;

const loginSchema = z.object({
  user_code: z.string(),
  name: z.string(),
  requested_at: z.string(),
  requested_from: z.string(),
  expires_at: z.string(),
  state: z.enum(['pending', 'approved', 'denied', 'collected', 'expired']),
  /** The address this request comes from, to compare with requested_from (a login asked from elsewhere may be a phish). */
  your_address: z.string(),
});

/** The console's link for a user code, at the API's public origin. */
export function verificationUrl(publicUrl: string, userCode: string): string {
  return `${publicUrl}/console/cli-login?code=${encodeURIComponent(userCode)}`;
}

export function cliLoginOperations(s: Deps): Operation[] {
  const startLimiter = new RateLimiter(
    startRate.perSecond,
    startRate.burst,
    Date.now,
    () => 'too many logins started from this address; try again in a minute',
  );
  const pollLimiter = new RateLimiter(pollRate.perSecond, pollRate.burst, Date.now, () => 'too many polls from this address; slow down');
  const request = (r: PublicRequest | undefined): PublicRequest => {
    if (!r) throw new ApiError('internal', 'a CLI login operation was called without its request');
    return r;
  };
  /** The login a user code in the path names; 404 for none (a typed code that is not one included). */
  const named = async (raw: string) => {
    const userCode = normalUserCode(raw);
    const view = userCode ? await s.cliLogins.view(userCode) : undefined;
    if (!userCode || !view) throw notFound(`CLI login ${raw}`);
    return view;
  };
  /**
   * Only a console session decides a login: presented as the console's cookie, and a token of the
   * account itself (made from no other token, offline or online) with no restriction but its
   * expiry, as console sign-in mints them. Any other token, even one put in the cookie by hand,
   * would otherwise mint itself a longer-lived token with more authority here.
   */
  const consoleOnly = (headers: Readonly<Record<string, unknown>>, principal: Principal) => {
    if (headers.authorization !== undefined)
      throw new ApiError('forbidden', 'a CLI login is approved in the console, signed in there: open the link svc login printed');
    if (principal.derived || !principal.asMinted || principal.restrictions.some((r) => r.kind !== 'expires'))
      throw new ApiError(
        'forbidden',
        'a CLI login is approved only by a console session signed in by email, not by a narrowed or derived token',
      );
  };
  return [
    {
      method: 'POST',
      path: '/cli/logins',
      operationId: 'startCliLogin',
      tag: 'account',
      summary: 'Start a `svc login` (body {"name"}): a device code for the CLI, a user code and the console link for the person',
      action: null,
      status: 201,
      response: z.object({
        device_code: z.string(),
        user_code: z.string(),
        verification_url: z.string(),
        expires_in: z.number(),
        interval: z.number(),
      }),
      handler: async (r?: PublicRequest) => {
        const req = request(r);
        const { name } = await req.body(startBody);
        startLimiter.take(`cli-login:${req.ip}`);
        const { deviceCode, userCode } = await s.cliLogins.start(name, req.ip);
        s.log.info({ userCode, from: req.ip }, 'Started a CLI login');
        return {
          status: 201,
          body: {
            device_code: deviceCode,
            user_code: userCode,
            verification_url: verificationUrl(s.config.api.publicUrl, userCode),
            expires_in: loginLifetimeMs / 1000,
            interval: pollIntervalSeconds,
          },
        };
      },
    },
    {
      method: 'POST',
      path: '/cli/logins/token',
      operationId: 'pollCliLogin',
      tag: 'account',
      summary: 'Poll a `svc login` with its device code (body {"device_code"}): 202 while pending, the token once approved, 410 when over',
      action: null,
      status: 200,
      response: z.discriminatedUnion('status', [
        z.object({ status: z.literal('pending') }),
        z.object({ status: z.literal('approved'), token: z.string(), nonce: z.string(), expires_at: z.string(), email: z.string() }),
      ]),
      handler: async (r?: PublicRequest) => {
        const req = request(r);
        const { device_code } = await req.body(pollBody);
        pollLimiter.take(`cli-login-poll:${req.ip}`);
        const poll = await s.cliLogins.poll(device_code);
        if (poll.outcome === 'pending') return { status: 202, body: { status: 'pending' } };
        if (poll.outcome === 'slow_down')
          throw new ApiError('rate_limited', `polled too fast: wait ${pollIntervalSeconds} s between polls, and 5 s more now`);
        if (poll.outcome === 'over') {
          const why = { denied: 'was denied', collected: 'gave its token already', expired: 'expired', unknown: 'is not one of ours' }[
            poll.state as 'denied' | 'collected' | 'expired' | 'unknown'
          ];
          throw new ApiError('gone', `this login ${why ?? 'is over'}; run svc login again`);
        }
        const restrictions: Restriction[] = poll.actions ? [{ kind: 'actions', actions: poll.actions }] : [];
        const expiresAt = new Date(s.clock().getTime() + poll.tokenDays * 86_400_000);
        const { token, record } = await issueWithinQuota(s, poll.accountId, { name: poll.name, restrictions, expiresAt });
        const account = await s.accounts.get(poll.accountId);
        s.log.info({ account: poll.accountId, nonce: record.nonce }, 'A CLI login collected its token');
        return {
          status: 200,
          body: { status: 'approved', token, nonce: record.nonce, expires_at: expiresAt.toISOString(), email: account?.email ?? '' },
        };
      },
    },
    op({
      method: 'GET',
      path: '/cli/logins/{userCode}',
      operationId: 'getCliLogin',
      accountWide: true,
      tag: 'account',
      summary: 'A `svc login` waiting for approval, by its user code: the device, where and when it asked (console session only)',
      action: 'admin',
      response: loginSchema,
      handler: async ({ params, headers, caller, ip }) => {
        consoleOnly(headers, caller.principal);
        const v = await named(params.userCode!);
        return {
          body: {
            your_address: ip,
            user_code: v.userCode,
            name: v.name,
            requested_at: v.createdAt.toISOString(),
            requested_from: v.requestedFrom,
            expires_at: v.expiresAt.toISOString(),
            state: v.state,
          },
        };
      },
    }),
    op({
      method: 'POST',
      path: '/cli/logins/{userCode}/approve',
      operationId: 'approveCliLogin',
      accountWide: true,
      tag: 'account',
      summary:
        'Approve a `svc login` (body {"actions", "expires_in_days"}): the CLI then collects a token of this account (console session only)',
      action: 'admin',
      body: approveBody,
      response: z.object({ status: z.literal('approved') }),
      handler: async ({ params, headers, body, caller, ip }) => {
        consoleOnly(headers, caller.principal);
        const v = await named(params.userCode!);
        // Said now, in the console, rather than to the terminal once it comes for a token it cannot have.
        await assertTokenRoom(s, caller.account.id);
        // consoleOnly left only a caller without action or app restrictions: the chosen actions, or all.
        const ok = await s.cliLogins.decide(v.userCode, {
          approve: true,
          accountId: caller.account.id,
          actions: body.actions ?? null,
          tokenDays: body.expires_in_days,
          approver: { nonce: caller.principal.nonce, from: ip, email: caller.account.email },
        });
        if (!ok)
          throw new ApiError('conflict', `this login is ${v.state === 'pending' ? 'no longer pending' : v.state}; run svc login again`);
        s.log.info(
          { account: caller.account.id, userCode: v.userCode, approvedBy: caller.principal.nonce, from: ip },
          'Approved a CLI login',
        );
        return { body: { status: 'approved' } };
      },
    }),
    op({
      method: 'POST',
      path: '/cli/logins/{userCode}/deny',
      operationId: 'denyCliLogin',
      accountWide: true,
      tag: 'account',
      summary: 'Deny a `svc login`: the CLI is told so and gets nothing (console session only)',
      action: 'admin',
      response: z.object({ status: z.literal('denied') }),
      handler: async ({ params, headers, caller }) => {
        consoleOnly(headers, caller.principal);
        const v = await named(params.userCode!);
        if (!(await s.cliLogins.decide(v.userCode, { approve: false })))
          throw new ApiError('conflict', `this login is ${v.state === 'pending' ? 'no longer pending' : v.state}`);
        return { body: { status: 'denied' } };
      },
    }),
  ];
}
