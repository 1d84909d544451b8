import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { AppUserStore, type AppRef, type AppUser } from '../../lib/auth/app-users.js';
import { challengeLifetimeMs, PasskeyError, PasskeyService, type PasskeyFailure } from '../../lib/auth/passkeys.js';
import { SessionStore } from '../../lib/auth/sessions.js';
import { migrateLatest } from '../../lib/db/migrate.js';
import { freshDatabase } from '../support/db.js';
import { SoftwareAuthenticator } from '../support/webauthn-authenticator.js';

// Two apps, each its own relying party: the RP ID is the hostname, the origin carries the port.
const appA = {
  ref: { uid: 'uid-hello', namespace: 'acct-1', name: 'hello' },
  rpId: 'hello.apps.localhost',
  origin: 'http://hello.apps.localhost:8081',
};
const appB = {
  ref: { uid: 'uid-shop', namespace: 'acct-1', name: 'shop' },
  rpId: 'shop.apps.localhost',
  origin: 'http://shop.apps.localhost:8081',
};
type TestApp = typeof appA;

const refusedFor = (reason: PasskeyFailure) => (err: unknown) => {
  assert.ok(err instanceof PasskeyError, `expected a PasskeyError, got ${String(err)}`);
  assert.equal(err.reason, reason, err.message);
  return true;
};

describe('passkeys of app users (real PostgreSQL, software authenticator)', () => {
  let fresh: Awaited<ReturnType<typeof freshDatabase>>;
  let now = Date.parse('2030-01-01T00:00:00Z');
  const clock = () => new Date(now);
  let passkeys: PasskeyService;
  let users: AppUserStore;
  let n = 0;

  before(async () => {
    fresh = await freshDatabase();
    await migrateLatest(fresh.db);
    passkeys = new PasskeyService(fresh.db, clock);
    users = new AppUserStore(fresh.db, clock);
  });
  after(async () => {
    await fresh?.dispose();
  });
  beforeEach(() => {
    now += 3600_000;
  });

  async function newUser(app: AppRef = appA.ref): Promise<AppUser> {
    const user = await users.signIn(app, `person${++n}@example.test`, 'email');
    assert.ok(user);
    return user;
  }

  /** The register ceremony as ingress-auth runs it for a signed-in app user. */
  async function register(app: TestApp, user: AppUser, authenticator: SoftwareAuthenticator): Promise<string> {
    const { challengeId, options } = await passkeys.registrationOptions({
      scope: app.ref.uid,
      rpId: app.rpId,
      rpName: app.ref.name,
      user: { id: user.id, email: user.email },
    });
    const response = authenticator.create(options, app.origin);
    const { id } = await passkeys.verifyRegistration({
      scope: app.ref.uid,
      challengeId,
      userId: user.id,
      origin: app.origin,
      rpId: app.rpId,
      response,
    });
    return id;
  }

  async function signInOptions(app: TestApp) {
    return passkeys.authenticationOptions({ scope: app.ref.uid, rpId: app.rpId });
  }

  async function signIn(app: TestApp, authenticator: SoftwareAuthenticator) {
    const { challengeId, options } = await signInOptions(app);
    return passkeys.verifyAuthentication({
      scope: app.ref.uid,
      challengeId,
      origin: app.origin,
      rpId: app.rpId,
      response: authenticator.get(options, app.origin),
    });
  }

  it('registers a passkey, then signs in with it as the same app user and advances the counter', async () => {
    const user = await newUser();
    const other = await newUser();
    const authenticator = new SoftwareAuthenticator();
    await register(appA, other, new SoftwareAuthenticator());

    const { challengeId, options } = await passkeys.registrationOptions({
      scope: appA.ref.uid,
      rpId: appA.rpId,
      rpName: 'hello',
      user: { id: user.id, email: user.email },
    });
    assert.equal(options.rp.id, appA.rpId);
    assert.equal(options.user.name, user.email);
    assert.equal(options.attestation, 'none');
    assert.deepEqual(options.authenticatorSelection, {
      residentKey: 'preferred',
      userVerification: 'preferred',
      requireResidentKey: false,
    });
    assert.deepEqual(options.excludeCredentials, []);
    const { id: credentialId } = await passkeys.verifyRegistration({
      scope: appA.ref.uid,
      challengeId,
      userId: user.id,
      origin: appA.origin,
      rpId: appA.rpId,
      response: authenticator.create(options, appA.origin),
    });

    const [stored] = await passkeys.list(appA.ref.uid, user.id);
    assert.deepEqual(stored, { id: credentialId, rpId: appA.rpId, transports: ['internal'], createdAt: new Date(now), lastUsedAt: null });

    now += 60_000;
    const login = await signInOptions(appA);
    assert.equal(login.options.rpId, appA.rpId);
    assert.deepEqual(login.options.allowCredentials, [], 'discoverable credentials: nobody is named before the passkey answers');
    assert.deepEqual(
      await passkeys.verifyAuthentication({
        scope: appA.ref.uid,
        challengeId: login.challengeId,
        origin: appA.origin,
        rpId: appA.rpId,
        response: authenticator.get(login.options, appA.origin),
      }),
      { ownerId: user.id, credentialId },
    );
    assert.equal((await passkeys.list(appA.ref.uid, user.id))[0]?.lastUsedAt?.getTime(), now);
    const row = await fresh
      .db('passkey_credentials')
      .where({ id: credentialId })
      .first<{ counter: string; app_uid: string }>('counter', 'app_uid');
    assert.deepEqual(row, { counter: '1', app_uid: appA.ref.uid });
    assert.deepEqual(await signIn(appA, authenticator), { ownerId: user.id, credentialId });
  });

  it('refuses a response made on another origin, for registration and for sign-in', async () => {
    const user = await newUser();
    const authenticator = new SoftwareAuthenticator();
    const reg = await passkeys.registrationOptions({
      scope: appA.ref.uid,
      rpId: appA.rpId,
      rpName: 'hello',
      user: { id: user.id, email: user.email },
    });
    await assert.rejects(
      passkeys.verifyRegistration({
        scope: appA.ref.uid,
        challengeId: reg.challengeId,
        userId: user.id,
        origin: appA.origin,
        rpId: appA.rpId,
        response: authenticator.create(reg.options, 'http://evil.apps.localhost:8081'),
      }),
      refusedFor('invalid'),
    );
    const good = new SoftwareAuthenticator();
    await register(appA, user, good);
    // Same hostname, another scheme and port: another origin too.
    const login = await signInOptions(appA);
    await assert.rejects(
      passkeys.verifyAuthentication({
        scope: appA.ref.uid,
        challengeId: login.challengeId,
        origin: appA.origin,
        rpId: appA.rpId,
        response: good.get(login.options, 'https://hello.apps.localhost'),
      }),
      refusedFor('invalid'),
    );
    assert.equal((await passkeys.list(appA.ref.uid, user.id)).length, 1, 'only the passkey made on the right origin is stored');
  });

  it("refuses a response signed for another app's RP ID", async () => {
    const user = await newUser();
    const authenticator = new SoftwareAuthenticator();
    const reg = await passkeys.registrationOptions({
      scope: appA.ref.uid,
      rpId: appA.rpId,
      rpName: 'hello',
      user: { id: user.id, email: user.email },
    });
    await assert.rejects(
      passkeys.verifyRegistration({
        scope: appA.ref.uid,
        challengeId: reg.challengeId,
        userId: user.id,
        origin: appA.origin,
        rpId: appA.rpId,
        response: authenticator.create(reg.options, appA.origin, { rpId: appB.rpId }),
      }),
      refusedFor('invalid'),
    );
    const credentialId = await register(appA, user, authenticator);
    const login = await signInOptions(appA);
    await assert.rejects(
      passkeys.verifyAuthentication({
        scope: appA.ref.uid,
        challengeId: login.challengeId,
        origin: appA.origin,
        rpId: appA.rpId,
        response: authenticator.get(login.options, appA.origin, { rpId: appB.rpId, credentialId }),
      }),
      refusedFor('invalid'),
    );
    // A challenge issued on one app is nothing on another, even from the same ingress-auth.
    const onA = await signInOptions(appA);
    await assert.rejects(
      passkeys.verifyAuthentication({
        scope: appB.ref.uid,
        challengeId: onA.challengeId,
        origin: appB.origin,
        rpId: appB.rpId,
        response: authenticator.get(onA.options, appB.origin, { rpId: appB.rpId, credentialId }),
      }),
      refusedFor('challenge'),
    );
    // ... and it was not used up by the attempt: it still works on its own app.
    assert.equal(
      (
        await passkeys.verifyAuthentication({
          scope: appA.ref.uid,
          challengeId: onA.challengeId,
          origin: appA.origin,
          rpId: appA.rpId,
          response: authenticator.get(onA.options, appA.origin),
        })
      ).credentialId,
      credentialId,
    );
  });

  it('does not accept a passkey of app A on app B', async () => {
    const user = await newUser(appA.ref);
    const authenticator = new SoftwareAuthenticator();
    const credentialId = await register(appA, user, authenticator);
    const onB = await signInOptions(appB);
    // An honest authenticator has nothing for B's hostname.
    assert.throws(() => authenticator.get(onB.options, appB.origin), /NotAllowedError/);
    // A forged client presenting A's credential on B, signing for B's RP ID, finds no passkey.
    await assert.rejects(
      passkeys.verifyAuthentication({
        scope: appB.ref.uid,
        challengeId: onB.challengeId,
        origin: appB.origin,
        rpId: appB.rpId,
        response: authenticator.get(onB.options, appB.origin, { rpId: appB.rpId, credentialId }),
      }),
      refusedFor('unknown-credential'),
    );
    // The same person registering on B gets a separate passkey for B.
    const userOnB = await users.signIn(appB.ref, user.email, 'email');
    assert.ok(userOnB);
    const onBId = await register(appB, userOnB, authenticator);
    assert.notEqual(onBId, credentialId);
    assert.deepEqual(await signIn(appB, authenticator), { ownerId: userOnB.id, credentialId: onBId });
    assert.deepEqual(await signIn(appA, authenticator), { ownerId: user.id, credentialId });
  });

  it('uses a challenge once: a replayed assertion, a second response and a retried registration are refused', async () => {
    const user = await newUser();
    const authenticator = new SoftwareAuthenticator();
    const reg = await passkeys.registrationOptions({
      scope: appA.ref.uid,
      rpId: appA.rpId,
      rpName: 'hello',
      user: { id: user.id, email: user.email },
    });
    const created = authenticator.create(reg.options, appA.origin);
    const { id: credentialId } = await passkeys.verifyRegistration({
      scope: appA.ref.uid,
      challengeId: reg.challengeId,
      userId: user.id,
      origin: appA.origin,
      rpId: appA.rpId,
      response: created,
    });
    await assert.rejects(
      passkeys.verifyRegistration({
        scope: appA.ref.uid,
        challengeId: reg.challengeId,
        userId: user.id,
        origin: appA.origin,
        rpId: appA.rpId,
        response: created,
      }),
      refusedFor('challenge'),
    );

    const login = await signInOptions(appA);
    const assertion = authenticator.get(login.options, appA.origin);
    const verify = (response: unknown, challengeId = login.challengeId) =>
      passkeys.verifyAuthentication({ scope: appA.ref.uid, challengeId, origin: appA.origin, rpId: appA.rpId, response });
    assert.equal((await verify(assertion)).credentialId, credentialId);
    await assert.rejects(verify(assertion), refusedFor('challenge'));
    await assert.rejects(verify(authenticator.get(login.options, appA.origin)), refusedFor('challenge'));
    // The old assertion on a new challenge: the signed challenge is the old one.
    const again = await signInOptions(appA);
    await assert.rejects(verify(assertion, again.challengeId), refusedFor('invalid'));
    // That failure used the new challenge up as well.
    await assert.rejects(verify(authenticator.get(again.options, appA.origin), again.challengeId), refusedFor('challenge'));
  });

  it('refuses an expired challenge and a registration challenge issued to someone else; sweeps expired ones', async () => {
    const user = await newUser();
    const intruder = await newUser();
    const authenticator = new SoftwareAuthenticator();
    const reg = await passkeys.registrationOptions({
      scope: appA.ref.uid,
      rpId: appA.rpId,
      rpName: 'hello',
      user: { id: user.id, email: user.email },
    });
    await assert.rejects(
      passkeys.verifyRegistration({
        scope: appA.ref.uid,
        challengeId: reg.challengeId,
        userId: intruder.id,
        origin: appA.origin,
        rpId: appA.rpId,
        response: authenticator.create(reg.options, appA.origin),
      }),
      refusedFor('challenge'),
    );
    await register(appA, user, authenticator);

    const late = await signInOptions(appA);
    const inTime = await signInOptions(appA);
    now += challengeLifetimeMs - 1;
    assert.equal(
      (
        await passkeys.verifyAuthentication({
          scope: appA.ref.uid,
          challengeId: inTime.challengeId,
          origin: appA.origin,
          rpId: appA.rpId,
          response: authenticator.get(inTime.options, appA.origin),
        })
      ).ownerId,
      user.id,
    );
    now += 1;
    await assert.rejects(
      passkeys.verifyAuthentication({
        scope: appA.ref.uid,
        challengeId: late.challengeId,
        origin: appA.origin,
        rpId: appA.rpId,
        response: authenticator.get(late.options, appA.origin),
      }),
      refusedFor('challenge'),
    );

    const stale = await signInOptions(appA);
    now += challengeLifetimeMs;
    const current = await signInOptions(appA);
    const ids = (await fresh.db('passkey_challenges').select<Array<{ id: string }>>('id')).map((r) => r.id);
    assert.ok(!ids.includes(stale.challengeId), 'issuing a challenge sweeps expired ones');
    assert.ok(ids.includes(current.challengeId));
  });

  it('refuses a counter that does not go forward (a restored or cloned authenticator); accepts authenticators without a counter', async () => {
    const user = await newUser();
    const authenticator = new SoftwareAuthenticator();
    const credentialId = await register(appA, user, authenticator);
    await signIn(appA, authenticator);
    await signIn(appA, authenticator);
    assert.equal(authenticator.counter(credentialId), 2);

    const copy = authenticator.clone();
    assert.equal((await signIn(appA, authenticator)).ownerId, user.id);
    await assert.rejects(signIn(appA, copy), refusedFor('cloned'), 'the copy signs with counter 3 again');
    authenticator.setCounter(credentialId, 1);
    await assert.rejects(signIn(appA, authenticator), refusedFor('cloned'));
    const row = await fresh.db('passkey_credentials').where({ id: credentialId }).first<{ counter: string }>('counter');
    assert.equal(row.counter, '3', 'a refused sign-in does not move the stored counter');
    authenticator.setCounter(credentialId, 10);
    assert.equal((await signIn(appA, authenticator)).credentialId, credentialId);

    const synced = new SoftwareAuthenticator({ counter: false, userVerification: false });
    const syncedId = await register(appA, user, synced);
    for (let i = 0; i < 3; i++) assert.equal((await signIn(appA, synced)).credentialId, syncedId);
  });

  it("lists the user's existing passkeys in excludeCredentials, and only this user's on this hostname", async () => {
    const user = await newUser();
    const neighbour = await newUser();
    const first = new SoftwareAuthenticator();
    const second = new SoftwareAuthenticator();
    const a = await register(appA, user, first);
    now += 1000;
    const b = await register(appA, user, second);
    await register(appA, neighbour, new SoftwareAuthenticator());

    const { options, challengeId } = await passkeys.registrationOptions({
      scope: appA.ref.uid,
      rpId: appA.rpId,
      rpName: 'hello',
      user: { id: user.id, email: user.email },
    });
    assert.deepEqual(options.excludeCredentials, [
      { id: a, type: 'public-key', transports: ['internal'] },
      { id: b, type: 'public-key', transports: ['internal'] },
    ]);
    assert.throws(() => first.create(options, appA.origin), /InvalidStateError/);
    // Should a client ignore the list and present a registered credential again, it is not stored twice.
    await assert.rejects(
      passkeys.verifyRegistration({
        scope: appA.ref.uid,
        challengeId,
        userId: user.id,
        origin: appA.origin,
        rpId: appA.rpId,
        response: first.create(options, appA.origin, { credentialId: a }),
      }),
      refusedFor('exists'),
    );
    assert.deepEqual(
      (await passkeys.list(appA.ref.uid, user.id)).map((p) => p.id),
      [a, b],
    );
  });

  it('refuses an assertion whose user handle names another app user than the passkey belongs to', async () => {
    const user = await newUser();
    const other = await newUser();
    const authenticator = new SoftwareAuthenticator();
    await register(appA, user, authenticator);
    const login = await signInOptions(appA);
    const response = authenticator.get(login.options, appA.origin, { userHandle: Buffer.from(other.id).toString('base64url') });
    await assert.rejects(
      passkeys.verifyAuthentication({
        scope: appA.ref.uid,
        challengeId: login.challengeId,
        origin: appA.origin,
        rpId: appA.rpId,
        response,
      }),
      refusedFor('invalid'),
    );
    // The handle a browser returns by default is the owner's id, which the first test signs in with.
    assert.equal((await signIn(appA, authenticator)).ownerId, user.id);
  });

  it('refuses malformed browser input before touching the challenge', async () => {
    const user = await newUser();
    const authenticator = new SoftwareAuthenticator();
    await register(appA, user, authenticator);
    const login = await signInOptions(appA);
    const good = authenticator.get(login.options, appA.origin);
    const verify = (response: unknown) =>
      passkeys.verifyAuthentication({
        scope: appA.ref.uid,
        challengeId: login.challengeId,
        origin: appA.origin,
        rpId: appA.rpId,
        response,
      });
    for (const bad of [
      null,
      'x',
      {},
      { ...good, type: 'password' },
      { ...good, rawId: 'AAAA' },
      { ...good, response: { ...good.response, signature: 'not base64url!' } },
      { ...good, id: 'A'.repeat(5000), rawId: 'A'.repeat(5000) },
    ]) {
      await assert.rejects(verify(bad), refusedFor('malformed'));
    }
    assert.equal((await verify(good)).ownerId, user.id);
  });

  it("refuses a disabled user's passkey, and forgets the passkeys of a removed user", async () => {
    const user = await newUser();
    const authenticator = new SoftwareAuthenticator();
    const credentialId = await register(appA, user, authenticator);
    await users.disable(appA.ref.uid, user.id, new SessionStore(fresh.db, clock));
    await assert.rejects(signIn(appA, authenticator), refusedFor('disabled'));
    await users.enable(appA.ref.uid, user.id);
    assert.equal((await signIn(appA, authenticator)).credentialId, credentialId);

    assert.equal(await passkeys.deleteForUser(appA.ref.uid, user.id), 1);
    assert.deepEqual(await passkeys.list(appA.ref.uid, user.id), []);
    await assert.rejects(signIn(appA, authenticator), refusedFor('unknown-credential'));

    // Deleting the app user row itself takes its passkeys along.
    const other = await newUser();
    await register(appA, other, new SoftwareAuthenticator());
    await fresh.db('app_users').where({ id: other.id }).del();
    assert.equal(
      Number((await fresh.db('passkey_credentials').where({ app_user_id: other.id }).count<Array<{ n: string }>>({ n: '*' }))[0]?.n),
      0,
    );
  });
});
