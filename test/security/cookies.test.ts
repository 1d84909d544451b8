// Fuzzing the cookie filters (issue 11 item 7) against a browser's reading of cookies (RFC 6265bis
// 5.6 and 5.7, as Chromium and Firefox parse): whatever Set-Cookie an app sends that ingress-auth
// lets through must, as a browser stores it, neither be a platform cookie, nor nameless (sent back as
// a bare value, which reads as `svc-session=...`), nor carry a Domain (reaching other apps); and a
// Cookie header with a platform cookie anywhere in it reaches the app without it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { appSetCookie, isPlatformCookie, readCookie, withoutPlatformCookies } from '../../ingress-auth/auth/cookies.js';

const wsp = /^[ \t]+|[ \t]+$/g;

/** A browser's reading of a Set-Cookie value; undefined when it ignores it. */
function browserReads(setCookie: string): { name: string; value: string; attributes: Array<[string, string]> } | undefined {
  // Control characters other than tab make browsers drop the whole header.
  if (/[\x00-\x08\x0a-\x1f\x7f]/.test(setCookie)) return undefined;
  const semi = setCookie.indexOf(';');
  const pair = semi === -1 ? setCookie : setCookie.slice(0, semi);
  const eq = pair.indexOf('=');
  const name = (eq === -1 ? '' : pair.slice(0, eq)).replace(wsp, '');
  const value = (eq === -1 ? pair : pair.slice(eq + 1)).replace(wsp, '');
  if (!name && !value) return undefined;
  const attributes = (semi === -1 ? [] : setCookie.slice(semi + 1).split(';')).map((a): [string, string] => {
    const i = a.indexOf('=');
    return [(i === -1 ? a : a.slice(0, i)).replace(wsp, '').toLowerCase(), i === -1 ? '' : a.slice(i + 1).replace(wsp, '')];
  });
  return { name, value, attributes };
}

/** What the browser sends back for it in a Cookie header. */
const sentBack = (c: { name: string; value: string }) => (c.name ? `${c.name}=${c.value}` : c.value);

const pieces = [
  'svc-session',
  'SVC_flow',
  '__Host-',
  '__Secure-',
  'svc',
  '-',
  '_',
  '=',
  ';',
  ',',
  ' ',
  '\t',
  'Domain',
  'domain',
  '=.apps.localhost',
  'Path=/',
  'theme',
  'dark',
  'x',
  '"',
  'HttpOnly',
  '\n',
];
const cookieText = fc.array(fc.constantFrom(...pieces), { maxLength: 12 }).map((p) => p.join(''));

describe('security: cookie filters, fuzzed against a browser reading', () => {
  it('no Set-Cookie the app sends reaches the browser as a platform cookie, nameless, or with a Domain', () => {
    fc.assert(
      fc.property(fc.oneof(cookieText, fc.string()), (raw) => {
        const out = appSetCookie(raw);
        if (out === undefined) return;
        const c = browserReads(out);
        if (!c) return;
        assert.ok(c.name, `nameless cookie let through: ${JSON.stringify(raw)}`);
        assert.ok(!isPlatformCookie(c.name), `platform cookie let through: ${JSON.stringify(raw)}`);
        assert.ok(!c.attributes.some(([k]) => k === 'domain'), `Domain let through: ${JSON.stringify(raw)}`);
        for (const n of ['svc-session', 'svc-flow', '__Host-svc-session', '__Host-svc-flow'])
          assert.equal(readCookie(sentBack(c), n), undefined, `${n} readable from ${JSON.stringify(raw)}`);
      }),
      { numRuns: 20_000, seed: 7 },
    );
  });

  it('keeps ordinary cookies, only without Domain', () => {
    assert.equal(appSetCookie('theme=dark; Path=/; Domain=.apps.localhost; Secure'), 'theme=dark; Path=/; Secure');
    assert.equal(appSetCookie('a=b'), 'a=b');
    for (const bad of [
      '=svc-session=x; Domain=apps.localhost',
      'svc-session',
      ' SVC-Session =x',
      '__Host-svc-flow=x',
      'a=b, svc-session=x',
      '=x',
    ])
      assert.equal(appSetCookie(bad), undefined, bad);
  });

  it('no platform cookie in a Cookie header reaches the app, in any position or spelling', () => {
    fc.assert(
      fc.property(fc.oneof(cookieText, fc.string()), (header) => {
        const kept = withoutPlatformCookies(header);
        if (kept === undefined) return;
        for (const part of kept.split(';')) {
          const name = part.includes('=') ? part.slice(0, part.indexOf('=')).trim() : part.trim();
          assert.ok(!isPlatformCookie(name), `${JSON.stringify(header)} kept ${JSON.stringify(part)}`);
        }
      }),
      { numRuns: 20_000, seed: 8 },
    );
  });
});
