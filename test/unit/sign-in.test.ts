// The pure parts of sign-in: admission (every row of the spec's policy table, positive and
// negative), the navigation/fetch table, `next`, and the platform's cookies.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isPlatformCookie, readCookie, withoutPlatformCookies, withoutPlatformSetCookies } from '../../ingress-auth/auth/cookies.js';
import { isNavigation, prefersHtml } from '../../ingress-auth/auth/navigation.js';
import { safeNext } from '../../ingress-auth/auth/next.js';
import { admits, becomesAppUser, sessionKindOf, userRecord, type Identity } from '../../lib/auth/identity.js';
import type { Admit } from '../../lib/policy/index.js';

const ctx = { namespace: 'svc-acct-1' };
const who = (over: Partial<Identity>): Identity => ({ provider: 'email', subject: 's', email: '', ...over });

describe('admission: the policy table', () => {
  const rows: Array<[string, Admit, Identity, boolean]> = [
    ['required admits an active app user', { appUsers: true }, who({ appUserId: 'au_1', email: 'a@x.test' }), true],
    ['required refuses a workforce identity that is no app user', { appUsers: true }, who({ provider: 'idp', email: 'a@x.test' }), false],
    [
      'emails admits the exact verified mailbox',
      { emails: ['ada@example.test'] },
      who({ email: 'ada@example.test', appUserId: 'au_1' }),
      true,
    ],
    [
      'emails admits the same verified address from a provider',
      { emails: ['ada@example.test'] },
      who({ provider: 'idp', email: 'Ada@Example.test' }),
      true,
    ],
    ['emails refuses another mailbox of the domain', { emails: ['ada@example.test'] }, who({ email: 'bob@example.test' }), false],
    [
      'emails refuses an identity without a verified address',
      { emails: ['ada@example.test'] },
      who({ provider: 'codehost', email: '' }),
      false,
    ],
    ['owner admits the owning account', { owner: true }, who({ provider: 'svc', facts: { namespace: 'svc-acct-1' } }), true],
    ['owner refuses another account', { owner: true }, who({ provider: 'svc', facts: { namespace: 'svc-acct-2' } }), false],
    ['owner refuses an app user', { owner: true }, who({ appUserId: 'au_1', email: 'owner@x.test' }), false],
    ['idp: true admits any idp identity', { idp: { any: true } }, who({ provider: 'idp', email: 'x@y.test' }), true],
    ['idp: true refuses a code-host identity', { idp: { any: true } }, who({ provider: 'codehost' }), false],
    [
      'idp mailbox admits that verified account',
      { idp: { values: ['ada@corp.test'] } },
      who({ provider: 'idp', email: 'ada@corp.test' }),
      true,
    ],
    [
      'idp mailbox refuses another account',
      { idp: { values: ['ada@corp.test'] } },
      who({ provider: 'idp', email: 'bob@corp.test' }),
      false,
    ],
    [
      'idp mailbox refuses the same address from email links',
      { idp: { values: ['ada@corp.test'] } },
      who({ provider: 'email', email: 'ada@corp.test' }),
      false,
    ],
    [
      'idp domain admits the signed hd claim',
      { idp: { values: ['corp.test'] } },
      who({ provider: 'idp', email: 'bob@corp.test', facts: { hd: 'corp.test' } }),
      true,
    ],
    [
      'idp legacy @domain admits the hd claim',
      { idp: { values: ['@corp.test'] } },
      who({ provider: 'idp', email: 'bob@corp.test', facts: { hd: 'corp.test' } }),
      true,
    ],
    [
      'idp domain refuses an email suffix without hd (rule 6)',
      { idp: { values: ['corp.test'] } },
      who({ provider: 'idp', email: 'bob@corp.test' }),
      false,
    ],
    [
      'codehost: true admits any code-host identity',
      { codehost: { any: true } },
      who({ provider: 'codehost', facts: { login: 'octo' } }),
      true,
    ],
    ['codehost: true refuses an idp identity', { codehost: { any: true } }, who({ provider: 'idp' }), false],
    ['codehost login admits that login', { codehost: { values: ['octo'] } }, who({ provider: 'codehost', facts: { login: 'Octo' } }), true],
    [
      'codehost org admits an active member',
      { codehost: { values: ['acme'] } },
      who({ provider: 'codehost', facts: { login: 'octo', orgs: ['acme'] } }),
      true,
    ],
    [
      'codehost org refuses a non-member (or unverified membership)',
      { codehost: { values: ['acme'] } },
      who({ provider: 'codehost', facts: { login: 'octo', orgs: [] } }),
      false,
    ],
    ['members are ORed (rule 1)', { owner: true, emails: ['ada@example.test'] }, who({ email: 'ada@example.test' }), true],
  ];
  for (const [name, admit, identity, expected] of rows) it(name, () => assert.equal(admits(admit, identity, ctx), expected));

  it('makes app users of listed addresses, or of anyone under `required` (rule 3)', () => {
    const listed = { rules: [{ admit: { emails: ['ada@example.test'] } }] };
    assert.equal(becomesAppUser(listed, 'ADA@example.test'), true);
    assert.equal(becomesAppUser(listed, 'bob@example.test'), false);
    assert.equal(becomesAppUser({ rules: [{ admit: { appUsers: true } }] }, 'bob@example.test'), true);
    assert.equal(
      becomesAppUser({ rules: [{ admit: { idp: { any: true } } }] }, 'bob@example.test'),
      false,
      'workforce identities create no app user',
    );
    assert.equal(sessionKindOf('email'), 'app');
    assert.equal(sessionKindOf('passkey'), 'app');
    for (const p of ['idp', 'codehost', 'svc'] as const) assert.equal(sessionKindOf(p), 'workforce');
  });
});

describe('/_svc/auth/me: every field a string, for every provider', () => {
  const cases: Array<[string, Identity, ReturnType<typeof userRecord>]> = [
    [
      'passkey with a name',
      { provider: 'passkey', subject: 'au_1', email: 'ada@x.io', name: 'Ada', appUserId: 'au_1' },
      { id: 'au_1', name: 'Ada', email: 'ada@x.io', email_verified: true, provider: 'passkey' },
    ],
    [
      'email link, no name',
      { provider: 'email', subject: 'au_2', email: 'bob@x.io', appUserId: 'au_2' },
      { id: 'au_2', name: 'bob@x.io', email: 'bob@x.io', email_verified: true, provider: 'email' },
    ],
    [
      'owner',
      { provider: 'svc', subject: 'acct-1', email: 'owner@x.io' },
      { id: 'acct-1', name: 'owner@x.io', email: 'owner@x.io', email_verified: true, provider: 'svc' },
    ],
    [
      'idp, a name and no verified address',
      { provider: 'idp', subject: 'idp:123', email: '', name: '  Cy  ' },
      { id: 'idp:123', name: 'Cy', email: 'idp-123@idp.invalid', email_verified: false, provider: 'idp' },
    ],
    [
      'codehost, no name and no public address',
      { provider: 'codehost', subject: 'codehost:42', email: '', facts: { login: 'octo-cat', orgs: [] } },
      { id: 'codehost:42', name: 'octo-cat', email: 'octo-cat@codehost.invalid', email_verified: false, provider: 'codehost' },
    ],
  ];
  for (const [what, identity, expected] of cases) {
    it(what, () => {
      const r = userRecord(identity);
      assert.deepEqual(r, expected);
      for (const k of ['id', 'name', 'email', 'provider'] as const) assert.ok(typeof r[k] === 'string' && r[k].length > 0, k);
    });
  }
});

describe('navigation or fetch', () => {
  it('follows the documented table', () => {
    assert.equal(isNavigation('POST', { 'sec-fetch-mode': 'navigate' }), false);
    assert.equal(isNavigation('GET', { 'sec-fetch-mode': 'navigate', accept: 'application/json' }), true);
    assert.equal(isNavigation('GET', { 'sec-fetch-mode': 'nested-navigate' }), true);
    assert.equal(isNavigation('GET', { 'sec-fetch-mode': 'cors', accept: 'text/html' }), false);
    assert.equal(isNavigation('GET', { 'sec-fetch-mode': 'websocket' }), false);
    assert.equal(isNavigation('GET', { 'sec-fetch-dest': 'document' }), true);
    assert.equal(isNavigation('HEAD', { 'sec-fetch-dest': 'iframe' }), true);
    assert.equal(isNavigation('GET', { 'sec-fetch-dest': 'script', accept: 'text/html' }), false);
    assert.equal(isNavigation('GET', { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }), true);
    assert.equal(isNavigation('GET', { accept: 'application/json, text/plain, */*' }), false);
    assert.equal(isNavigation('GET', { accept: '*/*' }), false);
    assert.equal(isNavigation('GET', {}), false);
    assert.equal(prefersHtml('text/html;q=0.5, application/json'), false);
    assert.equal(prefersHtml('text/html;q=0'), false);
    assert.equal(prefersHtml('text/html, */*'), true);
  });
});

describe('next', () => {
  it('keeps paths of the same app and turns everything else into /', () => {
    assert.equal(safeNext('/a/b?c=1&d=%2F'), '/a/b?c=1&d=%2F');
    assert.equal(safeNext(undefined), '/');
    for (const bad of [
      '//evil.test',
      'https://evil.test/x',
      '/\\evil.test',
      'javascript:alert(1)',
      'evil',
      '/a\nb',
      '/_svc/auth/login',
      '/_SVC/auth/me',
      '/%2e%2e/_svc/auth/login',
    ])
      assert.equal(safeNext(bad), '/', bad);
    assert.equal(safeNext('/' + 'a'.repeat(3000)), '/');
  });
});

describe('platform cookies', () => {
  it('are recognised in every spelling, removed from requests and from app responses', () => {
    for (const n of ['svc-session', 'SVC-Session', 'svc_flow', '__Host-svc-session', '__secure-svc-x'])
      assert.equal(isPlatformCookie(n), true, n);
    for (const n of ['session', 'mysvc-x', 'svcx', 'theme']) assert.equal(isPlatformCookie(n), false, n);
    assert.equal(withoutPlatformCookies('a=1; svc-session=x; SVC_flow=y; b=2'), 'a=1; b=2');
    assert.equal(withoutPlatformCookies('svc-session=x'), undefined);
    assert.equal(withoutPlatformCookies('a=1'), 'a=1');
    assert.deepEqual(withoutPlatformSetCookies(['svc-session=p; Path=/', 'theme=dark', '__Host-SVC-session=q']), ['theme=dark']);
    assert.equal(readCookie('a=1; svc-session=abc; b=2', 'svc-session'), 'abc');
    assert.equal(readCookie(['a=1', 'svc-session=abc'], 'svc-session'), 'abc');
    assert.equal(readCookie('xsvc-session=abc', 'svc-session'), undefined);
  });
});
