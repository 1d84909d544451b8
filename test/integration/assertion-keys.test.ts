import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { migrateLatest } from '../../lib/db/migrate.js';
import { AssertionSigner, verifyAssertion } from '../../lib/identity/assertion.js';
import { AssertionKeyStore, type AssertionKeyOptions } from '../../lib/identity/assertion-keys.js';
import { freshDatabase } from '../support/db.js';

const issuer = 'http://apps.localhost:8081/_svc/auth';
const identity = { sub: 'usr_1', email: 'ada@example.test', provider: 'email' };
const host = 'myapp.apps.localhost';
const min = 60_000;
const hour = 60 * min;

describe('assertion keys in PostgreSQL: rotation and replicas', () => {
  let fresh: Awaited<ReturnType<typeof freshDatabase>>;
  let now = new Date('2030-01-01T00:00:00Z').getTime();
  const clock = () => new Date(now);
  // Rotation every 24 h, published 15 min ahead, assertions live 5 min, 1 min of skew.
  const opts: AssertionKeyOptions = {
    rotationMs: 24 * hour,
    maxAssertionLifetimeMs: 5 * min,
    publishLeadMs: 15 * min,
    refreshMs: 30_000,
    skewMs: min,
    clock,
  };
  const kids = (set: { keys: Array<{ kid?: string }> }) => set.keys.map((k) => k.kid!);

  before(async () => {
    fresh = await freshDatabase();
    await migrateLatest(fresh.db);
  });
  after(async () => {
    await fresh?.dispose();
  });

  it('two stores on one database create one first key and agree on it', async () => {
    const a = new AssertionKeyStore(fresh.db, opts);
    const b = new AssertionKeyStore(fresh.db, opts);
    const [ka, kb] = await Promise.all([a.signingKey(), b.signingKey()]);
    assert.equal(ka.kid, kb.kid);
    assert.equal(
      await fresh
        .db('assertion_keys')
        .count({ n: '*' })
        .first()
        .then((r) => Number(r?.n)),
      1,
    );
    assert.deepEqual(kids(await a.jwks()), [ka.kid]);
    // Only public material is published.
    const [jwk] = (await b.jwks()).keys;
    assert.deepEqual(Object.keys(jwk!).sort(), ['alg', 'crv', 'kid', 'kty', 'use', 'x']);
  });

  it('rotate: the next key is published before it signs, the old one stays until retired + lifetime, then is gone', async () => {
    const a = new AssertionKeyStore(fresh.db, opts);
    const b = new AssertionKeyStore(fresh.db, opts);
    const signerA = new AssertionSigner(a, { issuer, lifetimeSeconds: 300, clock });
    const first = await a.signingKey();
    const oldToken = await signerA.sign(identity, host);

    // Before the rotation is due nothing changes.
    now += 23 * hour;
    assert.equal((await a.signingKey()).kid, first.kid);
    assert.deepEqual(kids(await b.jwks()), [first.kid]);

    // 15 minutes before the 24 hours: a next key is created and published, the first still signs.
    now += 45 * min + 1;
    assert.equal((await a.signingKey()).kid, first.kid);
    const published = kids(await b.jwks());
    assert.equal(published.length, 2);
    const next = published.find((k) => k !== first.kid)!;
    assert.equal((await b.signingKey()).kid, first.kid);

    // The last second of the first key: a token it signs now must verify for its whole life.
    now += 15 * min - 1001;
    assert.equal((await a.signingKey()).kid, first.kid);
    const lastOld = await signerA.sign(identity, host);
    // At 24 hours the next key signs, on both replicas (b re-reads after refreshMs at the latest).
    now += 1001;
    assert.equal((await a.signingKey()).kid, next);
    assert.equal((await b.signingKey()).kid, next);
    const newToken = await signerA.sign(identity, host);
    const retiredAt = now;

    // The old key stays published for the lifetime plus skew: a token it signed just before
    // retirement verifies for its whole life.
    now = retiredAt + 4 * min;
    const jwks = await b.jwks();
    assert.deepEqual(kids(jwks).sort(), [first.kid, next].sort());
    await verifyAssertion(lastOld, jwks, { audience: host, issuer, now: new Date(now), clockToleranceSeconds: 0 });
    await verifyAssertion(newToken, jwks, { audience: host, issuer, now: new Date(now) });
    now = retiredAt + 5 * min + min - 1000;
    assert.deepEqual(kids(await b.jwks()).sort(), [first.kid, next].sort());

    // Then it is gone from the JWKS (and from the table), and its tokens no longer verify.
    now = retiredAt + 5 * min + min + 31_000;
    const later = await b.jwks();
    assert.deepEqual(kids(later), [next]);
    await assert.rejects(verifyAssertion(oldToken, later, { audience: host, issuer, now: new Date(now) }));
    await verifyAssertion(await signerA.sign(identity, host), later, { audience: host, issuer, now: new Date(now) });
    await a.rotate(); // a forced rotation also deletes expired keys
    const rows = await fresh.db('assertion_keys').select<Array<{ kid: string }>>('kid');
    assert.ok(!rows.some((r) => r.kid === first.kid));
  });

  it('an old token verifies with the served JWKS until its key is dropped', async () => {
    const store = new AssertionKeyStore(fresh.db, opts);
    const signer = new AssertionSigner(store, { issuer, lifetimeSeconds: 300, clock });
    const before = await store.signingKey();
    const token = await signer.sign(identity, host);
    const signedAt = now;
    const fresh2 = await store.rotate({ immediate: true });
    assert.notEqual(fresh2.kid, before.kid);
    assert.equal((await store.signingKey()).kid, fresh2.kid);
    now = signedAt + 4 * min;
    await verifyAssertion(token, await store.jwks(), { audience: host, issuer, now: new Date(now) });
    now = signedAt + 7 * min;
    assert.ok(!kids(await store.jwks()).includes(before.kid));
  });

  it('replicas rotating at the same moment create one next key', async () => {
    const stores = Array.from({ length: 4 }, () => new AssertionKeyStore(fresh.db, opts));
    const current = await stores[0]!.signingKey();
    now += 24 * hour;
    await Promise.all(stores.map((s) => s.signingKey()));
    const rows = await fresh.db('assertion_keys').where('created_at', '=', new Date(now)).select<Array<{ kid: string }>>('kid');
    assert.equal(rows.length, 1);
    const sets = await Promise.all(stores.map((s) => s.jwks()));
    for (const set of sets) assert.deepEqual(kids(set).sort(), kids(sets[0]!).sort());
    assert.ok(kids(sets[0]!).includes(current.kid));
  });
});
