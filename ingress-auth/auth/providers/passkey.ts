// Passkeys for app users (lib/auth/passkeys.ts, docs/api/passkeys.md): a signed-in app user adds
// one; later it signs that user in on this hostname alone. The relying party is the exact
// hostname, the expected origin the one the browser is on. A user whose address the policy no
// longer admits, or who is disabled, is refused even with a valid passkey.
import type { Knex } from 'knex';
import { becomesAppUser, userRecord } from '../../../lib/auth/identity.js';
import { PasskeyError, PasskeyService } from '../../../lib/auth/passkeys.js';
import { readForm, sendJson } from '../respond.js';
import { sameOrigin, type AuthRequest, type CurrentSession, type ProviderRoute } from '../routes.js';

type SessionOf = () => Promise<CurrentSession | undefined>;
import type { SignIn } from '../sign-in.js';

const statusOf: Record<string, number> = {
  malformed: 400,
  challenge: 400,
  invalid: 400,
  exists: 409,
  'unknown-credential': 403,
  cloned: 403,
  disabled: 403,
};

export function passkeyProvider(db: Knex, clock: () => Date): { routes: Map<string, ProviderRoute> } {
  const passkeys = new PasskeyService(db, clock);

  /** Runs a passkey step: same-origin JSON only; a PasskeyError becomes its 4XX. */
  const step =
    (fn: (r: AuthRequest, signIn: SignIn, body: Record<string, unknown>, session: SessionOf) => Promise<unknown>): ProviderRoute =>
    async (r, signIn, session) => {
      if (!sameOrigin(r)) return sendJson(r.res, 403, { error: 'passkey requests come from the app’s own sign-in page' }, r.requestId);
      if (!(r.req.headers['content-type'] ?? '').toLowerCase().startsWith('application/json'))
        return sendJson(r.res, 415, { error: 'send application/json' }, r.requestId);
      try {
        const out = await fn(r, signIn, await readForm(r.req), session);
        if (!r.res.headersSent) sendJson(r.res, 200, out, r.requestId);
      } catch (err) {
        if (!(err instanceof PasskeyError)) throw err;
        sendJson(r.res, statusOf[err.reason] ?? 400, { error: err.message }, r.requestId);
      }
    };

  const appUserOf = async (session: SessionOf) => {
    const s = await session();
    return s?.session.identity.appUserId ? s.session.identity : undefined;
  };
  const challengeIdOf = (body: Record<string, unknown>) => (typeof body.challengeId === 'string' ? body.challengeId : '');

  const routes = new Map<string, ProviderRoute>([
    [
      'POST passkey/register/options',
      step(async (r, _s, _body, session) => {
        const who = await appUserOf(session);
        if (!who) throw new PasskeyError('invalid', 'sign in as an app user (with an email link) before adding a passkey');
        return passkeys.registrationOptions({
          scope: r.app.metadata.uid!,
          rpId: r.host,
          rpName: r.app.metadata.name!,
          user: { id: who.appUserId!, email: who.email },
        });
      }),
    ],
    [
      'POST passkey/register/verify',
      step(async (r, _s, body, session) => {
        const who = await appUserOf(session);
        if (!who) throw new PasskeyError('invalid', 'sign in as an app user before adding a passkey');
        const { id } = await passkeys.verifyRegistration({
          scope: r.app.metadata.uid!,
          rpId: r.host,
          challengeId: challengeIdOf(body),
          userId: who.appUserId!,
          origin: r.origin,
          response: body.response,
        });
        return { credential_id: id };
      }),
    ],
    ['POST passkey/login/options', step((r) => passkeys.authenticationOptions({ scope: r.app.metadata.uid!, rpId: r.host }))],
    [
      'POST passkey/login/verify',
      step(async (r, signIn, body) => {
        const { ownerId: appUserId } = await passkeys.verifyAuthentication({
          scope: r.app.metadata.uid!,
          rpId: r.host,
          challengeId: challengeIdOf(body),
          origin: r.origin,
          response: body.response,
        });
        const user = await signIn.users.get(r.app.metadata.uid!, appUserId);
        if (!user || user.disabledAt) throw new PasskeyError('disabled', 'this user is disabled on this app');
        if (!becomesAppUser(r.app.spec.auth, user.email))
          throw new PasskeyError('disabled', 'this address may no longer sign in to this app');
        const session = await signIn.establish(r.res, r.app, r.host, {
          provider: 'passkey',
          subject: user.id,
          email: user.email,
          appUserId: user.id,
          ...(user.name ? { name: user.name } : {}),
        });
        if (session === 'disabled') throw new PasskeyError('disabled', 'this user is disabled on this app');
        await signIn.users.signIn(
          { uid: r.app.metadata.uid!, namespace: r.app.metadata.namespace!, name: r.app.metadata.name! },
          user.email,
          'passkey',
        );
        return { user: userRecord(session.identity) };
      }),
    ],
  ]);
  return { routes };
}
