// ingress-auth's one gate (ingress-auth/gate.ts): the verdict for a request from the policy's
// decision and the visitor's session, the same for plain requests and WebSocket upgrades; and which
// policies are in force while a rollout has not settled.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CurrentSession } from '../../ingress-auth/auth/routes.js';
import { decisionsFor, gate, gateAll, type GateRequest } from '../../ingress-auth/gate.js';
import type { Session } from '../../lib/auth/sessions.js';
import { decide, type AuthPolicy } from '../../lib/policy/index.js';
import type { App } from '../../lib/resources/index.js';

const ownerOnly: AuthPolicy = { rules: [{ mode: 'auth', paths: ['/private/**'], admit: { owner: true } }] };
const decisionOf = (policy: AuthPolicy, path: string) => decide(policy, path)!;
const request = (over: Partial<GateRequest> = {}): GateRequest => ({
  method: 'GET',
  headers: { accept: 'text/html', 'sec-fetch-mode': 'navigate' },
  url: '/private/x',
  namespace: 'acct',
  upgrade: false,
  ...over,
});
const sessionOf = (namespace: string): CurrentSession => ({
  token: 't',
  session: { identity: { provider: 'svc', subject: 'u1', email: 'o@example.test', facts: { namespace } } } as unknown as Session,
});

describe('gate', () => {
  const d = decisionOf(ownerOnly, '/private/x');

  it('forwards a path no policy covers, with no identity', () => {
    assert.deepEqual(gate(undefined, undefined, request()), { kind: 'forward', identity: false, personal: false });
  });

  it('sends a person without a session to sign in, and answers a script 401', () => {
    assert.deepEqual(gate(d, undefined, request()), { kind: 'sign-in', next: '/private/x' });
    assert.deepEqual(gate(d, undefined, request({ headers: { accept: 'application/json' } })), {
      kind: 'unauthenticated',
      next: '/private/x',
    });
  });

  it('never redirects an upgrade, whatever its headers say', () => {
    assert.equal(gate(d, undefined, request({ upgrade: true })).kind, 'unauthenticated');
    assert.equal(gate(d, sessionOf('other'), request({ upgrade: true })).kind, 'forbidden');
  });

  it('refuses a visitor the path does not admit, and forwards one it does, with identity, as a personal answer', () => {
    assert.deepEqual(gate(d, sessionOf('other'), request()), { kind: 'forbidden', navigation: true, next: '/private/x' });
    assert.deepEqual(gate(d, sessionOf('acct'), request()), { kind: 'forward', identity: true, personal: true });
  });

  it('with several policies in force, every one must let the request through', () => {
    const open: AuthPolicy = { rules: [{ mode: 'identity', paths: ['/**'], admit: { owner: true } }] };
    const both = [decisionOf(open, '/private/x'), d];
    assert.equal(gateAll(both, undefined, request()).kind, 'sign-in');
    assert.deepEqual(gateAll(both, sessionOf('acct'), request()), { kind: 'forward', identity: true, personal: true });
    assert.deepEqual(gateAll([], undefined, request()), { kind: 'forward', identity: false, personal: false });
  });
});

describe('the policies in force', () => {
  const app = (spec: Partial<App['spec']>, status?: App['status']): App => ({
    apiVersion: 'svc.dev/v1alpha1',
    kind: 'App',
    metadata: { name: 'site', namespace: 'acct', uid: 'u' },
    spec: { kind: 'static', source: { digest: `sha256:${'a'.repeat(64)}` }, ...spec },
    ...(status ? { status } : {}),
  });
  const live = { revision: 'r1', since: '2026-01-01T00:00:00Z', spec: { kind: 'static', auth: ownerOnly } };

  it('a deploy that drops the policy does not expose the pages still served while its rollout runs or after it failed', () => {
    const failed = app(
      { deployId: 'dep-2' },
      { live, rollout: { revision: 'r2', state: 'Failed', startedAt: '2026-01-01T00:01:00Z', reason: 'ErrImagePull' } },
    );
    assert.equal(decisionsFor(failed, '/private/x')[0]?.mode, 'auth');
    const rolling = app(
      { deployId: 'dep-2' },
      { live, rollout: { revision: 'r2', state: 'Progressing', startedAt: '2026-01-01T00:01:00Z' } },
    );
    assert.equal(decisionsFor(rolling, '/private/x')[0]?.mode, 'auth');
    assert.equal(gateAll(decisionsFor(failed, '/private/x'), undefined, request()).kind, 'sign-in');
  });

  it('once the new revision serves, only its own policy is in force', () => {
    const settled = app(
      { deployId: 'dep-2' },
      {
        live: { ...live, revision: 'r2', spec: { kind: 'static' } },
        rollout: { revision: 'r2', state: 'Live', startedAt: '2026-01-01T00:01:00Z' },
      },
    );
    assert.deepEqual(decisionsFor(settled, '/private/x'), []);
    assert.equal(
      decisionsFor(app({ auth: ownerOnly }), '/private/x')[0]?.mode,
      'auth',
      'an App no controller has reported on yet: its spec',
    );
  });
});
