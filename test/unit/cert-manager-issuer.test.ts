// The cert-manager worker (api/certificates/cert-manager.ts) on fakes of the Certificates' cache, the
// apiserver, the Domains and their claims: nothing is decided on a replica that does not lead, nor
// before the Certificates were listed; a verified domain's Certificate is server-side applied and its
// status written whole (absent fields null); cert-manager's Ready becomes Issued with one event;
// removing a domain deletes its Certificate (as observed: preconditions, a 409 left to the next pass)
// and then its Secret, only the one made for that namespace.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { CertManagerIssuer, type CertificateCache } from '../../api/certificates/cert-manager.js';
import { domainRecord, type StatusPatch } from '../../api/repositories/domains.js';
import type { CertManagerCertificate } from '../../lib/certificates/cert-manager-plan.js';
import { certificateAnnotations, certificateLabel, certificateSecretName } from '../../lib/certificates/contract.js';
import type { ObservedClaim } from '../../lib/certificates/plan.js';
import type { ComponentConfig } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import type { Domain, DomainStatus } from '../../lib/resources/index.js';

const namespace = 'svc-certificates';
const issuerRef = { kind: 'ClusterIssuer', name: 'letsencrypt', group: 'cert-manager.io' };
const config: ComponentConfig<'api'>['certificates'] = {
  namespace,
  platformSecret: undefined,
  platformDns01: undefined,
  issuer: 'cert-manager',
  certManager: { issuerRef },
  acme: {
    directoryUrl: undefined,
    contact: undefined,
    eab: undefined,
    caFile: undefined,
    accountSecret: { namespace, name: 'svc-acme-account' },
    http01CheckUrl: undefined,
    limits: { certificatesPerDomainWeek: 50, failedValidationsPerHour: 5, ordersPer3h: 300 },
    dns01: undefined,
  },
};

const notFound = () => new k8s.ApiException(404, 'not found', {}, {});

class FakeCache implements CertificateCache {
  items: CertManagerCertificate[] = [];
  listed = false;
  start = async () => undefined;
  stop = async () => undefined;
  synced = () => this.listed;
  list = () => this.items;
  onChange(): void {}
}

class FakeCustom {
  readonly applied: CertManagerCertificate[] = [];
  readonly deleted: string[] = [];
  readonly preconditions: unknown[] = [];
  private writes = 0;
  constructor(private readonly cache: FakeCache) {}
  async listNamespacedCustomObject(): Promise<never> {
    throw new Error('not used: the cache is read');
  }
  async patchNamespacedCustomObject(p: {
    namespace: string;
    name: string;
    body: CertManagerCertificate;
    fieldManager?: string;
    force?: boolean;
  }) {
    assert.equal(p.namespace, namespace);
    assert.equal(p.fieldManager, 'svc-api');
    assert.equal(p.force, true);
    this.applied.push(p.body);
    const stored = structuredClone(p.body);
    stored.metadata = { ...stored.metadata, uid: `uid-${p.name}`, resourceVersion: String(++this.writes) };
    this.cache.items = [...this.cache.items.filter((c) => c.metadata.name !== p.name), stored];
    return p.body;
  }
  /** The apiserver's Certificate is the cache's unless a test says it changed since. */
  readonly current = new Map<string, string>();
  async deleteNamespacedCustomObject(p: { name: string; body?: { preconditions?: { uid?: string; resourceVersion?: string } } }) {
    this.deleted.push(p.name);
    this.preconditions.push(p.body?.preconditions);
    const c = this.cache.items.find((x) => x.metadata.name === p.name);
    if (!c) throw notFound();
    const rv = this.current.get(p.name) ?? c.metadata.resourceVersion;
    if (p.body?.preconditions?.resourceVersion !== rv) throw new k8s.ApiException(409, 'conflict', {}, {});
    this.cache.items = this.cache.items.filter((x) => x !== c);
    return {};
  }
}

class FakeCore {
  readonly secrets = new Map<string, k8s.V1Secret>();
  readonly deleted: Array<{ name: string; preconditions: unknown }> = [];
  async listNamespacedSecret(p: { namespace: string; labelSelector?: string }) {
    assert.equal(p.labelSelector, `${certificateLabel}=cert-manager`);
    return { items: [...this.secrets.values()] } as k8s.V1SecretList;
  }
  async readNamespacedSecret(p: { name: string }) {
    const s = this.secrets.get(p.name);
    if (!s) throw notFound();
    return s;
  }
  async deleteNamespacedSecret(p: { name: string; body?: { preconditions?: unknown } }) {
    this.deleted.push({ name: p.name, preconditions: p.body?.preconditions });
    if (!this.secrets.delete(p.name)) throw notFound();
    return {};
  }
}

class FakeDomains {
  readonly items: Domain[] = [];
  readonly writes: Array<{ domain: string; status: StatusPatch }> = [];
  add(domain: string, phase: NonNullable<DomainStatus['phase']> = 'Verified') {
    this.items.push({
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Domain',
      metadata: { name: `d-${this.items.length}`, namespace: 'acct-1', creationTimestamp: new Date(), resourceVersion: '1' },
      spec: { domain, app: 'web' },
      status: { phase },
    });
  }
  list() {
    return this.items.map(domainRecord);
  }
  async writeStatus(ns: string, domain: string, status: StatusPatch) {
    this.writes.push({ domain, status });
    const d = this.items.find((x) => x.spec.domain === domain && x.metadata.namespace === ns)!;
    d.status = { ...d.status, ...(status as DomainStatus) };
    return domainRecord(d);
  }
}

function setup() {
  const cache = new FakeCache();
  const custom = new FakeCustom(cache);
  const core = new FakeCore();
  const domains = new FakeDomains();
  const claims = new Map<string, ObservedClaim>();
  const events: Array<{ type: string; data: unknown }> = [];
  const leader = { leading: true };
  const issuer = new CertManagerIssuer({
    config,
    kc: undefined as never,
    core,
    custom,
    certificates: cache,
    domains,
    claims: async (names) => new Map([...claims].filter(([n]) => names.includes(n))),
    events: { record: async (_account, type, _subject, data) => void events.push({ type, data }) },
    log: createLogger('test', 'silent'),
    isLeader: () => leader.leading,
    clock: () => new Date('2026-12-01T00:00:00Z'),
  });
  return { cache, custom, core, domains, claims, events, issuer, leader };
}

describe('cert-manager worker', () => {
  it('decides nothing on a replica that does not lead, and acts once it leads', async () => {
    const t = setup();
    t.cache.listed = true;
    t.leader.leading = false;
    t.domains.add('shop.example');
    t.claims.set('shop.example', { namespace: 'acct-1', accountId: 'acc-1', verified: true });
    const r = await t.issuer.pass();
    assert.deepEqual(r, { applied: [], deleted: [], statuses: [], synced: false, leading: false });
    assert.deepEqual([t.custom.applied, t.domains.writes, t.events], [[], [], []]);
    t.leader.leading = true;
    const led = await t.issuer.pass();
    assert.deepEqual([led.leading, led.applied], [true, ['shop.example']]);
  });

  it('decides nothing before the Certificates were listed', async () => {
    const t = setup();
    t.domains.add('shop.example');
    t.claims.set('shop.example', { namespace: 'acct-1', accountId: 'acc-1', verified: true });
    const r = await t.issuer.pass();
    assert.equal(r.synced, false);
    assert.deepEqual([t.custom.applied, t.domains.writes], [[], []]);
  });

  it('applies a verified domain’s Certificate, says Pending, then Issued with one event once cert-manager reports Ready', async () => {
    const t = setup();
    t.cache.listed = true;
    t.domains.add('shop.example');
    t.domains.add('pending.example', 'Pending');
    t.claims.set('shop.example', { namespace: 'acct-1', accountId: 'acc-1', verified: true });
    const first = await t.issuer.pass();
    assert.deepEqual(first.applied, ['shop.example']);
    assert.equal(t.custom.applied[0]?.spec?.issuerRef?.name, 'letsencrypt');
    const pending = t.domains.writes[0]!.status.certificate!;
    assert.equal(pending.phase, 'Pending');
    assert.equal(pending.notAfter, null, 'a status is written whole: what it leaves out is removed');

    assert.deepEqual((await t.issuer.pass()).applied, [], 'unchanged: not written again');

    t.cache.items[0]!.status = {
      conditions: [{ type: 'Ready', status: 'True', reason: 'Ready' }],
      notAfter: '2027-02-01T00:00:00Z',
      renewalTime: '2027-01-01T00:00:00Z',
    };
    await t.issuer.pass();
    await t.issuer.pass();
    const issued = t.domains.writes.at(-1)!.status.certificate!;
    assert.deepEqual([issued.phase, issued.reason, issued.notAfter], ['Issued', 'Issued', '2027-02-01T00:00:00.000Z']);
    assert.deepEqual(
      t.events.map((e) => e.type),
      ['certificate.issued'],
    );
  });

  it('deletes the Certificate of a name no longer verified as it observed it', async () => {
    const t = setup();
    t.cache.listed = true;
    t.domains.add('shop.example');
    t.claims.set('shop.example', { namespace: 'acct-1', accountId: 'acc-1', verified: true });
    await t.issuer.pass();
    t.claims.delete('shop.example');
    const r = await t.issuer.pass();
    assert.deepEqual(r.deleted, ['shop.example']);
    assert.deepEqual(t.custom.preconditions, [{ uid: `uid-${certificateSecretName('shop.example')}`, resourceVersion: '1' }]);
  });

  it('removing a domain deletes its Certificate, then its Secret, only the one made for that namespace', async () => {
    const t = setup();
    t.cache.listed = true;
    const name = certificateSecretName('shop.example');
    t.domains.add('shop.example');
    t.claims.set('shop.example', { namespace: 'acct-1', accountId: 'acc-1', verified: true });
    await t.issuer.pass();
    const secret = (ns: string): k8s.V1Secret => ({
      metadata: {
        name,
        uid: 'u1',
        resourceVersion: '7',
        annotations: { [certificateAnnotations.domain]: 'shop.example', [certificateAnnotations.namespace]: ns },
      },
    });
    t.core.secrets.set(name, secret('acct-other'));
    // Changed since the cache saw it (cert-manager wrote its status): not deleted on a stale view.
    t.custom.current.set(name, 'newer');
    await t.issuer.remove('shop.example', 'acct-1');
    assert.deepEqual(t.custom.preconditions, [{ uid: `uid-${name}`, resourceVersion: '1' }]);
    assert.equal(t.cache.items.length, 1, 'a 409 is left to the next pass');
    t.custom.current.delete(name);
    await t.issuer.remove('shop.example', 'acct-1');
    assert.deepEqual(t.custom.deleted, [name, name]);
    assert.equal(t.cache.items.length, 0);
    assert.deepEqual(t.core.deleted, [], 'another namespace’s Secret of the name is left');
    t.core.secrets.set(name, secret('acct-1'));
    await t.issuer.remove('shop.example', 'acct-1');
    assert.deepEqual(t.core.deleted, [{ name, preconditions: { resourceVersion: '7', uid: 'u1' } }]);
  });
});
