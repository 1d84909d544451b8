// Code-host sign-in (lib/auth/codehost.ts) against the GitHub-shaped double: the web flow, the
// verified address, organization membership only through the person's own membership API
// (active admits; pending, not granted to the OAuth app, or not a member do not), and the
// refusals: wrong client secret, a code used twice or with another redirect URI, a revoked token,
// rate limits, and a provider that is down or silent.
import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import {
  CodehostError,
  codehostAdmits,
  codehostCallback,
  codehostCandidates,
  GitHubCodehost,
  type CodehostFailure,
} from '../../lib/auth/codehost.js';
import { startTestCodehost, type TestCodehost } from '../support/codehost.js';

const redirectUri = 'http://login.apps.localhost:8081/_svc/auth/codehost/callback';

const refused = async (p: Promise<unknown>, reason: CodehostFailure, message: RegExp) =>
  assert.rejects(p, (err: unknown) => {
    assert.ok(err instanceof CodehostError, `not a CodehostError: ${String(err)}`);
    assert.equal(err.reason, reason, err.message);
    assert.match(err.message, message);
    return true;
  });

describe('code-host sign-in against the GitHub-shaped double', () => {
  let gh: TestCodehost;
  let client: GitHubCodehost;
  let octocatId: number;
  const settings = () => ({ url: gh.url, apiUrl: gh.apiUrl, clientId: gh.clientId, clientSecret: gh.clientSecret });
  /** start(), the person approving at the provider, and the callback check: the code to finish with. */
  const authorize = async (login: string, c: GitHubCodehost = client) => {
    const { url, state } = c.start({ redirectUri });
    return codehostCallback(await gh.signIn(url, login), state);
  };
  const signIn = async (login: string) => client.finish(await authorize(login), redirectUri);

  before(async () => {
    gh = await startTestCodehost({ callbackUrl: 'http://login.apps.localhost:8081/_svc/auth/' });
    client = new GitHubCodehost(settings());
    octocatId = gh.addUser({
      login: 'OctoCat',
      name: 'The Octocat',
      publicEmail: 'public@octo.example',
      emails: [
        { email: 'old@octo.example', verified: true, primary: false },
        { email: 'octocat@octo.example', verified: true, primary: true },
      ],
      orgs: { 'Acme-Corp': 'active', 'Invited-Org': 'pending', 'Locked-Org': 'active' },
    });
    gh.addUser({
      login: 'newbie',
      emails: [{ email: 'newbie@octo.example', verified: false, primary: true }],
      publicEmail: 'newbie@octo.example',
    });
    gh.setOrgAccess('Locked-Org', false);
  });
  after(() => gh.close());

  it('signs in: token, login, id, name and the verified primary address', async () => {
    const who = await signIn('octocat');
    assert.match(who.token, /^gho_/);
    assert.deepEqual(
      { ...who, token: '' },
      { token: '', login: 'OctoCat', id: octocatId, name: 'The Octocat', email: 'octocat@octo.example' },
    );
  });

  it('gives no address when the primary one is unverified, not even the public profile address', async () => {
    const who = await signIn('newbie');
    assert.equal(who.email, undefined);
    assert.equal(who.name, undefined);
    assert.equal(who.login, 'newbie');
  });

  it('verifies only active memberships the organization let this app see, through the membership API', async () => {
    const who = await signIn('octocat');
    const before = gh.requests.length;
    const orgs = ['Acme-Corp', 'invited-org', 'locked-org', 'stranger-org', 'ACME-CORP'];
    assert.deepEqual([...(await client.activeMemberships(who.token, orgs))], ['acme-corp']);
    const asked = gh.requests.slice(before);
    assert.deepEqual(
      [...asked].sort(),
      ['acme-corp', 'invited-org', 'locked-org', 'stranger-org'].map((o) => `GET /api/v3/user/memberships/orgs/${o}`),
    );
    assert.ok(!gh.requests.some((r) => r.includes('/users/')), 'no public listing is consulted');
  });

  it('asks nothing for a value that cannot be an organization name', async () => {
    const who = await signIn('octocat');
    const before = gh.requests.length;
    assert.deepEqual([...(await client.activeMemberships(who.token, ['..', '../../users/octocat/orgs', 'acme-corp/team', '']))], []);
    assert.deepEqual(gh.requests.slice(before), []);
  });

  it('admits through the helpers: login without any membership call, else an active organization', async () => {
    const who = await signIn('octocat');
    const mine = codehostCandidates(['octocat', 'acme-corp'], who.login);
    assert.deepEqual(mine, { login: true, orgs: [] });
    assert.equal(codehostAdmits(['octocat', 'acme-corp'], who.login, new Set()), true);

    for (const [policy, admitted] of [
      [['acme-corp'], true],
      [['invited-org'], false],
      [['locked-org'], false],
      [['stranger-org', 'hubot'], false],
    ] as const) {
      const c = codehostCandidates(policy, who.login);
      const active = await client.activeMemberships(who.token, c.orgs);
      assert.equal(codehostAdmits(policy, who.login, active), admitted, policy.join(','));
    }
  });

  it('refuses an exchange with a wrong client secret', async () => {
    const wrong = new GitHubCodehost({ ...settings(), clientSecret: 'not-the-secret' });
    const code = await authorize('octocat', wrong);
    await refused(wrong.finish(code, redirectUri), 'invalid', /refused: incorrect_client_credentials/);
  });

  it('lets a code be exchanged once', async () => {
    const code = await authorize('octocat');
    await client.finish(code, redirectUri);
    await refused(client.finish(code, redirectUri), 'invalid', /refused: bad_verification_code/);
  });

  it('refuses a code exchanged with another redirect URI than it was issued for', async () => {
    const code = await authorize('octocat');
    await refused(client.finish(code, `${redirectUri}/elsewhere`), 'invalid', /refused: redirect_uri_mismatch/);
  });

  it('reports a declined authorization as denied', async () => {
    const { url, state } = client.start({ redirectUri });
    const back = await gh.signIn(url, 'octocat', { decline: true });
    assert.throws(
      () => codehostCallback(back, state),
      (err: unknown) => err instanceof CodehostError && err.reason === 'denied' && /access_denied/.test(err.message),
    );
  });

  it('refuses a token the provider does not know', async () => {
    await refused(
      client.activeMemberships('gho_revoked', ['acme-corp']),
      'invalid',
      /401 \(Bad credentials\): the access token is not valid/,
    );
  });

  it('reports rate limiting as unavailable rather than as not a member', async () => {
    const who = await signIn('octocat');
    gh.setRateLimited(true);
    try {
      await refused(client.activeMemberships(who.token, ['acme-corp']), 'unavailable', /403 \(API rate limit exceeded.*\): rate limited/);
    } finally {
      gh.setRateLimited(false);
    }
  });
});

describe('code-host provider unreachable', () => {
  let silent: Server;
  const sockets = new Set<Socket>();
  let port = 0;
  before(async () => {
    // Accepts connections and never answers.
    silent = createServer((s) => void sockets.add(s));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    port = (silent.address() as { port: number }).port;
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  });

  it('gives up on a silent provider after the timeout', async () => {
    const c = new GitHubCodehost(
      { url: `http://127.0.0.1:${port}`, apiUrl: `http://127.0.0.1:${port}/api/v3`, clientId: 'x', clientSecret: 'y' },
      { timeoutMs: 300 },
    );
    const t0 = Date.now();
    await refused(c.finish('code', redirectUri), 'unavailable', /code host token exchange: no answer within 300 ms/);
    assert.ok(Date.now() - t0 < 3000);
  });

  it('says which request failed when nothing listens', async () => {
    const down = await startTestCodehost();
    await down.close();
    const c = new GitHubCodehost({ url: down.url, apiUrl: down.apiUrl, clientId: 'x', clientSecret: 'y' });
    await refused(c.activeMemberships('gho_x', ['acme']), 'unavailable', /code host membership of acme: fetch failed: .*ECONNREFUSED/);
  });
});
