// The pure parts of console sign-in and serving (api/console/, console/src/): a mailed code's shape,
// lifetime and single use, the session cookie's attributes, the mail, which file answers a path and
// with which headers, and the console's own search, paging, status words and routes.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { hashSecret, newSecret } from '../../lib/auth/secrets.js';
import { browserHash, codeLifetimeMs, codeState, isCodeShape, newCode } from '../../api/console/codes.js';
import { consoleSignInMail, signInLink } from '../../api/console/mail.js';
import {
  clearSessionCookie,
  clearSessionCookies,
  csrfRefusal,
  isOwnOrigin,
  ownOrigin,
  readCookie,
  sessionCookie,
  sessionCookieName,
  sessionLifetimeMs,
  signInCookieName,
} from '../../api/console/session.js';
import { contentSecurityPolicy, fileFor, isHashed, type ConsoleFile } from '../../api/console/static.js';
import { filterByName, pageOf, pageSize } from '../../console/src/list.js';
import { hrefOf, routeOf } from '../../console/src/routes.js';
import { statusInWords } from '../../console/src/status.js';

describe('console sign-in codes', () => {
  const now = new Date('2026-11-28T10:00:00Z');

  it('are 32 random bytes, stored only as their SHA-256, for ten minutes', () => {
    const { code, row } = newCode('acct_1', now);
    assert.ok(isCodeShape(code));
    assert.equal(row.id, hashSecret(code));
    assert.notEqual(row.id, code);
    assert.equal(row.expires_at.getTime() - now.getTime(), 10 * 60_000);
    assert.equal(codeLifetimeMs, 600_000);
    assert.notEqual(newCode('acct_1', now).code, code);
  });

  it('may be redeemed once, before they expire', () => {
    const expiresAt = new Date(now.getTime() + codeLifetimeMs);
    assert.equal(codeState({ expiresAt, usedAt: null }, now), 'usable');
    assert.equal(codeState({ expiresAt, usedAt: null }, new Date(expiresAt.getTime() - 1)), 'usable');
    assert.equal(codeState({ expiresAt, usedAt: null }, expiresAt), 'expired');
    assert.equal(codeState({ expiresAt, usedAt: now }, now), 'used');
    assert.equal(codeState(undefined, now), 'unknown');
  });

  it('are bound to the asking browser by the hash of its cookie value, none for anything else', () => {
    const value = newSecret();
    const { row } = newCode('acct_1', now, value);
    assert.equal(row.browser_hash, hashSecret(value));
    assert.equal(browserHash(value), hashSecret(value));
    assert.equal(newCode('acct_1', now).row.browser_hash, null);
    for (const bad of [undefined, '', 'x', 'a'.repeat(42)]) assert.equal(browserHash(bad), undefined);
  });

  it('refuses anything but the shape of a code before the database is asked', () => {
    for (const bad of ['', 'x', 'a'.repeat(42), 'a'.repeat(44), `${'a'.repeat(42)}=`, `${'a'.repeat(42)}/`])
      assert.equal(isCodeShape(bad), false, bad);
  });

  it('arrive in a mail with the link, its lifetime, and what to do with one not asked for', () => {
    const link = signInLink('http://127.0.0.1:8080', 'abc_-');
    assert.equal(link, 'http://127.0.0.1:8080/console/auth?code=abc_-');
    const mail = consoleSignInMail({ email: 'ada@example.test', link });
    assert.equal(mail.to, 'ada@example.test');
    assert.match(mail.text, /http:\/\/127\.0\.0\.1:8080\/console\/auth\?code=abc_-/);
    assert.match(mail.text, /once, for 10 minutes/);
    assert.match(mail.html ?? '', /If you did not ask for it, ignore this message/);
  });
});

describe('console session cookie', () => {
  it('is HttpOnly, SameSite=Strict, Path=/, host-only, named __Host- and Secure only over https', () => {
    assert.equal(sessionCookieName(true), '__Host-svc-console');
    assert.equal(sessionCookieName(false), 'svc-console');
    assert.equal(
      sessionCookie('__Host-svc-console', 'svc_x', { secure: true, maxAgeSeconds: 43200 }),
      '__Host-svc-console=svc_x; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200; Secure',
    );
    assert.equal(
      sessionCookie('svc-console', 'svc_x', { secure: false, maxAgeSeconds: 43200 }),
      'svc-console=svc_x; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200',
    );
    assert.doesNotMatch(sessionCookie('svc-console', 'v', { secure: false, maxAgeSeconds: 1 }), /Domain/i);
    assert.equal(clearSessionCookie('svc-console', false), 'svc-console=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0');
    assert.equal(sessionLifetimeMs, 12 * 3600_000);
  });

  it('is read by exact name, the first one winning', () => {
    assert.equal(readCookie('a=1; svc-console=t1; svc-console=t2', 'svc-console'), 't1');
    assert.equal(readCookie('xsvc-console=t1', 'svc-console'), undefined);
    assert.equal(readCookie('svc-console=', 'svc-console'), undefined);
    assert.equal(readCookie(undefined, 'svc-console'), undefined);
  });

  it('passes the CSRF checks only with the header, and on writes the own origin or the public one', () => {
    const r = {
      method: 'POST',
      cookie: undefined,
      consoleHeader: '1',
      origin: 'http://api.test:8080',
      secure: false,
      host: 'api.test:8080',
      publicOrigin: 'https://console.example.test',
    };
    assert.equal(ownOrigin(r), 'http://api.test:8080');
    assert.equal(csrfRefusal(r), undefined);
    assert.match(csrfRefusal({ ...r, consoleHeader: undefined }) ?? '', /X-Svc-Console: 1/);
    assert.match(csrfRefusal({ ...r, origin: 'http://api.test:8081' }) ?? '', /Origin: https:\/\/console\.example\.test/);
    // Reached over https, an http Origin of the same host is another origin.
    assert.match(csrfRefusal({ ...r, secure: true }) ?? '', /this request's Origin is http:\/\/api\.test:8080/);
    assert.equal(csrfRefusal({ ...r, method: 'GET', origin: undefined }), undefined);
    // Behind a proxy that sends its own Host (svc-api.svc:8080), people's Origin is the public one.
    assert.equal(csrfRefusal({ ...r, host: 'svc-api.svc:8080', origin: 'https://console.example.test' }), undefined);
    assert.equal(isOwnOrigin({ ...r, origin: 'https://console.example.test.evil.example' }), false);
    assert.equal(isOwnOrigin({ ...r, origin: undefined }), false);
  });

  it('clear both session cookies on sign-out; the sign-in cookie is named as the session is', () => {
    assert.deepEqual(clearSessionCookies(), [
      'svc-console=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0',
      '__Host-svc-console=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0; Secure',
    ]);
    assert.equal(signInCookieName(true), '__Host-svc-console-sign-in');
    assert.equal(signInCookieName(false), 'svc-console-sign-in');
  });
});

describe('console files', () => {
  const file = (name: string): ConsoleFile => ({
    body: Buffer.from(name),
    type: 'text/plain',
    cacheControl: isHashed(name) ? 'long' : 'no-cache',
  });
  const files = new Map(['index.html', 'main-ABCD1234.js', 'main-WXYZ5678.css'].map((n) => [n, file(n)]));

  it('caches hashed assets for good and index.html never', () => {
    assert.equal(isHashed('main-ABCD1234.js'), true);
    assert.equal(isHashed('main-WXYZ5678.css'), true);
    assert.equal(isHashed('index.html'), false);
    assert.equal(files.get('index.html')!.cacheControl, 'no-cache');
  });

  it('answers page routes with index.html, files by name, nothing outside the build folder', () => {
    assert.equal(fileFor(files, '/console/')?.body.toString(), 'index.html');
    assert.equal(fileFor(files, '/console/apps/shop')?.body.toString(), 'index.html');
    assert.equal(fileFor(files, '/console/main-ABCD1234.js')?.body.toString(), 'main-ABCD1234.js');
    assert.equal(fileFor(files, '/console/missing-ABCD1234.js'), undefined);
    assert.equal(fileFor(files, '/console/../package.json'), undefined);
    assert.equal(fileFor(files, '/console/x/main-ABCD1234.js'), undefined);
  });

  it('forbid inline script and framing', () => {
    assert.match(contentSecurityPolicy, /default-src 'self'/);
    assert.match(contentSecurityPolicy, /script-src 'self'(;|$)/);
    assert.doesNotMatch(contentSecurityPolicy, /unsafe-inline|unsafe-eval/);
    assert.match(contentSecurityPolicy, /frame-ancestors 'none'/);
  });
});

describe('console apps list, status words and routes', () => {
  const apps = Array.from({ length: 1000 }, (_, i) => ({ name: `app-${String(i).padStart(4, '0')}` }));

  it('filters by a part of the name, case-insensitively, and renders one page of 25', () => {
    assert.equal(filterByName(apps, '').length, 1000);
    assert.deepEqual(
      filterByName(apps, ' APP-099 ').map((a) => a.name),
      Array.from({ length: 10 }, (_, i) => `app-099${i}`),
    );
    const last = pageOf(apps, 40);
    assert.equal(pageSize, 25);
    assert.deepEqual([last.page, last.pages, last.first, last.last, last.items.length], [40, 40, 976, 1000, 25]);
    assert.deepEqual([pageOf(apps, 99).page, pageOf(apps, 0).page, pageOf([], 3).first], [40, 1, 0]);
  });

  it('says an app’s status in words with its machines', () => {
    assert.deepEqual(statusInWords({ status: 'MachinesReady', ready: '2/2' }), { text: 'Running (2/2 machines ready)', tone: 'ok' });
    assert.equal(statusInWords({ status: 'RolloutFailed', ready: '1/1' }).tone, 'bad');
    assert.equal(statusInWords({ status: 'SomethingNew', ready: '0/1' }).text, 'Something new (0/1 machines ready)');
  });

  it('maps addresses to pages and back', () => {
    assert.deepEqual(routeOf('/console/'), { page: 'apps' });
    assert.deepEqual(routeOf('/console/apps/shop'), { page: 'app', name: 'shop' });
    assert.deepEqual(routeOf('/console/sign-in'), { page: 'sign-in' });
    assert.deepEqual(routeOf('/console/auth', '?code=abc_-'), { page: 'auth', code: 'abc_-' });
    assert.equal(hrefOf({ page: 'auth', code: 'a b' }), '/console/auth?code=a%20b');
    assert.equal(routeOf('/console/nope/x/y').page, 'not-found');
    assert.equal(hrefOf({ page: 'app', name: 'shop' }), '/console/apps/shop');
  });
});
