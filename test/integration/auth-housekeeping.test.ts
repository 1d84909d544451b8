// Sign-in data leaves PostgreSQL when its app is deleted (at once through the API's App cache, or
// by the hourly sweep for Apps deleted while no API ran) and once sessions, links and flows have
// ended. Real PostgreSQL; the delete path also through the real API and apiserver.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { AppUserStore } from '../../lib/auth/app-users.js';
import { AuthHousekeeping, keepEndedMs, orphanGraceMs, type AppSource } from '../../lib/auth/housekeeping.js';
import { LinkStore } from '../../lib/auth/links.js';
import { SessionStore } from '../../lib/auth/sessions.js';
import { migrateLatest } from '../../lib/db/migrate.js';
import { createLogger } from '../../lib/logger.js';
import { startTestApi, TestClock, type TestApi } from '../support/api.js';
import { freshDatabase } from '../support/db.js';
import { eventually } from '../support/wait.js';

const tables = ['app_users', 'app_sessions', 'auth_links', 'auth_flows', 'auth_recipients', 'passkey_credentials', 'passkey_challenges'];

describe('sign-in housekeeping (real PostgreSQL)', () => {
  let fresh: Awaited<ReturnType<typeof freshDatabase>>;
  const clock = new TestClock(new Date('2026-06-01T12:00:00Z'));
  before(async () => {
    fresh = await freshDatabase();
    await migrateLatest(fresh.db);
  });
  after(async () => {
    await fresh?.dispose();
  });

  /** An app with one of everything: app user, session, email link, flow, invitation, passkey and challenge. */
  async function populate(uid: string): Promise<void> {
    const db = fresh.db;
    const user = (await new AppUserStore(db, clock.read).signIn({ uid, namespace: 'ns', name: uid }, 'ada@example.test', 'email'))!;
    await new SessionStore(db, clock.read).create(uid, `${uid}.apps.test`, {
      provider: 'email',
      subject: user.id,
      email: 'ada@example.test',
      appUserId: user.id,
    });
    const links = new LinkStore(db, clock.read);
    await links.emailLink(uid, 'ada@example.test', null);
    await links.startFlow(`state-${uid}`, { appUid: uid, host: `${uid}.apps.test`, provider: 'idp', secrets: {}, binding: 'b', next: '/' });
    await db('auth_recipients').insert({ app_uid: uid, email: 'ada@example.test', invited_at: clock.read() });
    await db('passkey_credentials').insert({
      id: `cred-${uid}`,
      app_uid: uid,
      app_user_id: user.id,
      rp_id: `${uid}.apps.test`,
      public_key: Buffer.from('k'),
      created_at: clock.read(),
    });
    await db('passkey_challenges').insert({
      id: `ch-${uid}`,
      app_uid: uid,
      app_user_id: user.id,
      rp_id: `${uid}.apps.test`,
      challenge: 'c',
      purpose: 'register',
      expires_at: new Date(clock.now.getTime() + 600_000),
    });
  }
  const rowsOf = async (uid: string): Promise<Record<string, number>> => {
    const out: Record<string, number> = {};
    for (const t of tables) out[t] = Number((await fresh.db(t).where('app_uid', uid).count<Array<{ n: string }>>({ n: '*' }))[0]!.n);
    return out;
  };
  const none = Object.fromEntries(tables.map((t) => [t, 0]));
  const one = Object.fromEntries(tables.map((t) => [t, 1]));

  it('forgets a deleted app at once, and sweeps the apps deleted while it was not looking, after a grace period', async () => {
    await populate('gone-now');
    await populate('gone-before');
    await populate('kept');
    await populate('brand-new');
    assert.deepEqual(await rowsOf('gone-now'), one);
    let deleted: ((app: { metadata: { uid?: string } }) => void) | undefined;
    const live = new Set(['gone-now', 'kept']);
    const source: AppSource = { liveUids: () => live, onDelete: (fn) => (deleted = fn) };
    const hk = new AuthHousekeeping(fresh.db, source, createLogger('test', 'silent'), clock.read);
    hk.start();
    try {
      live.delete('gone-now');
      deleted!({ metadata: { uid: 'gone-now' } });
      await eventually('the deleted app’s rows to go', async () => JSON.stringify(await rowsOf('gone-now')) === JSON.stringify(none));
      assert.deepEqual(await rowsOf('gone-before'), one, 'not seen deleted: waits for the sweep');

      // Rows younger than the grace period may belong to an App this cache has not seen yet.
      clock.advance(orphanGraceMs - 60_000);
      assert.equal((await hk.sweep()).orphans, 0);
      assert.deepEqual(await rowsOf('brand-new'), one);
      clock.advance(120_000);
      live.add('brand-new');
      const swept = await hk.sweep();
      assert.equal(swept.orphans, tables.length, 'every row of the app deleted before');
      assert.deepEqual(await rowsOf('gone-before'), none);
      // Of live apps only the flows and challenges went: they expired (10 minutes).
      const liveRows = { ...one, auth_flows: 0, passkey_challenges: 0 };
      assert.deepEqual(await rowsOf('kept'), liveRows);
      assert.deepEqual(await rowsOf('brand-new'), liveRows);
    } finally {
      await hk.stop();
    }
  });

  it('deletes sessions and links a month after they ended, and flows and challenges once expired, nothing live', async () => {
    await populate('aging');
    const source: AppSource = { liveUids: () => new Set(['aging', 'kept', 'brand-new']), onDelete: () => undefined };
    const hk = new AuthHousekeeping(fresh.db, source, createLogger('test', 'silent'), clock.read);
    await new LinkStore(fresh.db, clock.read).revokeEmail('aging', 'ada@example.test');
    clock.advance(11 * 60_000); // flows and challenges (10 minutes) expired; the session is live
    let swept = await hk.sweep();
    assert.deepEqual({ ...(await rowsOf('aging')) }, { ...one, auth_flows: 0, passkey_challenges: 0 });
    assert.equal(swept.orphans, 0);
    clock.advance(keepEndedMs); // the revoked link a month on; the 30-day session just past its end, not a month past
    swept = await hk.sweep();
    assert.equal(swept.ended.auth_links, 1);
    assert.equal((await rowsOf('aging')).app_sessions, 1);
    clock.advance(keepEndedMs);
    swept = await hk.sweep();
    assert.equal(swept.ended.app_sessions, 3, 'aging, kept and brand-new ended a month ago');
    assert.deepEqual(
      await rowsOf('aging'),
      { ...none, app_users: 1, auth_recipients: 1, passkey_credentials: 1 },
      'users, invitations and passkeys stay while the app does',
    );
  });
});

describe('sign-in data of an app deleted through the API (real apiserver)', () => {
  let api: TestApi;
  before(async () => {
    api = await startTestApi();
  });
  after(async () => {
    await api?.close();
  });

  it('goes with the app', async () => {
    const res = await api.request('POST', '/api/apps', { body: { name: 'short-lived' } });
    assert.equal(res.status, 201);
    const { id } = (await res.json()) as { id: string };
    const user = (await api.deps.auth.users.signIn(
      { uid: id, namespace: api.account.namespace, name: 'short-lived' },
      'ada@example.test',
      'email',
    ))!;
    await api.deps.auth.sessions.create(id, 'short-lived.apps.test', {
      provider: 'email',
      subject: user.id,
      email: 'ada@example.test',
      appUserId: user.id,
    });
    assert.equal((await api.request('DELETE', '/api/apps/short-lived')).status, 204);
    await eventually('its app users and sessions to go', async () => {
      const left = await api
        .db('app_users')
        .where('app_uid', id)
        .union((q) => {
          q.select('app_uid').from('app_sessions').where('app_uid', id);
        })
        .select('app_uid');
      return left.length === 0;
    });
  });
});
