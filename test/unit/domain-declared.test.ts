// Domains declared on an App's spec (api/domains/declared.ts), on fakes of the domain actions and the
// caches: what is added and removed, that a domain added through the API is never removed by the
// spec, that a refusal becomes one Warning Event on the App (not one per resync), and that a
// namespace without an account claims nothing.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DeclaredDomains, planDeclared } from '../../api/domains/declared.js';
import type { DomainRecord } from '../../api/repositories/domains.js';
import { DomainError } from '../../lib/errors.js';
import { createLogger } from '../../lib/logger.js';
import type { App } from '../../lib/resources/index.js';

const present = (name: string, declared: boolean, phase: DomainRecord['phase'] = 'Pending') => ({ name, declared, phase });

describe('domains declared in App.spec.domains', () => {
  it('plans: adds what is declared and missing (or failed), removes only declared ones no longer named', () => {
    assert.deepEqual(planDeclared(['b.example', 'A.example.'], []), { add: ['a.example', 'b.example'], remove: [] });
    assert.deepEqual(planDeclared(['a.example'], [present('a.example', true)]), { add: [], remove: [] });
    assert.deepEqual(planDeclared(['a.example'], [present('a.example', true, 'Failed')]), { add: ['a.example'], remove: [] });
    assert.deepEqual(planDeclared([], [present('a.example', true), present('api.example', false)]), { add: [], remove: ['a.example'] });
    assert.deepEqual(planDeclared(undefined, [present('api.example', false)]), { add: [], remove: [] });
    // Named in the spec while the API added it: kept, not added twice.
    assert.deepEqual(planDeclared(['api.example'], [present('api.example', false)]), { add: [], remove: [] });
  });

  const app = (domains: string[] | undefined): App =>
    ({
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'App',
      metadata: { name: 'web', namespace: 'acct-1', uid: 'uid-web', creationTimestamp: '2026-11-27T00:00:00Z' },
      spec: { ...(domains ? { domains } : {}) },
    }) as unknown as App;

  const harness = (opts: { account?: string; refuse?: Record<string, string>; leading?: () => boolean } = {}) => {
    const domains = new Map<string, { name: string; declared: boolean; phase: DomainRecord['phase'] }>();
    const calls: string[] = [];
    const events: Array<{ type: string; reason: string; message: string; name: string }> = [];
    const sync = new DeclaredDomains({
      apps: { all: () => [], onChange: () => undefined },
      domains: { list: () => [...domains.values()] as unknown as DomainRecord[] },
      actions: {
        add: async (actor, record, name, o) => {
          calls.push(`add ${name} ${actor.accountId} ${record.name} declared=${o?.declared}`);
          const refusal = opts.refuse?.[name];
          if (refusal) throw new DomainError('conflict', refusal);
          domains.set(name, { name, declared: o?.declared === true, phase: 'Pending' });
          return {} as never;
        },
        remove: async (actor, record, name) => {
          calls.push(`remove ${name} ${actor.accountId} ${record.name}`);
          domains.delete(name);
        },
      },
      accountOf: async () => ('account' in opts ? opts.account : 'acc_1'),
      recordEvent: (subject, type, reason, message) => events.push({ type, reason, message, name: subject.name }),
      log: createLogger('test', 'silent'),
      ...(opts.leading ? { isLeader: opts.leading } : {}),
    });
    return { sync, domains, calls, events };
  };

  it('adds declared names as the API would, marked declared, and removes them when the spec drops them', async () => {
    const h = harness();
    h.domains.set('api.example', { name: 'api.example', declared: false, phase: 'Verified' });
    await h.sync.sync(app(['shop.example', 'www.shop.example']));
    assert.deepEqual(h.calls, ['add shop.example acc_1 web declared=true', 'add www.shop.example acc_1 web declared=true']);
    h.calls.length = 0;
    await h.sync.sync(app(['shop.example']));
    assert.deepEqual(h.calls, ['remove www.shop.example acc_1 web'], 'only the declared one dropped; api.example stays');
    h.calls.length = 0;
    await h.sync.sync(app(undefined));
    assert.deepEqual(h.calls, ['remove shop.example acc_1 web']);
    assert.ok(h.domains.has('api.example'));
  });

  it('tells a refusal once as a Warning Event on the App, and again only when it changes', async () => {
    const h = harness({ refuse: { 'taken.example': 'taken.example is held by another account' } });
    await h.sync.sync(app(['taken.example']));
    await h.sync.sync(app(['taken.example']));
    assert.equal(h.events.length, 1);
    assert.deepEqual(h.events[0], {
      type: 'Warning',
      reason: 'DomainRefused',
      message: 'spec.domains taken.example: taken.example is held by another account',
      name: 'web',
    });
    assert.equal(h.calls.length, 2, 'tried at each sync (the name may be free by then)');
  });

  it('a replica that does not lead the Lease neither adds nor tells: the leader does, once', async () => {
    let leading = false;
    const h = harness({ refuse: { 'taken.example': 'taken.example is held by another account' }, leading: () => leading });
    await h.sync.sync(app(['shop.example', 'taken.example']));
    assert.deepEqual([h.calls, h.events], [[], []]);
    leading = true;
    await h.sync.sync(app(['shop.example', 'taken.example']));
    assert.deepEqual(h.calls, ['add shop.example acc_1 web declared=true', 'add taken.example acc_1 web declared=true']);
    assert.equal(h.events.length, 1);
  });

  it('a replica that comes to lead syncs every App at once, not at the next resync', async () => {
    let leading = false;
    const calls: string[] = [];
    const apps = [app(['shop.example'])];
    const sync = new DeclaredDomains({
      apps: { all: () => apps, onChange: () => undefined },
      domains: { list: () => [] },
      actions: {
        add: async (_actor, _record, name) => {
          calls.push(`add ${name}`);
          return {} as never;
        },
        remove: async () => undefined,
      },
      accountOf: async () => 'acc_1',
      recordEvent: () => undefined,
      log: createLogger('test', 'silent'),
      resyncMs: 3_600_000,
      isLeader: () => leading,
    });
    sync.start();
    try {
      await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(calls, [], 'not leading: nothing added');
      leading = true;
      const deadline = Date.now() + 5_000;
      while (!calls.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      assert.deepEqual(calls, ['add shop.example']);
    } finally {
      sync.stop();
    }
  });

  it('claims nothing in a namespace that is no account’s', async () => {
    const h = harness({ account: undefined });
    await h.sync.sync(app(['shop.example']));
    assert.deepEqual(h.calls, []);
  });
});
