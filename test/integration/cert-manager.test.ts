// cert-manager as the issuer of custom domains' certificates (issue 32 item 4;
// docs/decisions/0028-https.md), against cert-manager's real CRDs (installed by hack/cert-manager.sh
// from its Go module), the real API, PostgreSQL, apiserver, the local DNS server and ingress-auth with
// its TLS listener. cert-manager itself does not run: the test acts as its controller, making the
// Challenge its ACME solver would, writing the Secret it would issue and the Certificate's status.
// - a verified domain gets a Certificate with the team's issuer and a secretTemplate ingress-auth serves;
// - ingress-auth answers that Challenge on its own host only, and never one for a name no verified
//   Domain routes;
// - the worker acts on the replica leading the recorder's Lease only (this API leads its own);
// - the Secret cert-manager writes is served by SNI, and the Domain says Issued (an event told);
//   while cert-manager reissues, and when that fails (Issuing False with a failure time), the Domain
//   keeps the certificate served and says the failure (told once);
// - a Secret made for another namespace's Domain of a name is not served for this one's;
// - removing the domain deletes the Certificate and its Secret.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import path from 'node:path';
import { connect as tlsConnect, type PeerCertificate } from 'node:tls';
import { promisify } from 'node:util';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { domainObjectName } from '../../api/repositories/domains.js';
import type { CertManagerCertificate } from '../../lib/certificates/cert-manager-plan.js';
import { certManager, certificateAnnotations, certificateLabel, certificateSecretName } from '../../lib/certificates/contract.js';
import { pluralOf } from '../../lib/contract.js';
import { mergePatch } from '../../lib/kube/client.js';
import { repoRoot } from '../../lib/paths.js';
import { group, version, type Domain } from '../../lib/resources/index.js';
import { expectJson, startTestApi, type TestApi } from '../support/api.js';
import { certificateFor, type Pem } from '../support/certificates.js';
import { dnsServers, publish } from '../support/dns.js';
import { Browser, startTestIngress, type TestIngress } from '../support/ingress.js';
import { kubeConfig, statusOf, testNamespace } from '../support/kube.js';
import { eventually } from '../support/wait.js';

interface DomainBody {
  name: string;
  status: string;
  records: Array<{ type: string; name: string; value: string }>;
  certificate: { status: string; reason: string | null; expires_at: string | null; renews_after: string | null } | null;
}

const issuerRef = { kind: 'ClusterIssuer', name: 'letsencrypt-test', group: 'cert-manager.io' };

describe('custom domains with cert-manager as the issuer (real CRDs)', { timeout: 300_000 }, () => {
  let api: TestApi;
  let ingress: TestIngress;
  let certs: Awaited<ReturnType<typeof testNamespace>>;
  let core: k8s.CoreV1Api;
  let custom: k8s.CustomObjectsApi;
  let browser: Browser;
  const suffix = Date.now().toString(36);
  const zone = `cm-${suffix}.example`;
  const other = `cm-other-${suffix}.example`;
  const pending = `cm-pending-${suffix}.example`;
  const nobody = `cm-nobody-${suffix}.example`;
  const app = `cm-${suffix}`;
  const json = expectJson;
  const domains = (p = '') => `/api/apps/${app}/domains${p}`;
  const token = (n: number) => `tok${n}_${suffix}`.padEnd(43, 'x');
  const keyOf = (t: string) => `${t}.${'t'.repeat(43)}`;
  const certificates = certManager.certificates;
  const challenges = certManager.challenges;

  const verifiedApex = async (name: string): Promise<void> => {
    const added = await json<{ domain: DomainBody }>(await api.request('POST', domains(), { body: { name } }), 201);
    const txt = added.domain.records.find((r) => r.type === 'TXT')!;
    await publish({ type: 'TXT', name: txt.name, value: txt.value });
    await publish({ type: 'A', name, value: '127.0.0.1' });
    const d = (await json<{ domain: DomainBody }>(await api.request('POST', domains(`/${name}/verify`)), 200)).domain;
    assert.equal(d.status, 'verified', JSON.stringify(d));
  };

  const certificateOf = (domain: string) =>
    custom.getNamespacedCustomObject({
      group: certificates.group,
      version: certificates.version,
      namespace: certs.name,
      plural: certificates.plural,
      name: certificateSecretName(domain),
    }) as Promise<CertManagerCertificate>;

  /** The Domain's status.certificate as the API wrote it. */
  const certificateStatus = async (domain: string) => {
    const d = (await custom.getNamespacedCustomObject({
      group,
      version,
      namespace: api.account.namespace,
      plural: pluralOf('Domain'),
      name: domainObjectName(domain),
    })) as Domain;
    return d.status?.certificate;
  };

  /** What cert-manager's status controllers would write (the status subresource). */
  const setStatus = (domain: string, status: NonNullable<CertManagerCertificate['status']>) =>
    custom.patchNamespacedCustomObjectStatus(
      {
        group: certificates.group,
        version: certificates.version,
        namespace: certs.name,
        plural: certificates.plural,
        name: certificateSecretName(domain),
        body: { status },
      },
      mergePatch,
    );

  /** The Challenge cert-manager's ACME solver makes for an HTTP-01 authorization. */
  const challenge = (name: string, dnsName: string, t: string) =>
    custom.createNamespacedCustomObject({
      group: challenges.group,
      version: challenges.version,
      namespace: certs.name,
      plural: challenges.plural,
      body: {
        apiVersion: `${challenges.group}/${challenges.version}`,
        kind: challenges.kind,
        metadata: { name },
        spec: {
          type: 'HTTP-01',
          dnsName,
          token: t,
          key: keyOf(t),
          url: `https://acme.example/chall/${t}`,
          authorizationURL: `https://acme.example/authz/${t}`,
          wildcard: false,
          issuerRef,
          solver: { http01: { ingress: { ingressClassName: 'none' } } },
        },
      },
    });

  /** The Secret cert-manager writes for a Certificate: its secretTemplate's labels and annotations, and its own. */
  const writeSecret = (domain: string, pem: Pem, namespace: string) =>
    core.createNamespacedSecret({
      namespace: certs.name,
      body: {
        metadata: {
          name: certificateSecretName(domain),
          labels: { [certificateLabel]: 'cert-manager', 'controller.cert-manager.io/fao': 'true' },
          annotations: {
            [certificateAnnotations.domain]: domain,
            [certificateAnnotations.namespace]: namespace,
            'cert-manager.io/certificate-name': certificateSecretName(domain),
            'cert-manager.io/issuer-name': issuerRef.name,
            'cert-manager.io/issuer-kind': issuerRef.kind,
            'cert-manager.io/issuer-group': issuerRef.group,
            'cert-manager.io/alt-names': domain,
          },
        },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': Buffer.from(pem.cert).toString('base64'), 'tls.key': Buffer.from(pem.key).toString('base64') },
      },
    });

  /** The certificate ingress-auth shows for an SNI name, or the handshake's error. */
  const handshake = (servername: string): Promise<PeerCertificate | Error> =>
    new Promise((resolve) => {
      const socket = tlsConnect({ host: '127.0.0.1', port: ingress.tlsPort!, servername, rejectUnauthorized: false });
      socket.setTimeout(5_000, () => socket.destroy(new Error('timed out')));
      socket.once('secureConnect', () => {
        const peer = socket.getPeerCertificate();
        socket.end();
        resolve(peer);
      });
      socket.once('error', (err: Error) => resolve(err));
    });
  const fingerprintOf = (pem: Pem) => new X509Certificate(pem.cert).fingerprint256;

  const challengeAnswer = (host: string, t: string) => browser.request(host, `/.well-known/acme-challenge/${t}`);

  before(async () => {
    const { stdout } = await promisify(execFile)(path.join(repoRoot, 'hack/cert-manager.sh'), ['crds'], { timeout: 240_000 });
    console.log(`# ${stdout.trim()}`);
    const kc = kubeConfig();
    core = kc.makeApiClient(k8s.CoreV1Api);
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    certs = await testNamespace(core, 'certs');
    const env = {
      SVC_CERTIFICATES_NAMESPACE: certs.name,
      SVC_CERTIFICATES_ISSUER: 'cert-manager',
      SVC_CERT_MANAGER_ISSUER: `${issuerRef.kind}/${issuerRef.name}`,
    };
    api = await startTestApi({ env: { ...env, SVC_DOMAINS_DNS_SERVERS: dnsServers().join(','), SVC_DOMAINS_EDGE_ADDRESSES: '127.0.0.1' } });
    ingress = await startTestIngress(api, { tls: true, env });
    browser = new Browser(ingress.url);
    // The worker acts once this API leads its Lease (its first Lease call, soon after it started).
    await eventually('the cert-manager worker leading', async () => (await api.workers.certManagerIssuer!.pass()).leading, {
      timeoutMs: 20_000,
    });
    await json(await api.request('POST', '/api/apps', { body: { name: app } }), 201);
  });
  after(async () => {
    await ingress?.close();
    await api?.close();
    await certs?.dispose();
  });

  it('writes a Certificate with the team’s issuer for a verified domain, and says Pending', async () => {
    await verifiedApex(zone);
    const c = await eventually('the Certificate of the verified domain', () => certificateOf(zone).catch(() => undefined), {
      timeoutMs: 20_000,
      intervalMs: 100,
    });
    const name = certificateSecretName(zone);
    assert.equal(c.spec?.secretName, name);
    assert.deepEqual(c.spec?.dnsNames, [zone]);
    assert.deepEqual(c.spec?.issuerRef, issuerRef);
    assert.deepEqual(c.spec?.privateKey, { algorithm: 'ECDSA', size: 256, rotationPolicy: 'Always' });
    assert.deepEqual(c.spec?.secretTemplate, {
      labels: { [certificateLabel]: 'cert-manager' },
      annotations: { [certificateAnnotations.domain]: zone, [certificateAnnotations.namespace]: api.account.namespace },
    });
    const status = await eventually('status.certificate Pending', async () => {
      const s = await certificateStatus(zone);
      return s?.phase === 'Pending' ? s : undefined;
    });
    assert.equal(status.reason, 'Requested');
  });

  it('answers cert-manager’s HTTP-01 Challenge on its own host only, never one for a name no verified Domain routes', async () => {
    await json(await api.request('POST', domains(), { body: { name: pending } }), 201);
    // Made before the one answered: once that one is answered, the informer has seen these too.
    await challenge(`nobody-${suffix}`, nobody, token(1));
    await challenge(`pending-${suffix}`, pending, token(2));
    await challenge(`zone-${suffix}`, zone, token(3));
    const answered = await eventually(
      'the Challenge answered',
      async () => {
        const a = await challengeAnswer(zone, token(3));
        return a.status === 200 ? a : undefined;
      },
      { timeoutMs: 10_000, intervalMs: 50 },
    );
    assert.equal(answered.body, keyOf(token(3)));
    assert.match(String(answered.headers['content-type']), /^text\/plain/);
    assert.equal((await challengeAnswer(other, token(3))).status, 404, 'another host');
    assert.equal((await challengeAnswer(`${app}.apps.localhost`, token(3))).status, 404, 'the app hostname');
    assert.equal((await challengeAnswer(nobody, token(1))).status, 404, 'a name nobody added');
    assert.equal((await challengeAnswer(pending, token(2))).status, 404, 'a name added, not verified');
  });

  it('serves the Secret cert-manager writes by SNI once the Certificate is Ready, and the Domain says Issued', async () => {
    const pem = await certificateFor(zone);
    await writeSecret(zone, pem, api.account.namespace);
    // cert-manager writes RFC 3339 with seconds; the Domain's status says it as toISOString does.
    const rfc3339 = (d: Date) => d.toISOString().replace(/\.\d{3}Z$/, 'Z');
    const x509 = new X509Certificate(pem.cert);
    const notAfter = new Date(x509.validTo).toISOString();
    await setStatus(zone, {
      conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'Certificate is up to date and has not expired' }],
      notBefore: rfc3339(new Date(x509.validFrom)),
      notAfter: rfc3339(new Date(x509.validTo)),
      renewalTime: rfc3339(new Date(Date.now() + 3600_000)),
    });
    const peer = await eventually(
      'the certificate served by SNI',
      async () => {
        const p = await handshake(zone);
        return p instanceof Error ? undefined : p;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    assert.equal(peer.fingerprint256, fingerprintOf(pem));
    const s = await eventually('status.certificate Issued', async () => {
      const c = await certificateStatus(zone);
      return c?.phase === 'Issued' ? c : undefined;
    });
    assert.equal(s.reason, 'Issued');
    assert.equal(s.notAfter, notAfter);
    assert.equal(s.secretName, certificateSecretName(zone));
    // The API answers from its Domain cache, which hears of the status a moment after the apiserver has it.
    const shown = await eventually('the API to show it issued', async () => {
      const d = (await json<{ domain: DomainBody }>(await api.request('GET', domains(`/${zone}`)), 200)).domain;
      return d.certificate?.status === 'issued' ? d : undefined;
    });
    assert.equal(shown.certificate?.expires_at, notAfter);
    const events = await eventually('certificate.issued told', async () => {
      const e = (
        await json<{ events: Array<{ type: string; data: { domain?: string; reason?: string } }> }>(
          await api.request('GET', '/api/events?kinds=certificate.*'),
          200,
        )
      ).events.filter((x) => x.data.domain === zone);
      return e.length ? e : undefined;
    });
    assert.deepEqual(
      events.map((e) => e.type),
      ['certificate.issued'],
    );
  });

  it('keeps the served certificate while cert-manager reissues it, and says a failed reissuance once', async () => {
    const before = await certificateStatus(zone);
    assert.equal(before?.phase, 'Issued');
    const incorrectIssuer = {
      type: 'Ready',
      status: 'False',
      reason: 'IncorrectIssuer',
      message: 'Issuing certificate as Secret was previously issued by a different issuer',
    };
    // What cert-manager says first when the Secret's issuer is not the Certificate's: Ready False, Issuing True.
    await setStatus(zone, {
      conditions: [incorrectIssuer, { ...incorrectIssuer, type: 'Issuing', status: 'True' }],
    });
    const reissuing = await eventually('status.certificate Reissuing', async () => {
      const c = await certificateStatus(zone);
      return c?.reason === 'Reissuing' ? c : undefined;
    });
    assert.deepEqual([reissuing.phase, reissuing.notAfter, reissuing.secretName], ['Issued', before.notAfter, certificateSecretName(zone)]);
    // A failed issuance as cert-manager reports it: Issuing False with its reason and a failure time.
    await setStatus(zone, {
      conditions: [
        incorrectIssuer,
        {
          type: 'Issuing',
          status: 'False',
          reason: 'Failed',
          message: 'The certificate request has failed to complete and will be retried: issuer refused',
        },
      ],
      lastFailureTime: new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
      failedIssuanceAttempts: 1,
    });
    const s = await eventually('status.certificate saying the failure', async () => {
      const c = await certificateStatus(zone);
      return c?.reason === 'Failed' ? c : undefined;
    });
    assert.deepEqual([s.phase, s.notAfter, s.secretName], ['Issued', before.notAfter, certificateSecretName(zone)]);
    assert.match(s.message ?? '', /could not be issued: .*issuer refused/);
    assert.ok(!((await handshake(zone)) instanceof Error), 'still served');
    const zoneEvents = async () =>
      (
        await json<{ events: Array<{ type: string; data: { domain?: string; reason?: string } }> }>(
          await api.request('GET', '/api/events?kinds=certificate.*'),
          200,
        )
      ).events.filter((x) => x.data.domain === zone);
    await eventually('certificate.failed told', async () => (await zoneEvents()).some((e) => e.type === 'certificate.failed'));
    await api.workers.certManagerIssuer!.pass();
    assert.deepEqual(
      (await zoneEvents()).map((e) => e.type).sort(),
      ['certificate.failed', 'certificate.issued'],
      'once each: the reissuance told no second certificate.issued',
    );
  });

  it('never serves a Secret cert-manager made for another namespace’s Domain of a name', async () => {
    await verifiedApex(other);
    await eventually('the Certificate of the other domain', () => certificateOf(other).catch(() => undefined), { timeoutMs: 20_000 });
    const pem = await certificateFor(other);
    const elsewhere = `${api.account.namespace}-elsewhere`;
    await writeSecret(other, pem, elsewhere);
    await new Promise((r) => setTimeout(r, 1_000));
    assert.ok((await handshake(other)) instanceof Error, 'not served while it names another namespace');
    // The same Secret made for this namespace is served (the informer has it), and not once it names another again.
    const annotate = (namespace: string) =>
      core.patchNamespacedSecret(
        {
          namespace: certs.name,
          name: certificateSecretName(other),
          body: { metadata: { annotations: { [certificateAnnotations.namespace]: namespace } } },
        },
        mergePatch,
      );
    await annotate(api.account.namespace);
    const served = await eventually(
      'served once made for this namespace',
      async () => {
        const p = await handshake(other);
        return p instanceof Error ? undefined : p;
      },
      { timeoutMs: 10_000, intervalMs: 100 },
    );
    assert.equal(served.fingerprint256, fingerprintOf(pem));
    await annotate(elsewhere);
    await eventually('not served once it names another namespace again', async () => (await handshake(other)) instanceof Error, {
      timeoutMs: 10_000,
      intervalMs: 100,
    });
  });

  it('removing the domain deletes its Certificate and its Secret, and ends its handshakes', async () => {
    assert.ok(!((await handshake(zone)) instanceof Error));
    const removed = await api.request('DELETE', domains(`/${zone}`));
    assert.equal(removed.status, 204, await removed.text());
    await eventually('no certificate served for the removed name', async () => (await handshake(zone)) instanceof Error, {
      timeoutMs: 5_000,
      intervalMs: 50,
    });
    await eventually(
      'the Certificate deleted',
      async () =>
        await certificateOf(zone).then(
          () => false,
          (err: unknown) => statusOf(err) === 404,
        ),
      { timeoutMs: 20_000 },
    );
    await eventually(
      'the Secret deleted',
      async () =>
        await core.readNamespacedSecret({ namespace: certs.name, name: certificateSecretName(zone) }).then(
          () => false,
          (err: unknown) => statusOf(err) === 404,
        ),
      { timeoutMs: 20_000 },
    );
    // Only the removed domain's: the other verified domain keeps its Certificate.
    assert.ok(await certificateOf(other));
  });
});
