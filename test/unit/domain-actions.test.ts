// What the API decides about custom domains (api/domains/actions.ts), on fakes of the claims table,
// the Domain resources and DNS: a name refused before anything is written, a name held elsewhere a
// conflict, limits under the account's lock, adding twice idempotent, a failed write leaving no
// claim, and a check writing the status, the schedule and the event the lifecycle decides.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DomainActions } from '../../api/domains/actions.js';
import type { AppRecord } from '../../api/repositories/app-record.js';
import { domainRecord, type DomainRecord, type StatusPatch } from '../../api/repositories/domains.js';
import type { Actor } from '../../api/deploys/actions.js';
import type { DomainClaim } from '../../lib/domains/claims.js';
import { DnsUnavailableError, type DomainCheck } from '../../lib/domains/check.js';
import type { Domain } from '../../lib/resources/index.js';
import { createLogger } from '../../lib/logger.js';
import { refusalOf } from '../support/answers.js';
import { FakeLock } from '../support/fake-lock.js';

const actor: Actor = { accountId: 'acc_1', namespace: 'acct-1', createdBy: 'token:t1' };
const app = { id: 'uid-web', name: 'web', namespace: 'acct-1' } as AppRecord;
const now = new Date('2026-11-27T12:00:00Z');

class FakeClaims {
  readonly rows = new Map<string, DomainClaim>();
  readonly scheduled: Array<{ name: string; nextCheckAt: Date }> = [];
  async tokenOf(accountId: string) {
    return `token-of-${accountId}`;
  }
  async get(name: string) {
    return this.rows.get(name);
  }
  async counts(accountId: string, a: string) {
    const mine = [...this.rows.values()].filter((r) => r.accountId === accountId);
    return { account: mine.length, app: mine.filter((r) => r.app === a).length };
  }
  async claim(c: { name: string; accountId: string; namespace: string; app: string; now: Date; firstCheckAt: Date }) {
    if (!this.rows.has(c.name))
      this.rows.set(c.name, { ...c, createdAt: c.now, nextCheckAt: c.firstCheckAt, backoffMs: 0, verifiedAt: undefined });
    return this.rows.get(c.name)!;
  }
  async release(name: string, accountId: string) {
    if (this.rows.get(name)?.accountId === accountId) this.rows.delete(name);
  }
  async schedule(name: string, s: { nextCheckAt: Date; backoffMs: number; verifiedAt: Date | undefined }) {
    this.scheduled.push({ name, nextCheckAt: s.nextCheckAt });
    const row = this.rows.get(name);
    if (row) this.rows.set(name, { ...row, ...s });
  }
}

class FakeDomains {
  readonly items = new Map<string, Domain>();
  failCreate = false;
  readonly statuses: StatusPatch[] = [];
  list(namespace: string, a?: string): DomainRecord[] {
    return [...this.items.values()].filter((d) => d.metadata.namespace === namespace && (!a || d.spec.app === a)).map(domainRecord);
  }
  get(namespace: string, domain: string) {
    const d = this.items.get(`${namespace}/${domain}`);
    return d && domainRecord(d);
  }
  async create(namespace: string, domain: string, owner: { name: string }) {
    if (this.failCreate) throw new Error('apiserver down');
    const d: Domain = {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Domain',
      metadata: { name: `d-${domain.length}`, namespace, creationTimestamp: now, resourceVersion: '1' },
      spec: { domain, app: owner.name },
    };
    this.items.set(`${namespace}/${domain}`, d);
    return domainRecord(d);
  }
  async delete(namespace: string, domain: string) {
    this.items.delete(`${namespace}/${domain}`);
  }
  /** The cache lags the apiserver: a status written is answered, not yet read back. */
  cacheLags = false;
  async writeStatus(namespace: string, domain: string, status: StatusPatch) {
    this.statuses.push(status);
    const d = this.items.get(`${namespace}/${domain}`)!;
    const written: Domain = { ...d, status: JSON.parse(JSON.stringify(status)) as Domain['status'] };
    if (!this.cacheLags) this.items.set(`${namespace}/${domain}`, written);
    return domainRecord(written);
  }
}

function setup(o: { perApp?: number; perAccount?: number; check?: () => Promise<DomainCheck> } = {}) {
  const claims = new FakeClaims();
  const domains = new FakeDomains();
  const lock = new FakeLock();
  const events: Array<[string, string, Record<string, unknown>]> = [];
  const right: DomainCheck = { records: [], ownership: true, routing: true, reason: 'Verified', message: 'ok' };
  const actions = new DomainActions({
    domains,
    claims,
    lock,
    events: { record: async (_a, type, subject, data) => void events.push([type, subject, data ?? {}]) },
    check: o.check ?? (async () => right),
    settings: {
      appsDomain: 'apps.localhost',
      edgeAddresses: [],
      perApp: o.perApp ?? 20,
      perAccount: o.perAccount ?? 100,
      recheckMs: 600_000,
    },
    log: createLogger('test', 'silent'),
    clock: () => now,
  });
  return { actions, claims, domains, lock, events };
}

describe('DomainActions.add', () => {
  it('claims the name, makes its resource, tells domain.added, and answers the records to publish', async () => {
    const t = setup();
    const { view, created } = await t.actions.add(actor, app, 'WWW.Shop.Example.');
    assert.equal(created, true);
    assert.equal(view.domain.name, 'www.shop.example');
    assert.deepEqual(
      view.expected.map((e) => [e.type, e.name, e.value]),
      [
        ['TXT', '_svc-challenge.www.shop.example', 'svc-verify=token-of-acc_1'],
        ['CNAME', 'www.shop.example', 'web.apps.localhost'],
      ],
    );
    assert.equal(t.claims.rows.get('www.shop.example')?.nextCheckAt.getTime(), now.getTime() + 2000, 'first check in 2 s');
    assert.deepEqual(t.events, [['domain.added', 'web', { domain: 'www.shop.example', app: 'web' }]]);
    assert.equal(t.lock.holds, 1);
  });

  it('answers the domain there when it is added again, telling nothing', async () => {
    const t = setup();
    await t.actions.add(actor, app, 'www.shop.example');
    const again = await t.actions.add(actor, app, 'www.shop.example');
    assert.equal(again.created, false);
    assert.equal(t.events.length, 1);
  });

  it('refuses a name held by another account or another app of the account, writing nothing', async () => {
    const t = setup();
    await t.claims.claim({ name: 'www.taken.example', accountId: 'acc_2', namespace: 'acct-2', app: 'x', now, firstCheckAt: now });
    const err = await refusalOf(() => t.actions.add(actor, app, 'www.taken.example'));
    assert.deepEqual([err.kind, err.message], ['conflict', 'www.taken.example is held by another account']);
    await t.claims.claim({ name: 'www.mine.example', accountId: 'acc_1', namespace: 'acct-1', app: 'api', now, firstCheckAt: now });
    const other = await refusalOf(() => t.actions.add(actor, app, 'www.mine.example'));
    assert.deepEqual([other.kind, other.message], ['conflict', 'www.mine.example is already a domain of app api']);
    assert.deepEqual([t.domains.items.size, t.events.length], [0, 0]);
  });

  it('refuses names that are not domains before taking the lock, and an apex without edge addresses', async () => {
    const t = setup();
    const err = await refusalOf(() => t.actions.add(actor, app, '127.0.0.1'));
    assert.equal(err.kind, 'invalid');
    assert.match(err.message, /^"127\.0\.0\.1" is not a domain the platform can serve: /);
    const apex = await refusalOf(() => t.actions.add(actor, app, 'shop.example'));
    assert.equal(apex.kind, 'invalid');
    assert.equal(t.lock.holds, 0);
  });

  it('refuses a name over the app’s or the account’s limit', async () => {
    const t = setup({ perApp: 1, perAccount: 2 });
    await t.actions.add(actor, app, 'a.shop.example');
    const perApp = await refusalOf(() => t.actions.add(actor, app, 'b.shop.example'));
    assert.deepEqual([perApp.kind, perApp.message], ['quota_exceeded', 'app web has 1 domains, its limit is 1; remove one first']);
    await t.actions.add(actor, { ...app, name: 'api', id: 'uid-api' }, 'c.shop.example');
    const perAccount = await refusalOf(() => t.actions.add(actor, { ...app, name: 'blog' }, 'd.shop.example'));
    assert.match(perAccount.message, /the account has 2 domains, its limit is 2/);
  });

  it('leaves no claim when its resource cannot be made', async () => {
    const t = setup();
    t.domains.failCreate = true;
    await assert.rejects(t.actions.add(actor, app, 'www.shop.example'), /apiserver down/);
    assert.equal(t.claims.rows.size, 0);
    assert.equal(t.events.length, 0);
  });
});

describe('DomainActions checks', () => {
  it('writes what a check found: the status, the Verified condition, the next check, and the event', async () => {
    const t = setup();
    await t.actions.add(actor, app, 'www.shop.example');
    await t.actions.checkClaim(t.claims.rows.get('www.shop.example')!);
    const status = t.domains.statuses.at(-1)!;
    assert.equal(status.phase, 'Verified');
    assert.equal(status.conditions?.[0]?.status, 'True');
    assert.equal(status.nextCheckAt, new Date(now.getTime() + 600_000).toISOString());
    assert.deepEqual(t.events.at(-1), ['domain.verified', 'web', { domain: 'www.shop.example', app: 'web', reason: status.message }]);
  });

  it('answers a verify with what its check wrote, though the cache has not caught up', async () => {
    const t = setup();
    await t.actions.add(actor, app, 'www.shop.example');
    t.domains.cacheLags = true;
    const view = await t.actions.verify(actor, app, 'www.shop.example');
    assert.equal(view.record.phase, 'Verified');
    assert.equal(t.domains.get(actor.namespace, 'www.shop.example')?.phase, 'Pending', 'the cache as it still was');
  });

  it('keeps the status when DNS does not answer, and tries again in 30 s', async () => {
    const t = setup({
      check: async () => {
        throw new DnsUnavailableError('TXT _svc-challenge.www.shop.example', 'ESERVFAIL', undefined);
      },
    });
    await t.actions.add(actor, app, 'www.shop.example');
    await t.actions.checkClaim(t.claims.rows.get('www.shop.example')!);
    assert.equal(t.domains.statuses.length, 0);
    assert.deepEqual(t.claims.scheduled.at(-1)?.nextCheckAt, new Date(now.getTime() + 30_000));
    const verify = await refusalOf(() => t.actions.verify(actor, app, 'www.shop.example'));
    assert.equal(verify.kind, 'unavailable');
  });

  it('drops the claim of a domain whose resource went (its App deleted)', async () => {
    const t = setup();
    await t.actions.add(actor, app, 'www.shop.example');
    const claim = t.claims.rows.get('www.shop.example')!;
    t.domains.items.clear();
    await t.actions.checkClaim(claim);
    assert.equal(t.claims.rows.size, 0);
  });

  it('removes a domain: its resource, then its claim, told as domain.removed; another app’s name is not found', async () => {
    const t = setup();
    await t.actions.add(actor, app, 'www.shop.example');
    const missing = await refusalOf(() => t.actions.remove(actor, { ...app, name: 'api' }, 'www.shop.example'));
    assert.equal(missing.kind, 'not_found');
    await t.actions.remove(actor, app, 'www.shop.example');
    assert.deepEqual([t.domains.items.size, t.claims.rows.size], [0, 0]);
    assert.deepEqual(t.events.at(-1), ['domain.removed', 'web', { domain: 'www.shop.example', app: 'web' }]);
  });
});
