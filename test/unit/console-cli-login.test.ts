// The pure parts of the console page that approves a `svc login` (console/src/cli-login.ts): the
// user code as a person types it, the approve request from the form (nothing sent while it is
// wrong), a login's state in words, the code kept across sign-in, and the page's route.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { newUserCode, normalUserCode as apiNormalUserCode } from '../../api/cli-login/logins.js';
import {
  approveRequest,
  defaultLoginActions,
  loginStateInWords,
  normalUserCode,
  rememberedCode,
  rememberEntry,
  userCodeAlphabet,
  userCodeProblem,
} from '../../console/src/cli-login.js';
import { hrefOf, routeOf, type Route } from '../../console/src/routes.js';

describe('console cli-login page: the user code', () => {
  it('normalises any case, with or without the dash or spaces', () => {
    for (const typed of ['BCDF-GHJK', 'bcdf-ghjk', 'BCDFGHJK', 'bcdfghjk', ' bcdf ghjk ', 'Bc-Df-Gh-Jk'])
      assert.equal(normalUserCode(typed), 'BCDF-GHJK', typed);
  });

  it('refuses what cannot be a code, saying why', () => {
    for (const typed of ['', 'BCDF-GHJ', 'BCDF-GHJKL', 'ABCD-EFGH', 'BCDF-GHJ1', 'BCDF_GHJK', 'BCDF-GHJK?code=x'])
      assert.equal(normalUserCode(typed), undefined, typed);
    assert.match(userCodeProblem('')!, /Enter the code your terminal shows/);
    assert.match(userCodeProblem('   - ')!, /Enter the code/);
    assert.match(userCodeProblem('BCDF-GHJ')!, /8 letters.*this has 7/);
    assert.match(userCodeProblem('abcd-efgh')!, /A E cannot be in it/);
    assert.match(userCodeProblem('BCDF-GHJ0')!, /0 cannot be in it/);
    assert.equal(userCodeProblem('bcdf ghjk'), undefined);
  });

  it('agrees with the API on every code it makes and on what a person types', () => {
    for (let i = 0; i < 200; i++) {
      const code = newUserCode();
      assert.equal(normalUserCode(code), code);
      assert.equal(normalUserCode(code.toLowerCase().replace('-', '')), code);
    }
    for (const typed of ['bcdf-ghjk', 'BCDF GHJK', 'ABCD-EFGH', 'BCDF-GHJ', '', 'bcdf--ghjk', 'BCDF-GHJ1'])
      assert.equal(normalUserCode(typed), apiNormalUserCode(typed), typed);
    assert.equal(userCodeAlphabet, 'BCDFGHJKLMNPQRSTVWXZ');
  });
});

describe('console cli-login page: the approve request', () => {
  it('asks for every action (none named) for 90 days by default', () => {
    assert.deepEqual(approveRequest({ access: 'all', actions: [], days: '90' }), { body: { expires_in_days: 90 } });
    // Boxes checked before choosing "everything" restrict nothing.
    assert.deepEqual(approveRequest({ access: 'all', actions: ['read'], days: ' 7 ' }), { body: { expires_in_days: 7 } });
  });

  it('names the chosen actions, in the API order', () => {
    assert.deepEqual(approveRequest({ access: 'chosen', actions: ['deploy', 'read'], days: '1' }), {
      body: { actions: ['read', 'deploy'], expires_in_days: 1 },
    });
    assert.deepEqual(approveRequest({ access: 'chosen', actions: ['admin', 'exec', 'deploy', 'write', 'read'], days: '366' }), {
      body: { actions: ['read', 'write', 'deploy', 'exec', 'admin'], expires_in_days: 366 },
    });
  });

  it('sends nothing while the form is wrong, naming the field', () => {
    for (const days of ['', '0', '367', '1.5', '-3', 'ninety', '1e2']) {
      const r = approveRequest({ access: 'all', actions: [], days });
      assert.ok('problem' in r, days);
      assert.equal(r.field, 'days');
      assert.match(r.problem, /from 1 to 366/);
    }
    const none = approveRequest({ access: 'chosen', actions: [], days: '90' });
    assert.ok('problem' in none);
    assert.equal(none.field, 'actions');
    assert.match(none.problem, /at least one action/);
  });
});

describe('console cli-login page: states and the code kept across sign-in', () => {
  it('says what became of a login that no longer waits', () => {
    assert.equal(loginStateInWords('pending'), undefined);
    assert.match(loginStateInWords('approved')!, /^Approved/);
    assert.match(loginStateInWords('collected')!, /^Approved, and the terminal has collected its token/);
    assert.match(loginStateInWords('denied')!, /^Denied/);
    assert.match(loginStateInWords('expired')!, /^Expired.*svc login again/);
  });

  it('comes back to a code for ten minutes, and to nothing unreadable', () => {
    const at = Date.parse('2026-11-28T09:00:00Z');
    const stored = rememberEntry('bcdfghjk', at);
    assert.equal(rememberedCode(stored, at), 'BCDF-GHJK');
    assert.equal(rememberedCode(stored, at + 9 * 60_000), 'BCDF-GHJK');
    assert.equal(rememberedCode(stored, at + 11 * 60_000), undefined);
    assert.equal(rememberedCode(stored, at - 60_000), undefined);
    assert.equal(rememberedCode(rememberEntry('not a code', at), at), undefined);
    for (const junk of [null, undefined, '', '{', '"BCDF-GHJK"', '{"code":"BCDF-GHJK"}', '{"code":1,"at":1}', 'null'])
      assert.equal(rememberedCode(junk, at), undefined, String(junk));
  });
});

describe('console cli-login page: its route', () => {
  it('reads the code from the address the CLI prints', () => {
    assert.deepEqual(routeOf('/console/cli-login', '?code=BCDF-GHJK'), { page: 'cli-login', code: 'BCDF-GHJK' });
    assert.deepEqual(routeOf('/console/cli-login', '?code=bcdf%20ghjk'), { page: 'cli-login', code: 'bcdf ghjk' });
    assert.deepEqual(routeOf('/console/cli-login'), { page: 'cli-login', code: '' });
    assert.deepEqual(routeOf('/console/cli-login/', ''), { page: 'cli-login', code: '' });
    assert.equal(routeOf('/console/cli-login/BCDF-GHJK').page, 'not-found');
    assert.equal(hrefOf({ page: 'cli-login', code: 'BCDF-GHJK' }), '/console/cli-login?code=BCDF-GHJK');
    assert.equal(hrefOf({ page: 'cli-login', code: '' }), '/console/cli-login');
  });

  it('goes there and back', () => {
    const routes: Route[] = [
      { page: 'cli-login', code: 'BCDF-GHJK' },
      { page: 'cli-login', code: '' },
      { page: 'cli-login', code: 'a b&c=d?#' },
    ];
    for (const route of routes) {
      const href = new URL(hrefOf(route), 'https://svc.example.com');
      assert.deepEqual(routeOf(href.pathname, href.search), route);
    }
  });
});

describe('the approval proposed by default', () => {
  it('is every action but admin: a phished approval manages no tokens or webhooks', () => {
    assert.deepEqual([...defaultLoginActions], ['read', 'write', 'deploy', 'exec']);
  });
});
