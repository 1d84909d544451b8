// The pure parts of code-host sign-in (lib/auth/codehost.ts): the authorization URL, the callback
// check, and the policy helpers (which values need a membership check, and what admits).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  CodehostError,
  codehostAdmits,
  codehostCallback,
  codehostCandidates,
  codehostScope,
  GitHubCodehost,
  type CodehostFailure,
} from '../../lib/auth/codehost.js';

const redirectUri = 'http://login.apps.localhost:8081/_svc/auth/codehost/callback';

const refused = (fn: () => unknown, reason: CodehostFailure, message: RegExp) =>
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof CodehostError, `not a CodehostError: ${String(err)}`);
    assert.equal(err.reason, reason);
    assert.match(err.message, message);
    return true;
  });

describe('GitHubCodehost.start', () => {
  const gh = new GitHubCodehost({
    url: 'https://github.com',
    apiUrl: 'https://api.github.com',
    clientId: 'Iv1.abc',
    clientSecret: 'not-sent',
  });

  it('sends the browser to the authorize endpoint with client, callback, state and scopes', () => {
    const { url, state } = gh.start({ redirectUri });
    assert.equal(`${url.origin}${url.pathname}`, 'https://github.com/login/oauth/authorize');
    assert.deepEqual(Object.fromEntries(url.searchParams), {
      client_id: 'Iv1.abc',
      redirect_uri: redirectUri,
      state,
      scope: 'read:user user:email read:org',
    });
    assert.equal(codehostScope, 'read:user user:email read:org');
    assert.match(state, /^[A-Za-z0-9_-]{43}$/);
    assert.doesNotMatch(url.toString(), /not-sent/);
  });

  it('uses a new state for every sign-in', () => {
    assert.notEqual(gh.start({ redirectUri }).state, gh.start({ redirectUri }).state);
  });
});

describe('codehostCallback', () => {
  const at = (q: Record<string, string>) => new URL(`${redirectUri}?${new URLSearchParams(q).toString()}`);

  it('returns the code when the state is this sign-in’s', () => {
    assert.equal(codehostCallback(at({ code: 'c0de', state: 'st4te' }), 'st4te'), 'c0de');
  });
  it('refuses another state, a missing state, or an empty expected state', () => {
    refused(() => codehostCallback(at({ code: 'c0de', state: 'st4tf' }), 'st4te'), 'invalid', /state does not match/);
    refused(() => codehostCallback(at({ code: 'c0de', state: 'st4te-longer' }), 'st4te'), 'invalid', /state does not match/);
    refused(() => codehostCallback(at({ code: 'c0de' }), 'st4te'), 'invalid', /state does not match/);
    refused(() => codehostCallback(at({ code: 'c0de', state: '' }), ''), 'invalid', /state does not match/);
  });
  it('reports a declined authorization as denied, after checking the state', () => {
    refused(
      () =>
        codehostCallback(
          at({ error: 'access_denied', error_description: 'The user has denied your application access.', state: 'st4te' }),
          'st4te',
        ),
      'denied',
      /access_denied \(The user has denied/,
    );
    refused(() => codehostCallback(at({ error: 'access_denied', state: 'forged' }), 'st4te'), 'invalid', /state/);
  });
  it('refuses a callback without a code', () => {
    refused(() => codehostCallback(at({ state: 'st4te' }), 'st4te'), 'invalid', /no code/);
  });
});

describe('codehostCandidates', () => {
  it('needs no membership check when the login itself is listed, whatever its case', () => {
    assert.deepEqual(codehostCandidates(['acme', 'octocat'], 'OctoCat'), { login: true, orgs: [] });
  });
  it('checks every listed value, lowercased and once, for anyone else', () => {
    assert.deepEqual(codehostCandidates(['Acme', 'acme', 'hubot', 'ops-team'], 'octocat'), {
      login: false,
      orgs: ['acme', 'hubot', 'ops-team'],
    });
  });
  it('checks nothing for an empty list', () => {
    assert.deepEqual(codehostCandidates([], 'octocat'), { login: false, orgs: [] });
  });
});

describe('codehostAdmits', () => {
  it('admits any identity of the code host for codehost: true', () => {
    assert.equal(codehostAdmits('any', 'octocat', new Set()), true);
  });
  it('admits the exact login, without case', () => {
    assert.equal(codehostAdmits(['octocat'], 'OctoCat', new Set()), true);
    assert.equal(codehostAdmits(['octocat'], 'octocat2', new Set()), false);
    assert.equal(codehostAdmits(['octo'], 'octocat', new Set()), false);
  });
  it('admits verified active membership of a listed organization, and nothing else', () => {
    assert.equal(codehostAdmits(['Acme'], 'octocat', new Set(['acme'])), true);
    assert.equal(codehostAdmits(['acme'], 'octocat', new Set(['other'])), false);
    assert.equal(codehostAdmits([], 'octocat', new Set(['acme'])), false);
  });
});
