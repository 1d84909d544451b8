// What ingress-auth keeps between requests so a keep-alive request costs less (bench/https), checked
// to answer exactly as the work it saves would: the Cookie header's last reading, the platform path's
// shortcut, the recorder's last app-minute, the identity headers' last entry, one store read
// shared by a visitor's simultaneous lookups (but never across a revocation), and what a Host means.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Knex } from 'knex';
import { readCookie, withoutPlatformCookies } from '../../ingress-auth/auth/cookies.js';
import { SignIn } from '../../ingress-auth/auth/sign-in.js';
import { appOfHost, hostnameOf } from '../../ingress-auth/host.js';
import { platformPath } from '../../ingress-auth/target.js';
import type { Session } from '../../lib/auth/sessions.js';
import { loadConfig } from '../../lib/config.js';
import type { Db } from '../../lib/db/connection.js';
import { createLogger } from '../../lib/logger.js';
import { RequestRecorder } from '../../lib/metrics/requests.js';
import type { App } from '../../lib/resources/index.js';

describe('ingress-auth hot path: cookies read once per header', () => {
  it('answers for each header and name, however they alternate', () => {
    const a = 'theme=dark; svc-session=AAA; svc-flow=F1';
    const b = 'svc-session=BBB';
    for (let i = 0; i < 3; i++) {
      assert.equal(readCookie(a, 'svc-session'), 'AAA');
      assert.equal(readCookie(a, 'svc-flow'), 'F1');
      assert.equal(readCookie(b, 'svc-session'), 'BBB');
      assert.equal(readCookie(b, 'svc-flow'), undefined);
      assert.equal(readCookie(['x=1', b], 'svc-session'), 'BBB');
      assert.equal(withoutPlatformCookies(a), 'theme=dark');
      assert.equal(withoutPlatformCookies(b), undefined);
      assert.equal(withoutPlatformCookies('theme=light; __Host-svc-session=x'), 'theme=light');
    }
  });
});

/** platformPath as it was before its shortcut: the reference the shortcut must agree with. */
function fullPlatformPath(url: string): string | undefined {
  const q = url.indexOf('?');
  let p = q === -1 ? url : url.slice(0, q);
  if (p.includes('%')) {
    try {
      p = decodeURIComponent(p);
    } catch {
      // Left as it is.
    }
  }
  p = p.replace(/\/{2,}/g, '/').toLowerCase();
  return p === '/_svc' || p.startsWith('/_svc/') ? p : undefined;
}

describe('ingress-auth hot path: the platform path shortcut', () => {
  it('agrees with the full reading on every short path of the characters that matter', () => {
    const alphabet = ['/', '_', '%', '5', 'f', 'F', 's', 'S', 'v', 'V', 'c', '?', 'x', '2'];
    let n = 0;
    const walk = (prefix: string, depth: number) => {
      assert.equal(platformPath(prefix), fullPlatformPath(prefix), JSON.stringify(prefix));
      n++;
      if (depth === 0) return;
      for (const c of alphabet) walk(prefix + c, depth - 1);
    };
    walk('', 5);
    for (const p of ['/_svc', '/%5Fsvc/x', '//_svc', '/%2F_svc/', '/_SVC', 'x/_svc', '/a/_svc']) {
      assert.equal(platformPath(p), fullPlatformPath(p), p);
    }
    assert.ok(n > 500_000);
  });
});

describe('ingress-auth hot path: the recorder', () => {
  /** A database that keeps what a flush upserts. */
  const fakeDb = (rows: Array<Record<string, unknown>>) => {
    const table = () => ({
      insert: (r: Array<Record<string, unknown>>) => {
        rows.push(...r);
        return { onConflict: () => ({ merge: async () => undefined }) };
      },
      where: () => ({ delete: async () => 0 }),
    });
    return Object.assign(table, {
      raw: () => ({}),
      transaction: async (f: (trx: unknown) => Promise<void>) => f(Object.assign(table, { raw: () => ({}) })),
    }) as unknown as Db;
  };

  it('counts into the right app-minute across minutes, apps, flushes and dropped minutes', async () => {
    const rows: Array<Record<string, unknown>> = [];
    let now = 60_000 * 100;
    const rec = new RequestRecorder(fakeDb(rows), { clock: () => new Date(now), maxPending: 2 });
    const sample = (appUid: string) => ({ namespace: 'ns', app: appUid, appUid, status: 200, durationMs: 1 });
    rec.record(sample('a'));
    rec.record(sample('a'));
    rec.record(sample('b'));
    rec.record(sample('a'));
    await rec.flush();
    const sum = (uid: string, minute: number) =>
      rows.filter((r) => r.app_uid === uid && (r.minute as Date).getTime() === minute).reduce((s, r) => s + (r.requests as number), 0);
    assert.equal(sum('a', now), 3);
    assert.equal(sum('b', now), 1);
    // After a flush the minute just written is not pending any more: a new one takes the next request.
    rec.record(sample('a'));
    assert.equal(rec.pendingMinutes, 1);
    now += 60_000;
    rec.record(sample('a'));
    assert.equal(rec.pendingMinutes, 2);
    // A third minute drops the oldest (maxPending 2); the recorder then counts into what is pending.
    now += 60_000;
    rec.record(sample('a'));
    rec.record(sample('a'));
    assert.equal(rec.pendingMinutes, 2);
    rows.length = 0;
    await rec.flush();
    assert.equal(sum('a', now), 2);
    assert.equal(sum('a', now - 60_000), 1);
    assert.equal(sum('a', now - 120_000), 0);
  });
});

describe('ingress-auth hot path: sessions and identity headers', () => {
  const config = loadConfig({ SVC_LOG_LEVEL: 'silent' }, { exists: () => false });
  const log = createLogger('ingress-auth', 'silent');
  const app = { metadata: { uid: 'uid-1', name: 'shop', namespace: 'ns' } } as App;
  const session: Session = {
    id: 'sid',
    appUid: 'uid-1',
    host: 'shop.apps.localhost',
    kind: 'workforce',
    identity: { provider: 'svc', subject: 'acct', email: 'o@x.test', facts: { namespace: 'ns' } },
    createdAt: new Date(),
    lastSeenAt: new Date(),
    expiresAt: new Date(Date.now() + 3600_000),
  };
  const token = 'T'.repeat(43);

  it('shares one store read between simultaneous lookups, but never across a revocation', async () => {
    let signed = 0;
    const signIn = new SignIn({
      db: {} as Knex,
      config,
      log,
      signer: { sign: async () => `jwt-${++signed}` },
      assertionLifetimeSeconds: 300,
    });
    const reads: Array<(s: Session | undefined) => void> = [];
    signIn.sessions.find = () => new Promise((resolve) => reads.push(resolve));
    const first = [1, 2, 3].map(() => signIn.session(token, app, 'shop.apps.localhost'));
    assert.equal(reads.length, 1);
    // A revocation heard now: a lookup from here on reads for itself, and the read under way reads again.
    (signIn as unknown as { forgetApp(uid: string): void }).forgetApp('uid-1');
    const later = signIn.session(token, app, 'shop.apps.localhost');
    assert.equal(reads.length, 2);
    reads[0]!(session);
    await new Promise((r) => setImmediate(r));
    assert.equal(reads.length, 3, 'the read a revocation overtook is done again');
    reads[1]!(undefined);
    reads[2]!(undefined);
    assert.deepEqual(await Promise.all(first), [undefined, undefined, undefined]);
    assert.equal(await later, undefined);
    assert.equal(signIn.cachedSession(token, app, 'shop.apps.localhost'), null);

    // Identity headers: the last entry of a session answers as the map would, per host.
    const h1 = await signIn.identityHeaders(session, 'shop.apps.localhost', app);
    assert.equal(signIn.cachedIdentityHeaders(session, 'shop.apps.localhost', app), h1);
    const h2 = await signIn.identityHeaders(session, 'other.example', app);
    assert.notEqual(h1, h2);
    assert.equal(signIn.cachedIdentityHeaders(session, 'shop.apps.localhost', app), h1);
    assert.equal(signIn.cachedIdentityHeaders(session, 'other.example', app), h2);
    assert.equal(signIn.cachedIdentityHeaders({ ...session }, 'other.example', app), h2);
    assert.equal(signIn.cachedIdentityHeaders(session, 'shop.apps.localhost', { metadata: { uid: 'uid-2' } } as App), undefined);
    assert.equal(signed, 2);

    // Identity values are checked once, where they are made (the upstream client then skips them):
    // a provider's subject with a line break is refused, never cached or sent.
    const crooked: Session = { ...session, id: 'sid-2', identity: { ...session.identity, subject: 'eve\r\nX-Svc-Auth-Owner: true' } };
    await assert.rejects(signIn.identityHeaders(crooked, 'shop.apps.localhost', app), /x-svc-auth-subject cannot be sent/i);
    assert.equal(signIn.cachedIdentityHeaders(crooked, 'shop.apps.localhost', app), undefined);
  });
});

describe('ingress-auth hot path: a Host value read once', () => {
  it('answers as parsing each time would, for every spelling, and keeps no value longer than a hostname', () => {
    const spellings = [
      'Shop.Apps.Localhost:8081',
      'shop.apps.localhost.',
      ' shop.apps.localhost ',
      '[::1]:80',
      'shop.apps.localhost:x',
      'x.example',
      '',
    ];
    const expected = [
      ['shop.apps.localhost', 'shop'],
      ['shop.apps.localhost', 'shop'],
      ['shop.apps.localhost', 'shop'],
      [undefined, undefined],
      [undefined, undefined],
      ['x.example', undefined],
      [undefined, undefined],
    ];
    for (let round = 0; round < 3; round++)
      spellings.forEach((h, i) =>
        assert.deepEqual([hostnameOf(h), appOfHost(h, 'apps.localhost')], expected[i], `${JSON.stringify(h)}, round ${round}`),
      );
    // Another apps domain is its own memo: the same Host names no app there.
    assert.equal(appOfHost('shop.apps.localhost', 'apps.example'), undefined);
    const long = `${'a'.repeat(300)}.apps.localhost`;
    assert.equal(hostnameOf(long), long);
    assert.equal(appOfHost(long, 'apps.localhost'), undefined, 'not a DNS label');
  });
});
