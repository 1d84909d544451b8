// Attacks on sign-in on app hostnames (issue 11 items 9 and 10): `next` values that normalize into
// another origin (the passkey and email pages `location.replace` them; redirects send them), and
// sign-in mail whose link follows the request's Host header. Item 11 (a disabled user signing back in
// through every provider) is tested with the real providers in
// test/integration/ingress-auth-providers.test.ts, auth-passkeys.test.ts and ingress-auth-email.test.ts.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import { safeNext } from '../../ingress-auth/auth/next.js';
import type { MailMessage } from '../../lib/auth/invitations.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { appsDomain, Browser, startTestIngress, type TestIngress } from '../support/ingress.js';
import { eventually } from '../support/wait.js';

const origin = 'http://shop.apps.localhost:8081';
/** Where a browser goes with `next` as a Location or through location.replace() on our page. */
const destination = (next: string) => new URL(next, `${origin}/_svc/auth/login`);

describe('security: item 9, `next` never leaves the app', () => {
  const spellings = [
    '/.//evil.example',
    '/..//evil.example',
    '/./..//evil.example/x',
    '//evil.example',
    '///evil.example',
    '/\\evil.example',
    '/\\/evil.example',
    '\\\\evil.example',
    '/%2f%2fevil.example',
    '/%2F/evil.example',
    '/%5cevil.example',
    '/%5C%5Cevil.example',
    '\t//evil.example',
    '/\t/evil.example',
    '/\n/evil.example',
    ' //evil.example',
    'https://evil.example',
    'https:evil.example',
    'http:/evil.example',
    '//evil.example/%2e%2e',
    'javascript:alert(1)',
    'data:text/html,x',
    '/x/../..//evil.example',
    '/%2e%2e//evil.example',
    '/%2e/%2fevil.example',
    '/_svc/auth/logout',
    '/_SVC/auth/login',
    '//@evil.example',
  ];
  for (const next of spellings) {
    it(`${JSON.stringify(next)} stays on the app`, () => {
      const got = safeNext(next);
      assert.equal(destination(got).origin, origin, `${next} -> ${got}`);
      assert.ok(got.startsWith('/') && !got.startsWith('//') && !got.includes('\\'), got);
      assert.ok(!got.toLowerCase().startsWith('/_svc/'), got);
    });
  }

  it('keeps the paths the platform itself writes', () => {
    for (const next of ['/', '/api/echo?a=1', '/docs/a%20b/', '/caf%C3%A9?x=%2F']) assert.equal(safeNext(next), next);
  });

  it('fuzz: whatever comes in, the browser stays on the app', () => {
    const pieces = ['/', '//', '\\', '.', '..', '%2e', '%2f', '%5c', '\t', '\n', ' ', 'evil.example', ':', '@', '?', '#', 'http:', 'a'];
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(fc.constantFrom(...pieces), { maxLength: 10 }).map((x) => x.join('')),
          fc.string(),
        ),
        (raw) => {
          const got = safeNext(raw);
          assert.equal(destination(got).origin, origin, `${JSON.stringify(raw)} -> ${got}`);
          assert.ok(!destination(got).pathname.startsWith('//'));
        },
      ),
      { numRuns: 10_000, seed: 9 },
    );
  });
});

describe('security: item 9 and 10 through ingress-auth', () => {
  let api: TestApi;
  let ia: TestIngress;
  const sent: MailMessage[] = [];
  const app = `mailer-${Date.now().toString(36)}`;
  const configured = () => `http://${app}.${appsDomain}:${ia.port}`;

  before(async () => {
    api = await startTestApi();
    ia = await startTestIngress(api, { mail: { enqueue: async (m: MailMessage) => void sent.push(m) } });
    assert.equal((await api.request('POST', '/api/apps', { body: { name: app } })).status, 201);
    // The policy as a deploy would write it (the gate needs no running machine for its own pages).
    await api.deps.apps.patchSpec(api.account.namespace, app, {
      auth: { rules: [{ mode: 'auth', paths: ['/**'], admit: { emails: ['ada@example.com'] } }] },
    });
    await eventually(
      'the app in the ingress',
      async () => (await new Browser(ia.url).request(`${app}.${appsDomain}`, '/_svc/auth/login')).status === 200,
    );
  });
  after(async () => {
    await ia?.close();
    await api?.close();
  });

  it('the login page never hands its script a `next` that leaves the app', async () => {
    for (const next of ['/.//evil.example', '/..//evil.example', '/%2f%2fevil.example', '//evil.example', '/\\evil.example']) {
      const page = await new Browser(ia.url).request(`${app}.${appsDomain}`, `/_svc/auth/login?next=${encodeURIComponent(next)}`, {
        headers: [['Accept', 'text/html']],
      });
      assert.match(page.body, /var next="\/";/, next);
    }
  });

  // Item 10: the link in the mail is the configured app URL, whatever Host the request named.
  const hosts = (port: number) => [
    `${app}.${appsDomain}:${port}`,
    `${app.toUpperCase()}.APPS.LOCALHOST:${port}`,
    `${app}.${appsDomain}.:${port}`,
    `${app}.${appsDomain}:6666`,
    `${app}.${appsDomain}`,
  ];
  it('builds sign-in links from the configured app URL, never from the Host header', async () => {
    for (const host of hosts(ia.port)) {
      sent.length = 0;
      const res = await new Browser(ia.url).request(host, '/_svc/auth/email', {
        method: 'POST',
        headers: [
          ['Origin', configured()],
          ['Content-Type', 'application/json'],
          ['Accept', 'application/json'],
        ],
        body: JSON.stringify({ email: 'ada@example.com', next: '/' }),
      });
      assert.equal(res.status, 202, `${host}: ${res.body}`);
      const mail = await eventually(`the mail for Host ${host}`, () => sent[0]);
      const links = [...`${mail.text ?? ''} ${mail.html ?? ''}`.matchAll(/https?:\/\/[^\s"'<>]+/g)].map((m) => m[0]);
      assert.ok(links.length > 0, 'the mail has a link');
      for (const link of links) assert.equal(new URL(link).origin, configured(), `${host}: ${link}`);
    }
  });

  it('refuses a sign-in request whose Origin is the Host it named rather than the app', async () => {
    const res = await new Browser(ia.url).request(`${app}.${appsDomain}:6666`, '/_svc/auth/email', {
      method: 'POST',
      headers: [
        ['Origin', `http://${app}.${appsDomain}:6666`],
        ['Content-Type', 'application/json'],
        ['Accept', 'application/json'],
      ],
      body: JSON.stringify({ email: 'ada@example.com', next: '/' }),
    });
    assert.equal(res.status, 403);
  });
});
