// The certificate issuer (api/certificates/issuer.ts, lib/certificates/plan.ts) on fakes of the
// Domains, their claims, the Secrets, the orders' table and the CA: a verified name without a
// certificate is ordered, its Secret and status written and certificate.issued told; an unverified
// name (or one whose claim is not its namespace's) is never ordered; a fresh certificate is left
// alone, one past renewAfter renewed; a refusal of the budget or the CA is Failed with its reason and
// no order; a wildcard is Failed DNS01Unavailable without an order; certificates of names no longer
// verified are deleted.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { CertificateIssuer, readCertificate } from '../../api/certificates/issuer.js';
import { domainRecord, type StatusPatch } from '../../api/repositories/domains.js';
import type acme from 'acme-client';
import {
  addressesOf,
  CertificateError,
  untilServedEverywhere,
  mapAcmeError,
  retryAfterOf,
  validateByDns,
  type ChallengeClient,
  type IssueOptions,
  type IssuedCertificate,
} from '../../lib/certificates/acme.js';
import { decideOrder, type OrderRecord } from '../../lib/certificates/budget.js';
import { dns01Target, platformDns01Name, type DnsProvider } from '../../lib/certificates/dns01.js';
import {
  certificateAnnotations,
  certificateLabel,
  challengeLabel,
  certificateRenewAfterAnnotation,
  certificateSecretName,
} from '../../lib/certificates/contract.js';
import { registeredDomainOf, type BeginAnswer, type OrderBook } from '../../lib/certificates/orders.js';
import { planCertificates, type ObservedClaim, type ObservedDomain, type ObservedSecret } from '../../lib/certificates/plan.js';
import type { ComponentConfig } from '../../lib/config.js';
import { createLogger } from '../../lib/logger.js';
import type { Domain } from '../../lib/resources/index.js';

const day = 24 * 3600_000;
const namespace = 'svc-certificates';

let dir: string;
/** A self-signed certificate of `name`, valid from now for `days` (openssl, as registry-auth.test.ts does). */
function certificate(name: string, days = 90): { certificate: string; key: string } {
  const key = path.join(dir, `${name}.key`);
  const crt = path.join(dir, `${name}.crt`);
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      key,
      '-out',
      crt,
      '-subj',
      `/CN=${name}`,
      '-days',
      String(days),
    ],
    { stdio: 'ignore' },
  );
  return { certificate: readFileSync(crt, 'utf8'), key: readFileSync(key, 'utf8') };
}

before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'certificate-issuer-'));
});
after(() => rmSync(dir, { recursive: true, force: true }));

const config: ComponentConfig<'api'>['certificates'] = {
  namespace,
  platformSecret: undefined,
  platformDns01: undefined,
  issuer: 'acme',
  acme: {
    directoryUrl: 'https://pebble.test/dir',
    contact: undefined,
    eab: undefined,
    caFile: undefined,
    accountSecret: { namespace: 'svc-certificates', name: 'svc-acme-account' },
    http01CheckUrl: undefined,
    limits: { certificatesPerDomainWeek: 50, failedValidationsPerHour: 5, ordersPer3h: 300 },
    dns01: undefined,
  },
};

const notFound = () => new k8s.ApiException(404, 'not found', {}, {});

class FakeCore {
  readonly secrets = new Map<string, k8s.V1Secret>();
  readonly deleted: string[] = [];
  async listNamespacedSecret(p: { namespace: string; labelSelector?: string }) {
    assert.equal(p.namespace, namespace);
    assert.equal(p.labelSelector, `${certificateLabel}=acme`);
    return { items: [...this.secrets.values()].filter((s) => s.metadata?.labels?.[certificateLabel] === 'acme') } as k8s.V1SecretList;
  }
  failPatch = false;
  async patchNamespacedSecret(p: { namespace: string; name: string; body: k8s.V1Secret }) {
    if (this.failPatch) throw new Error('apiserver down');
    this.secrets.set(p.name, JSON.parse(JSON.stringify(p.body)) as k8s.V1Secret);
    return p.body;
  }
  async deleteNamespacedSecret(p: { namespace: string; name: string }) {
    this.deleted.push(p.name);
    if (!this.secrets.delete(p.name)) throw notFound();
    return {};
  }
  readonly reads: string[] = [];
  async readNamespacedSecret(p: { namespace: string; name: string }) {
    assert.equal(p.namespace, namespace);
    this.reads.push(p.name);
    const s = this.secrets.get(p.name);
    if (!s) throw notFound();
    return s;
  }
  async createNamespacedSecret(): Promise<never> {
    throw new Error('not used');
  }
  readonly configMaps: k8s.V1ConfigMap[] = [];
  async listNamespacedConfigMap(p: { namespace: string; labelSelector?: string }) {
    assert.equal(p.namespace, namespace);
    assert.equal(p.labelSelector, challengeLabel);
    return { items: [...this.configMaps] } as k8s.V1ConfigMapList;
  }
  async createNamespacedConfigMap(): Promise<never> {
    throw new Error('not used');
  }
  async deleteNamespacedConfigMap(p: { namespace: string; name: string }) {
    const i = this.configMaps.findIndex((c) => c.metadata?.name === p.name);
    if (i < 0) throw notFound();
    this.configMaps.splice(i, 1);
    return {};
  }
  async createNamespace(): Promise<never> {
    throw new Error('not used');
  }
}

/** Domains as the informer holds them; a status write is a merge patch of what it gives. */
class FakeDomains {
  readonly items: Domain[] = [];
  readonly writes: Array<{ domain: string; status: StatusPatch }> = [];
  add(domain: string, o: { namespace?: string; phase?: 'Pending' | 'Verified' | 'Misconfigured' | 'Failed'; app?: string } = {}) {
    const d: Domain = {
      apiVersion: 'svc.dev/v1alpha1',
      kind: 'Domain',
      metadata: { name: `d-${this.items.length}`, namespace: o.namespace ?? 'acct-1', creationTimestamp: new Date(), resourceVersion: '1' },
      spec: { domain, app: o.app ?? 'web' },
      status: { phase: o.phase ?? 'Verified' },
    };
    this.items.push(d);
    return d;
  }
  list(ns: string) {
    assert.equal(ns, '', 'the issuer reads every namespace');
    return this.items.map(domainRecord);
  }
  async writeStatus(ns: string, domain: string, status: StatusPatch) {
    this.writes.push({ domain, status });
    const d = this.items.find((x) => x.metadata.namespace === ns && x.spec.domain === domain);
    if (!d) return undefined;
    const merged = mergePatch(d.status ?? {}, status) as Domain['status'];
    d.status = merged;
    return domainRecord(d);
  }
  certificateOf(domain: string) {
    return this.items.find((x) => x.spec.domain === domain)?.status?.certificate;
  }
}

function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> = target && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

/** certificate_orders in memory, deciding with the real budget. */
class FakeOrders implements OrderBook {
  readonly rows: Array<OrderRecord & { id: string }> = [];
  async begin(o: Parameters<OrderBook['begin']>[0]): Promise<BeginAnswer> {
    const d = decideOrder({
      domain: o.domain,
      registeredDomain: registeredDomainOf(o.domain),
      rows: this.rows,
      limits: o.limits,
      now: o.now,
      ...(o.observedAt ? { observedAt: o.observedAt } : {}),
    });
    if (!d.allowed) return d;
    const id = String(this.rows.length + 1);
    this.rows.push({
      id,
      domain: o.domain,
      registeredDomain: registeredDomainOf(o.domain),
      startedAt: o.now,
      finishedAt: undefined,
      outcome: 'pending',
      reason: undefined,
      retryAfter: undefined,
    });
    return { allowed: true, id, failuresBefore: 0 };
  }
  async finish(id: string, o: Parameters<OrderBook['finish']>[1]) {
    const r = this.rows.find((x) => x.id === id)!;
    Object.assign(r, { outcome: o.outcome, finishedAt: o.now, reason: o.reason, retryAfter: o.retryAfter });
  }
}

class FakeAcme {
  readonly orders: string[] = [];
  readonly options: IssueOptions[] = [];
  fail: CertificateError | undefined;
  days = 90;
  async issue(domain: string, options: IssueOptions = {}): Promise<IssuedCertificate> {
    this.orders.push(domain);
    this.options.push(options);
    if (domain.startsWith('*.') && !options.dns01Name) throw new Error('a wildcard reached the CA without DNS-01');
    if (this.fail) throw this.fail;
    const c = certificate(domain, this.days);
    const info = readCertificate({ data: { 'tls.crt': Buffer.from(c.certificate).toString('base64'), 'tls.key': 'eA==' } });
    return { ...c, notBefore: info.notBefore!, notAfter: info.notAfter! };
  }
}

function setup(o: { now?: Date; config?: typeof config; isLeader?: () => boolean } = {}) {
  let now = o.now ?? new Date();
  const core = new FakeCore();
  const domains = new FakeDomains();
  const orders = new FakeOrders();
  const acme = new FakeAcme();
  const claims = new Map<string, ObservedClaim>();
  const events: Array<[string, string, string, Record<string, unknown>]> = [];
  const issuer = new CertificateIssuer({
    config: o.config ?? config,
    core,
    domains,
    orders,
    claims: async (names) => new Map([...claims].filter(([n]) => names.includes(n))),
    acme,
    events: { record: async (a, type, subject, data) => void events.push([a, type, subject, data ?? {}]) },
    log: createLogger('test', 'silent'),
    clock: () => now,
    random: () => 0.5,
    ...(o.isLeader ? { isLeader: o.isLeader } : {}),
  });
  /** A Domain of acct-1 and its claim, verified unless told. */
  const domain = (
    name: string,
    phase: 'Pending' | 'Verified' | 'Misconfigured' | 'Failed' = 'Verified',
    claim: Partial<ObservedClaim> | null = {},
  ) => {
    domains.add(name, { phase });
    if (claim)
      claims.set(name, { namespace: 'acct-1', accountId: 'acc_1', verified: phase === 'Verified' || phase === 'Misconfigured', ...claim });
  };
  return { issuer, core, domains, orders, acme, claims, events, domain, setNow: (d: Date) => (now = d) };
}

describe('CertificateIssuer', () => {
  it('orders a verified name without a certificate: the Secret, status Issued, certificate.issued', async () => {
    const t = setup();
    t.domain('shop.example.com');
    const r = await t.issuer.pass();
    assert.deepEqual(r.issued, ['shop.example.com']);
    assert.deepEqual(t.acme.orders, ['shop.example.com']);
    const secret = t.core.secrets.get(certificateSecretName('shop.example.com'))!;
    assert.equal(secret.type, 'kubernetes.io/tls');
    assert.equal(secret.metadata!.labels![certificateLabel], 'acme');
    assert.equal(secret.metadata!.annotations![certificateAnnotations.domain], 'shop.example.com');
    assert.ok(secret.metadata!.annotations![certificateAnnotations.namespace], 'the Domain’s namespace, which ingress-auth matches');
    const info = readCertificate(secret);
    assert.equal(secret.metadata!.annotations![certificateAnnotations.notAfter], info.notAfter!.toISOString());
    // renewAfter drawn once (random 0.5: a third and a twentieth of the lifetime before the end), kept on the Secret.
    const lifetime = info.notAfter!.getTime() - info.notBefore!.getTime();
    assert.equal(info.renewAfter!.getTime(), info.notAfter!.getTime() - lifetime / 3 - lifetime / 20);
    assert.equal(secret.metadata!.annotations![certificateRenewAfterAnnotation], info.renewAfter!.toISOString());
    const status = t.domains.certificateOf('shop.example.com')!;
    assert.equal(status.phase, 'Issued');
    assert.equal(status.secretName, certificateSecretName('shop.example.com'));
    assert.equal(status.notAfter, info.notAfter!.toISOString());
    assert.equal(status.renewAfter, info.renewAfter!.toISOString());
    assert.deepEqual(
      t.events.map(([a, type, subject]) => [a, type, subject]),
      [['acc_1', 'certificate.issued', 'web']],
    );
    assert.deepEqual(
      t.orders.rows.map((x) => x.outcome),
      ['issued'],
    );
    // Every status write was of status.certificate alone (the verifier owns the rest).
    assert.ok(t.domains.writes.every((w) => Object.keys(w.status).join() === 'certificate'));
    // Fresh now: the next pass orders nothing and writes nothing.
    const writes = t.domains.writes.length;
    const again = await t.issuer.pass();
    assert.deepEqual(again, { issued: [], renewed: [], failed: [], refused: [], deleted: [] });
    assert.equal(t.acme.orders.length, 1);
    assert.equal(t.domains.writes.length, writes);
  });

  it("never orders a name that is not verified, nor one whose claim is not its namespace's", async () => {
    const t = setup();
    t.domain('pending.example.com', 'Pending');
    t.domain('misconfigured.example.com', 'Misconfigured');
    t.domain('unclaimed.example.com', 'Verified', null);
    t.domain('elsewhere.example.com', 'Verified', { namespace: 'acct-2' });
    t.domain('unverified-claim.example.com', 'Verified', { verified: false });
    const r = await t.issuer.pass();
    assert.deepEqual(t.acme.orders, []);
    assert.deepEqual(t.orders.rows, []);
    assert.deepEqual(r, { issued: [], renewed: [], failed: [], refused: [], deleted: [] });
    assert.deepEqual(t.events, []);
  });

  it('renews a certificate past its renewAfter (certificate.renewed), and leaves a fresh one alone', async () => {
    const t = setup();
    t.domain('shop.example.com');
    await t.issuer.pass();
    const first = readCertificate(t.core.secrets.get(certificateSecretName('shop.example.com'))!);
    t.setNow(new Date(first.renewAfter!.getTime() - 60_000));
    await t.issuer.pass();
    assert.equal(t.acme.orders.length, 1, 'fresh a minute before renewAfter');
    t.setNow(new Date(first.renewAfter!.getTime() + 60_000));
    const r = await t.issuer.pass();
    assert.deepEqual(r.renewed, ['shop.example.com']);
    assert.equal(t.acme.orders.length, 2);
    assert.deepEqual(
      t.events.map(([, type]) => type),
      ['certificate.issued', 'certificate.renewed'],
    );
    assert.deepEqual(
      t.orders.rows.map((x) => x.outcome),
      ['issued', 'renewed'],
    );
    assert.equal(t.domains.certificateOf('shop.example.com')!.reason, 'Renewed');
  });

  it('a refusal of the budget: status Failed with its reason and when, no order, told once', async () => {
    const t = setup();
    t.domain('shop.example.com');
    const retryAfter = new Date(Date.now() + 3600_000);
    t.orders.rows.push({
      id: 'old',
      domain: 'shop.example.com',
      registeredDomain: 'example.com',
      startedAt: new Date(Date.now() - 600_000),
      finishedAt: new Date(Date.now() - 590_000),
      outcome: 'failed',
      reason: 'ValidationFailed',
      retryAfter,
    });
    const r = await t.issuer.pass();
    assert.deepEqual(r.refused, [{ domain: 'shop.example.com', reason: 'BackingOff', until: retryAfter }]);
    assert.deepEqual(t.acme.orders, []);
    const status = t.domains.certificateOf('shop.example.com')!;
    assert.equal(status.phase, 'Failed');
    assert.equal(status.reason, 'BackingOff');
    assert.equal(status.retryAfter, retryAfter.toISOString());
    await t.issuer.pass();
    assert.deepEqual(
      t.events.map(([, type, , data]) => [type, data.reason]),
      [['certificate.failed', 'BackingOff']],
    );
  });

  it("a failure of the CA: status Failed with the CA's detail, a back-off of 1 h, certificate.failed", async () => {
    const now = new Date();
    const t = setup({ now });
    t.domain('shop.example.com');
    t.acme.fail = new CertificateError(
      'failed',
      'ValidationFailed',
      'the CA could not validate shop.example.com by http-01: connection refused',
    );
    const r = await t.issuer.pass();
    assert.deepEqual(
      r.failed.map((f) => f.reason),
      ['ValidationFailed'],
    );
    const status = t.domains.certificateOf('shop.example.com')!;
    assert.equal(status.phase, 'Failed');
    assert.match(status.message!, /connection refused/);
    assert.equal(status.retryAfter, new Date(now.getTime() + 3600_000).toISOString());
    assert.deepEqual(
      t.orders.rows.map((x) => [x.outcome, x.reason]),
      [['failed', 'ValidationFailed']],
    );
    assert.deepEqual(
      t.events.map(([, type]) => type),
      ['certificate.failed'],
    );
    assert.equal(t.core.secrets.size, 0);
    // Retried only after the back-off.
    await t.issuer.pass();
    assert.equal(t.acme.orders.length, 1);
  });

  it("the CA's rate limit: refused with its Retry-After, no Secret", async () => {
    const t = setup();
    t.domain('shop.example.com');
    const until = new Date(Date.now() + 5 * 3600_000);
    t.acme.fail = new CertificateError('refused', 'RateLimited', 'the CA refused creating the order: too many certificates', until, false);
    const r = await t.issuer.pass();
    assert.deepEqual(r.refused, [{ domain: 'shop.example.com', reason: 'RateLimited', until }]);
    assert.deepEqual(
      t.orders.rows.map((x) => [x.outcome, x.retryAfter?.toISOString()]),
      [['refused', until.toISOString()]],
    );
    assert.equal(t.domains.certificateOf('shop.example.com')!.reason, 'RateLimited');
  });

  it('a certificate issued but not kept (the Secret write failed) still counts, and is ordered again after an hour, not every pass', async () => {
    const t = setup();
    t.domain('shop.example.com');
    t.core.failPatch = true;
    const r = await t.issuer.pass();
    assert.deepEqual(r.issued, []);
    assert.deepEqual(
      t.orders.rows.map((x) => x.outcome),
      ['issued'],
    );
    t.core.failPatch = false;
    t.setNow(new Date(Date.now() + 1000));
    assert.deepEqual((await t.issuer.pass()).issued, [], 'not at the next pass');
    t.setNow(new Date(Date.now() + 3600_000 + 2000));
    assert.deepEqual((await t.issuer.pass()).issued, ['shop.example.com']);
    assert.deepEqual(
      t.orders.rows.map((x) => x.outcome),
      ['issued', 'issued'],
    );
    assert.equal(t.core.secrets.size, 1);
  });

  it('a wildcard is Failed DNS01Unavailable without an order, told once', async () => {
    const t = setup();
    t.domain('*.shop.example.com');
    const r = await t.issuer.pass();
    assert.deepEqual(
      r.failed.map((f) => f.reason),
      ['DNS01Unavailable'],
    );
    assert.deepEqual(t.acme.orders, []);
    assert.deepEqual(t.orders.rows, []);
    const status = t.domains.certificateOf('*.shop.example.com')!;
    assert.equal(status.phase, 'Failed');
    assert.equal(status.reason, 'DNS01Unavailable');
    assert.match(status.message!, /wildcard certificates need a DNS provider \(RFC 2136\), not configured/);
    await t.issuer.pass();
    assert.deepEqual(
      t.events.map(([, type, , data]) => [type, data.reason]),
      [['certificate.failed', 'DNS01Unavailable']],
    );
  });

  it('with DNS-01, a wildcard waits for its delegation (told once, what to publish), then is ordered at its target', async () => {
    const zone = 'acme.platform.test';
    const dns01 = {
      zone,
      server: { host: '127.0.0.1', port: 53 },
      key: { name: 'svc-dns01', algorithm: 'hmac-sha256' as const, secret: 'c2VjcmV0c2VjcmV0c2VjcmV0' },
    };
    const t = setup({ config: { ...config, acme: { ...config.acme, dns01 } } });
    t.domain('*.shop.example.com');
    const target = dns01Target(zone, 'acc_1', 'shop.example.com');
    const delegate = (observed: string[]) => {
      t.domains.items[0]!.status!.records = [
        { purpose: 'certificate', type: 'CNAME', name: '_acme-challenge.shop.example.com', expected: [target], observed, ok: false },
      ];
    };
    let r = await t.issuer.pass();
    assert.deepEqual(
      r.failed.map((f) => f.reason),
      ['Dns01DelegationMissing'],
    );
    assert.deepEqual(t.acme.orders, [], 'no order while the CA could not follow the delegation');
    assert.deepEqual(t.orders.rows, [], 'nothing taken from the budget');
    const status = t.domains.certificateOf('*.shop.example.com')!;
    assert.equal(status.phase, 'Failed');
    assert.equal(
      status.message,
      `a wildcard's certificate is validated by DNS-01: publish CNAME _acme-challenge.shop.example.com → ${target}, then verify the domain again`,
    );
    await t.issuer.pass();
    assert.equal(t.events.length, 1, 'told once');
    // A CNAME to another account's target (a delegation left behind) delegates nothing to this one.
    delegate([dns01Target(zone, 'acc_2', 'shop.example.com')]);
    await t.issuer.pass();
    assert.deepEqual(t.acme.orders, []);
    delegate([target]);
    r = await t.issuer.pass();
    assert.deepEqual(r.issued, ['*.shop.example.com']);
    assert.deepEqual(t.acme.options, [{ dns01Name: target }]);
    const issued = t.domains.certificateOf('*.shop.example.com')!;
    assert.equal(issued.phase, 'Issued');
    // Its renewal due and the delegation gone: not ordered, and the certificate still served says so.
    delegate([]);
    t.setNow(new Date(Date.parse(issued.renewAfter!) + 60_000));
    await t.issuer.pass();
    assert.equal(t.acme.orders.length, 1, 'no renewal order without the delegation');
    const waiting = t.domains.certificateOf('*.shop.example.com')!;
    assert.equal(waiting.phase, 'Issued');
    assert.equal(waiting.reason, 'Dns01DelegationMissing');
    assert.equal(waiting.notAfter, issued.notAfter, 'still shows the certificate served');
    assert.match(waiting.message!, /^the renewal waits: a wildcard's certificate is validated by DNS-01: publish CNAME/);
    const told = t.events.length;
    await t.issuer.pass();
    assert.equal(t.events.length, told, 'told once');
  });

  it('a replica that does not lead the Lease orders, but says nothing else: each refusal is told once, by the leader', async () => {
    let leading = false;
    const t = setup({ isLeader: () => leading });
    t.domain('*.shop.example.com');
    t.domain('shop.example.com');
    let r = await t.issuer.pass();
    assert.deepEqual(r.issued, ['shop.example.com'], 'orders are any replica’s (PostgreSQL holds their lease)');
    assert.deepEqual(r.failed, []);
    assert.equal(t.domains.certificateOf('*.shop.example.com'), undefined);
    leading = true;
    r = await t.issuer.pass();
    assert.deepEqual(
      r.failed.map((f) => f.reason),
      ['DNS01Unavailable'],
    );
  });

  describe("the platform's own *.<apps domain> by DNS-01", () => {
    const dns01 = {
      zone: 'acme.platform.test',
      server: { host: '127.0.0.1', port: 53 },
      key: { name: 'k', algorithm: 'hmac-sha256' as const, secret: 'c2VjcmV0c2VjcmV0c2VjcmV0' },
    };
    const platformConfig = (appsDomain: string): typeof config => ({
      ...config,
      platformSecret: 'svc-apps-tls',
      platformDns01: { domain: `*.${appsDomain}` },
      acme: { ...config.acme, dns01 },
    });

    it('orders it into the platform Secret at the delegated name, then leaves it alone until its renewal', async () => {
      const t = setup({ config: platformConfig('apps.example.com') });
      const r = await t.issuer.pass();
      assert.deepEqual(r.issued, ['*.apps.example.com']);
      assert.deepEqual(t.acme.orders, ['*.apps.example.com']);
      // Outside the zone: the name a platform team delegates `_acme-challenge.apps.example.com` to.
      assert.equal(t.acme.options[0]!.dns01Name, dns01Target('acme.platform.test', 'platform', 'apps.example.com'));
      const secret = t.core.secrets.get('svc-apps-tls')!;
      assert.equal(secret.type, 'kubernetes.io/tls');
      assert.equal(secret.metadata!.labels![certificateLabel], 'platform', 'not an acme one: the tenant plan never sees it');
      assert.equal(secret.metadata!.annotations![certificateAnnotations.domain], '*.apps.example.com');
      assert.equal(secret.metadata!.annotations![certificateAnnotations.namespace], undefined);
      const info = readCertificate(secret);
      assert.equal(secret.metadata!.annotations![certificateRenewAfterAnnotation], info.renewAfter!.toISOString());
      assert.deepEqual(t.events, [], 'no account is told: the platform has none');
      // Fresh: nothing more, and the tenant plan does not delete it (it has no claim).
      const again = await t.issuer.pass();
      assert.deepEqual(again, { issued: [], renewed: [], failed: [], refused: [], deleted: [] });
      assert.ok(t.core.secrets.has('svc-apps-tls'));
      // Due: renewed in place.
      t.setNow(new Date(info.renewAfter!.getTime() + 60_000));
      const renewal = await t.issuer.pass();
      assert.deepEqual(renewal.renewed, ['*.apps.example.com']);
      assert.equal(t.acme.orders.length, 2);
      assert.deepEqual(
        t.orders.rows.map((x) => x.outcome),
        ['issued', 'renewed'],
      );
    });

    it('a failure is recorded with a back-off: no order again before it, whatever the passes', async () => {
      const t = setup({ config: platformConfig('apps.example.com') });
      t.acme.fail = new CertificateError('failed', 'ValidationFailed', 'no TXT record found at _acme-challenge.apps.example.com');
      const r = await t.issuer.pass();
      assert.deepEqual(r.failed, [{ domain: '*.apps.example.com', reason: 'ValidationFailed', message: t.acme.fail.message }]);
      t.acme.fail = undefined;
      for (let i = 0; i < 3; i++) await t.issuer.pass();
      assert.equal(t.acme.orders.length, 1, 'waits out its retry_after');
      assert.ok(!t.core.secrets.has('svc-apps-tls'));
    });

    it('a provided certificate in the Secret is renewed when due, not before', async () => {
      const t = setup({ config: platformConfig('apps.example.com') });
      const c = certificate('*.apps.example.com', 90);
      t.core.secrets.set('svc-apps-tls', {
        metadata: { name: 'svc-apps-tls', namespace },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': Buffer.from(c.certificate).toString('base64'), 'tls.key': Buffer.from(c.key).toString('base64') },
      });
      await t.issuer.pass();
      assert.deepEqual(t.acme.orders, []);
      assert.deepEqual(t.core.reads, ['svc-apps-tls']);
    });

    it("writes the TXT at _acme-challenge.<apps domain> itself when it lies in the platform's zone", () => {
      assert.equal(platformDns01Name('apps.acme.platform.test', 'acme.platform.test'), '_acme-challenge.apps.acme.platform.test');
      assert.equal(platformDns01Name('acme.platform.test', 'acme.platform.test'), '_acme-challenge.acme.platform.test');
      assert.equal(
        platformDns01Name('apps.other.test', 'acme.platform.test'),
        dns01Target('acme.platform.test', 'platform', 'apps.other.test'),
      );
      // A look-alike suffix is not the zone.
      assert.notEqual(platformDns01Name('apps.xacme.platform.test', 'acme.platform.test'), '_acme-challenge.apps.xacme.platform.test');
    });

    it('without the setting, the platform Secret is never read nor ordered', async () => {
      const t = setup();
      await t.issuer.pass();
      assert.deepEqual(t.core.reads, []);
      assert.deepEqual(t.acme.orders, []);
    });
  });

  it('sweeps HTTP-01 challenges older than an order’s lease (an API died mid-order), and only those', async () => {
    const t = setup();
    const cm = (name: string, agoMs: number): k8s.V1ConfigMap => ({
      metadata: { name, namespace, uid: name, labels: { [challengeLabel]: 'http-01' }, creationTimestamp: new Date(Date.now() - agoMs) },
    });
    t.core.configMaps.push(cm('acme-http01-old', 16 * 60_000), cm('acme-http01-live', 60_000));
    await t.issuer.pass();
    assert.deepEqual(
      t.core.configMaps.map((c) => c.metadata!.name),
      ['acme-http01-live'],
    );
  });

  it("leaves alone a Verified Domain whose claim is not in its database (another platform's API on the same cluster)", async () => {
    const t = setup();
    t.domain('theirs.example.com', 'Verified', null);
    const theirs = t.domains.items[0]!;
    theirs.status!.certificate = { phase: 'Issued', reason: 'Issued', message: 'served', secretName: 'tls-x' };
    const r = await t.issuer.pass();
    assert.deepEqual([r.issued, r.failed, r.deleted], [[], [], []]);
    assert.deepEqual(t.domains.writes, [], 'no status written: nothing says its certificate is stale');
    assert.deepEqual(t.acme.orders, []);
  });

  it('deletes the certificate of a name no longer verified, and clears its status; an empty cache deletes nothing', async () => {
    const t = setup();
    t.domain('gone.example.com');
    t.domain('broken.example.com');
    t.domain('kept.example.com');
    await t.issuer.pass();
    assert.equal(t.core.secrets.size, 3);
    // gone: removed (the Domain and its claim); broken: misconfigured (its claim still verified).
    t.domains.items.splice(
      t.domains.items.findIndex((d) => d.spec.domain === 'gone.example.com'),
      1,
    );
    t.claims.delete('gone.example.com');
    t.domains.items.find((d) => d.spec.domain === 'broken.example.com')!.status!.phase = 'Misconfigured';
    const r = await t.issuer.pass();
    assert.deepEqual(r.deleted.sort(), ['broken.example.com', 'gone.example.com']);
    assert.deepEqual([...t.core.secrets.keys()], [certificateSecretName('kept.example.com')]);
    assert.equal(t.domains.certificateOf('broken.example.com'), undefined);
    // A cache that lost every Domain (claims still verified): nothing is deleted.
    const items = t.domains.items.splice(0);
    assert.deepEqual((await t.issuer.pass()).deleted, []);
    assert.equal(t.core.secrets.size, 1);
    t.domains.items.push(...items);
  });
});

describe('planCertificates', () => {
  const now = new Date('2027-01-01T00:00:00Z');
  const claims = new Map<string, ObservedClaim>([
    ['a.example.com', { namespace: 'acct-1', accountId: 'acc_1', verified: true }],
    ['b.example.com', { namespace: 'acct-1', accountId: 'acc_1', verified: true }],
  ]);
  const d = (name: string, phase = 'Verified'): ObservedDomain => ({
    name,
    namespace: 'acct-1',
    app: 'web',
    phase,
    certificate: undefined,
  });
  const s = (name: string, renewAfter: Date, namespace = 'acct-1'): ObservedSecret => ({
    name: certificateSecretName(name),
    domain: name,
    namespace,
    notBefore: new Date(now.getTime() - 30 * day),
    notAfter: new Date(now.getTime() + 60 * day),
    renewAfter,
  });

  it('orders the verified without a certificate, renews the due, records the fresh one in the status', () => {
    const steps = planCertificates({
      domains: [d('a.example.com'), d('b.example.com')],
      claims,
      secrets: [s('b.example.com', new Date(now.getTime() + day))],
      now,
    });
    assert.deepEqual(
      steps.map((x) => [
        x.kind,
        'domain' in x && typeof x.domain === 'object' ? x.domain.name : undefined,
        x.kind === 'order' ? x.renewal : undefined,
      ]),
      [
        ['order', 'a.example.com', false],
        ['record', 'b.example.com', undefined],
      ],
    );
    const due = planCertificates({
      domains: [d('b.example.com')],
      claims,
      secrets: [s('b.example.com', new Date(now.getTime() - 1))],
      now,
    });
    assert.deepEqual(
      due.map((x) => [x.kind, x.kind === 'order' && x.renewal]),
      [['order', true]],
    );
  });

  it("orders anew when the name's certificate was issued for another account's Domain (the name moved)", () => {
    const theirs = s('a.example.com', new Date(now.getTime() + day), 'acct-2');
    const steps = planCertificates({ domains: [d('a.example.com')], claims, secrets: [theirs], now });
    assert.deepEqual(
      steps.map((x) => [x.kind, x.kind === 'order' && x.renewal]),
      [['order', false]],
    );
  });

  it("ignores a Secret whose name is not its annotated domain's", () => {
    const forged = { ...s('a.example.com', new Date(now.getTime() + day)), name: 'tls-forged' };
    const steps = planCertificates({ domains: [d('a.example.com')], claims, secrets: [forged], now });
    assert.deepEqual(
      steps.map((x) => x.kind),
      ['order'],
    );
  });
});

describe('ACME errors', () => {
  it("a rate limit is a refusal with the CA's Retry-After; any other problem a failure with its detail", () => {
    const until = new Date(Date.now() + 3600_000);
    const limited = mapAcmeError(
      new Error('too many'),
      { last: { status: 429, type: 'urn:ietf:params:acme:error:rateLimited', detail: 'too many new orders recently', retryAfter: until } },
      'creating the order',
      false,
    );
    assert.deepEqual([limited.outcome, limited.reason, limited.retryAfter, limited.ordered], ['refused', 'RateLimited', until, false]);
    assert.match(limited.message, /too many new orders recently/);
    const rejected = mapAcmeError(
      new Error('x'),
      { last: { status: 400, type: 'urn:ietf:params:acme:error:rejectedIdentifier', detail: 'name is blocked', retryAfter: undefined } },
      'creating the order',
      false,
    );
    assert.deepEqual([rejected.outcome, rejected.reason], ['failed', 'RejectedIdentifier']);
    assert.match(rejected.message, /creating the order failed: name is blocked/);
    const plain = mapAcmeError(new Error('socket hang up'), undefined, 'downloading the certificate', true);
    assert.deepEqual(
      [plain.outcome, plain.reason, plain.message],
      ['failed', 'OrderFailed', 'downloading the certificate failed: socket hang up'],
    );
    const silent = mapAcmeError(
      new TypeError("Cannot read properties of undefined (reading 'config')"),
      { last: undefined, request: 'GET https://ca.example/dir' },
      'creating the ACME account',
      false,
    );
    assert.deepEqual(
      [silent.reason, silent.message],
      [
        'CAUnavailable',
        'creating the ACME account failed: the CA did not answer GET https://ca.example/dir (unreachable, or it timed out)',
      ],
    );
  });

  describe('DNS-01 of one authorization (validateByDns)', () => {
    const authz = {
      identifier: { type: 'dns', value: 'shop.example.com' },
      status: 'pending',
      challenges: [{ type: 'dns-01', url: 'https://ca.test/chall/1', status: 'pending', token: 'tok' }],
    } as unknown as acme.Authorization;
    const target = 'abc.acme.platform.test';
    /** The CA's side and the zone, in order of what was asked of them. */
    const world = (o: { addFails?: boolean; seenAfter?: number; caRefuses?: boolean } = {}) => {
      const calls: string[] = [];
      let lookups = 0;
      const client: ChallengeClient = {
        getChallengeKeyAuthorization: async () => 'digest',
        completeChallenge: async (c) => (calls.push('complete'), c),
        waitForValidStatus: async <T>(item: T) => {
          calls.push('wait');
          if (o.caRefuses) throw new Error('Incorrect TXT record "nope" found at _acme-challenge.shop.example.com');
          return item;
        },
        deactivateAuthorization: async (a) => (calls.push('deactivate'), a),
      };
      const provider: DnsProvider = {
        addTxt: async (fqdn, value, ttl) => {
          calls.push(`add ${fqdn} ${value} ${ttl}`);
          if (o.addFails) throw new Error('NOTAUTH, TSIG error BADSIG');
        },
        removeTxt: async (fqdn, value) => void calls.push(`remove ${fqdn} ${value}`),
      };
      const lookup = async () => {
        calls.push('lookup');
        return ++lookups > (o.seenAfter ?? 0) ? ['digest'] : [];
      };
      const run = () =>
        validateByDns(client, authz, {
          domain: '*.shop.example.com',
          target,
          provider,
          lookup,
          checkMs: 400,
          log: createLogger('test', 'silent'),
        });
      return { calls, run };
    };

    it('writes the TXT, tells the CA only once the zone answers it, and withdraws it', async () => {
      const w = world({ seenAfter: 2 });
      await w.run();
      assert.deepEqual(w.calls, [`add ${target} digest 60`, 'lookup', 'lookup', 'lookup', 'complete', 'wait', `remove ${target} digest`]);
    });

    it('never tells the CA when the zone does not answer the TXT: the authorization deactivated, the TXT withdrawn', async () => {
      const w = world({ seenAfter: Infinity });
      await assert.rejects(w.run(), (err: unknown) => err instanceof CertificateError && err.reason === 'Dns01NotPublished');
      assert.ok(!w.calls.includes('complete'), 'the CA was not asked');
      assert.deepEqual(w.calls.slice(-2), ['deactivate', `remove ${target} digest`]);
    });

    it('says why when the update is refused, and tries to withdraw it anyway', async () => {
      const w = world({ addFails: true });
      await assert.rejects(
        w.run(),
        (err: unknown) => err instanceof CertificateError && err.reason === 'Dns01UpdateFailed' && /BADSIG/.test(err.message),
      );
      assert.deepEqual(w.calls, [`add ${target} digest 60`, `remove ${target} digest`]);
    });

    it('a validation the CA refuses is ValidationFailed, naming the delegation to check, and the TXT withdrawn', async () => {
      const w = world({ caRefuses: true });
      await assert.rejects(
        w.run(),
        (err: unknown) =>
          err instanceof CertificateError &&
          err.reason === 'ValidationFailed' &&
          err.message.includes(`is _acme-challenge.shop.example.com a CNAME to ${target}?`),
      );
      assert.equal(w.calls.at(-1), `remove ${target} digest`);
    });
  });

  it('reads Retry-After as seconds or a date, only in the future', () => {
    const now = new Date('2026-11-27T12:00:00Z');
    assert.equal(retryAfterOf('120', now)?.toISOString(), '2026-11-27T12:02:00.000Z');
    assert.equal(retryAfterOf('Fri, 27 Nov 2026 13:00:00 GMT', now)?.toISOString(), '2026-11-27T13:00:00.000Z');
    assert.equal(retryAfterOf('Fri, 27 Nov 2026 11:00:00 GMT', now), undefined);
    assert.equal(retryAfterOf(undefined, now), undefined);
  });
});

describe('the HTTP-01 self-check (every ingress-auth, before the CA is told)', () => {
  const keyAuthorization = 'tok.thumb';
  /** An ingress-auth stand-in on one loopback address; `serving` says whether it answers yet. */
  async function replica(address: string, port = 0) {
    const state = { serving: true, hosts: [] as string[] };
    const server = createServer((req, res) => {
      state.hosts.push(req.headers.host ?? '');
      if (!state.serving || req.url !== '/.well-known/acme-challenge/tok') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'text/plain' }).end(keyAuthorization);
    });
    server.listen(port, address);
    await once(server, 'listening');
    return { state, port: (server.address() as AddressInfo).port, close: () => new Promise((r) => server.close(r)) };
  }

  it('waits until every address answers, on fresh connections, with the Host the CA will send', async () => {
    const a = await replica('127.0.0.1');
    const b = await replica('127.0.0.2', a.port);
    try {
      const url = new URL(`http://ingress-auth-pods.svc.test:${a.port}/.well-known/acme-challenge/tok`);
      const addresses = async (host: string) => (assert.equal(host, 'ingress-auth-pods.svc.test'), ['127.0.0.1', '127.0.0.2']);
      b.state.serving = false;
      setTimeout(() => (b.state.serving = true), 400);
      const started = Date.now();
      await untilServedEverywhere({ url, domain: 'shop.example', keyAuthorization, timeoutMs: 5_000, addresses });
      assert.ok(Date.now() - started >= 350, 'not before the lagging replica serves it');
      assert.ok(b.state.hosts.filter((h) => h === 'shop.example').length >= 3, 'each replica asked on several connections');
      assert.ok(a.state.hosts.every((h) => h === 'shop.example'));
      // One that never serves it: ChallengeNotServed, naming it.
      b.state.serving = false;
      await assert.rejects(
        untilServedEverywhere({ url, domain: 'shop.example', keyAuthorization, timeoutMs: 700, addresses }),
        (err: unknown) =>
          err instanceof CertificateError && err.reason === 'ChallengeNotServed' && /127\.0\.0\.2 answered 404/.test(err.message),
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });

  it('an address stands for itself; a name for every address it resolves to', async () => {
    assert.deepEqual(await addressesOf('127.0.0.1'), ['127.0.0.1']);
    assert.deepEqual(await addressesOf('[::1]'), ['::1']);
    assert.ok((await addressesOf('localhost')).length >= 1);
  });
});

describe('DomainActions.remove', () => {
  it("deletes the domain's certificate at once; a failure to do so does not fail the removal", async () => {
    const { DomainActions } = await import('../../api/domains/actions.js');
    const removed: string[] = [];
    const domains = new FakeDomains();
    domains.add('shop.example.com');
    const released: string[] = [];
    const make = (remove: (d: string, namespace: string) => Promise<void>) =>
      new DomainActions({
        domains: {
          list: () => [],
          get: (_ns: string, name: string) => domains.items.map(domainRecord).find((r) => r.name === name),
          create: async () => {
            throw new Error('not used');
          },
          delete: async () => undefined,
          writeStatus: async () => undefined,
        },
        claims: {
          tokenOf: async () => 't',
          get: async () => undefined,
          counts: async () => ({ account: 0, app: 0 }),
          claim: async () => {
            throw new Error('not used');
          },
          release: async (name: string) => void released.push(name),
          schedule: async () => undefined,
        },
        lock: { hold: async <T>(_a: string, step: () => Promise<T>) => step() },
        events: { record: async () => undefined },
        check: async () => {
          throw new Error('not used');
        },
        certificates: { remove },
        settings: { appsDomain: 'apps.localhost', edgeAddresses: [], perApp: 20, perAccount: 100, recheckMs: 600_000 },
        log: createLogger('test', 'silent'),
        clock: () => new Date(),
      });
    const actor = { accountId: 'acc_1', namespace: 'acct-1', createdBy: 'token:t1' };
    const app = { id: 'uid-web', name: 'web', namespace: 'acct-1' } as Parameters<InstanceType<typeof DomainActions>['remove']>[1];
    await make(async (d, namespace) => void removed.push(`${namespace}/${d}`)).remove(actor, app, 'shop.example.com');
    assert.deepEqual(removed, ['acct-1/shop.example.com'], "the certificate of this namespace's Domain, never another's of the name");
    await make(async () => {
      throw new Error('apiserver down');
    }).remove(actor, app, 'shop.example.com');
    assert.deepEqual(released, ['shop.example.com', 'shop.example.com']);
  });
});
