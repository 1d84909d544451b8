// The pure parts of `svc login`'s device flow (api/cli-login/logins.ts): the user code's shape and
// the forms a person may type it in, and when an unfinished login has expired.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newUserCode, normalUserCode, stateAt } from '../../api/cli-login/logins.js';
import { verificationUrl } from '../../api/operations/cli-login.js';

describe('svc login: user codes', () => {
  it('are eight letters without vowels or look-alikes, XXXX-XXXX, drawn at random', () => {
    const codes = new Set(Array.from({ length: 200 }, () => newUserCode()));
    assert.ok(codes.size > 195, 'random');
    for (const c of codes) assert.match(c, /^[BCDFGHJKLMNPQRSTVWXZ]{4}-[BCDFGHJKLMNPQRSTVWXZ]{4}$/);
  });

  it('are taken as typed: lower case, without the dash, with spaces; nothing else', () => {
    assert.equal(normalUserCode('bcdf-ghjk'), 'BCDF-GHJK');
    assert.equal(normalUserCode('BCDFGHJK'), 'BCDF-GHJK');
    assert.equal(normalUserCode(' bcdf ghjk '), 'BCDF-GHJK');
    for (const bad of ['', 'BCDF-GHJ', 'BCDF-GHJKL', 'ABCD-EFGH', 'BCDF-GHJ0', 'BCDF_GHJK', '../../x'])
      assert.equal(normalUserCode(bad), undefined, bad);
  });

  it('open the console at the public origin', () => {
    assert.equal(verificationUrl('https://api.example.com', 'BCDF-GHJK'), 'https://api.example.com/console/cli-login?code=BCDF-GHJK');
  });
});

describe('svc login: states', () => {
  const now = new Date('2026-11-28T10:00:00Z');
  const later = new Date(now.getTime() + 1000);
  it('expire when pending or approved past their time, and stay what they were once finished', () => {
    assert.equal(stateAt({ state: 'pending', expires_at: later }, now), 'pending');
    assert.equal(stateAt({ state: 'pending', expires_at: now }, now), 'expired');
    assert.equal(stateAt({ state: 'approved', expires_at: now }, now), 'expired');
    assert.equal(stateAt({ state: 'denied', expires_at: now }, now), 'denied');
    assert.equal(stateAt({ state: 'collected', expires_at: now }, now), 'collected');
  });
});
