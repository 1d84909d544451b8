// Custom domains over HTTPS end to end (issue 32 item 3; docs/decisions/0028-https.md), on the real
// API, PostgreSQL, apiserver, ingress-auth with its TLS listener, the local DNS server and a real
// Pebble of this file's own (test/support/pebble.ts) whose VA validates HTTP-01 against this file's
// ingress-auth: a verified domain gets a certificate from the CA through HTTP-01 answered by
// ingress-auth, served by SNI with the app behind it; plain HTTP then redirects; a Host that is not the
// connection's SNI name is 421; a name nobody verified gets no order and no certificate; removing the
// domain ends its handshakes at once and deletes its certificate.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { certificateSecretName } from '../../lib/certificates/contract.js';
import { deployLive, expectJson, startTestApi, type TestApi } from '../support/api.js';
import { dnsServers, publish } from '../support/dns.js';
import { Browser, startTestIngress, tlsGet as tlsGetAt, type TestIngress, type TlsAnswer } from '../support/ingress.js';
import { kubeConfig, statusOf, testNamespace } from '../support/kube.js';
import { startPebble, type Pebble } from '../support/pebble.js';
import { freePort } from '../support/ports.js';
import { eventually } from '../support/wait.js';

interface DomainBody {
  name: string;
  status: string;
  records: Array<{ type: string; name: string; value: string }>;
  certificate: { status: string; reason: string | null; expires_at: string | null; renews_after: string | null } | null;
}

describe('custom domains over HTTPS', () => {
  let pebble: Pebble;
  let api: TestApi;
  let ingress: TestIngress;
  let certs: Awaited<ReturnType<typeof testNamespace>>;
  let core: k8s.CoreV1Api;
  let root: string;
  const suffix = Date.now().toString(36);
  // Apexes: their routing record is an A record to the edge (127.0.0.1), which Pebble's VA follows.
  const zone = `tls-${suffix}.example`;
  const unverified = `untrusted-${suffix}.example`;
  const app = `tls-${suffix}`;
  const json = expectJson;
  const domains = (path = '') => `/api/apps/${app}/domains${path}`;

  /** GET `path` over TLS to ingress-auth: SNI `servername`, Host `host` (default the same), Pebble's root trusted. */
  const tlsGet = (servername: string | undefined, path = '/', host = servername ?? 'none'): Promise<TlsAnswer> =>
    tlsGetAt({ port: ingress.tlsPort!, ca: root, servername, path, host });

  const verifiedApex = async (name: string): Promise<DomainBody> => {
    const added = await json<{ domain: DomainBody }>(await api.request('POST', domains(), { body: { name } }), 201);
    const txt = added.domain.records.find((r) => r.type === 'TXT')!;
    await publish({ type: 'TXT', name: txt.name, value: txt.value });
    await publish({ type: 'A', name, value: '127.0.0.1' });
    const d = (await json<{ domain: DomainBody }>(await api.request('POST', domains(`/${name}/verify`)), 200)).domain;
    assert.equal(d.status, 'verified', JSON.stringify(d));
    return d;
  };

  before(async () => {
    core = kubeConfig().makeApiClient(k8s.CoreV1Api);
    certs = await testNamespace(core, 'certs');
    // Pebble's VA asks for HTTP-01 challenges on this port, at the address the name resolves to: ingress-auth's HTTP port.
    const httpPort = await freePort();
    pebble = await startPebble({ httpPort });
    root = await pebble.rootCertificate();
    api = await startTestApi({
      env: {
        SVC_DOMAINS_DNS_SERVERS: dnsServers().join(','),
        SVC_DOMAINS_EDGE_ADDRESSES: '127.0.0.1',
        SVC_CERTIFICATES_NAMESPACE: certs.name,
        SVC_CERTIFICATES_ISSUER: 'acme',
        SVC_ACME_DIRECTORY_URL: pebble.directoryUrl,
        SVC_ACME_CA_FILE: pebble.caFile,
        SVC_ACME_HTTP01_CHECK_URL: `http://127.0.0.1:${httpPort}`,
      },
    });
    ingress = await startTestIngress(api, { port: httpPort, tls: true, env: { SVC_CERTIFICATES_NAMESPACE: certs.name } });
    await json(await api.request('POST', '/api/apps', { body: { name: app } }), 201);
    await deployLive(api, app, { files: { 'index.html': `<p>${app} over https</p>` } });
  });
  after(async () => {
    await ingress?.close();
    await api?.close();
    await pebble?.close();
    await certs?.dispose();
  });

  it('orders a certificate once the domain is verified, by HTTP-01 through ingress-auth, and serves the app with it by SNI', async () => {
    const d = await verifiedApex(zone);
    const verifiedAt = Date.now();
    const answer = await eventually(
      'the app over HTTPS on its domain',
      async () => {
        const a = await tlsGet(zone).catch(() => undefined);
        return a?.status === 200 ? a : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 100 },
    );
    console.log(`# certificate served ${Date.now() - verifiedAt} ms after verification (Pebble, VA without sleep)`);
    assert.match(answer.body, new RegExp(`<p>${app} over https</p>`));
    assert.match(answer.peer.subjectaltname ?? '', new RegExp(`DNS:${zone.replace(/\./g, '\\.')}`));
    const shown = (await json<{ domain: DomainBody }>(await api.request('GET', domains(`/${d.name}`)), 200)).domain;
    assert.equal(shown.certificate?.status, 'issued', JSON.stringify(shown.certificate));
    assert.ok(shown.certificate.expires_at && shown.certificate.renews_after);
    assert.ok(Date.parse(shown.certificate.renews_after) < Date.parse(shown.certificate.expires_at));
    const secret = await core.readNamespacedSecret({ namespace: certs.name, name: certificateSecretName(zone) });
    assert.equal(secret.type, 'kubernetes.io/tls');
    const events = (
      await json<{ events: Array<{ type: string; data: { domain?: string } }> }>(
        await api.request('GET', '/api/events?kinds=certificate.*'),
        200,
      )
    ).events.filter((e) => e.data.domain === zone);
    assert.deepEqual(
      events.map((e) => e.type),
      ['certificate.issued'],
    );
    // The challenge ConfigMap is gone once the order is done.
    assert.equal((await core.listNamespacedConfigMap({ namespace: certs.name, labelSelector: 'svc.dev/acme-challenge' })).items.length, 0);
  });

  it('redirects plain HTTP to HTTPS for a name with a certificate, and answers 421 to a Host that is not the SNI name', async () => {
    const plain = await new Browser(ingress.url).request(zone, '/docs?x=1');
    assert.equal(plain.status, 308, plain.body);
    assert.equal(plain.headers.location, `https://${zone}:${ingress.tlsPort}/docs?x=1`);
    // A connection opened for this domain never carries a request for another name, the app hostname included.
    const misdirected = await tlsGet(zone, '/', `${app}.apps.localhost`);
    assert.equal(misdirected.status, 421);
    assert.doesNotMatch(misdirected.body, new RegExp(app));
  });

  it('never orders for a name nobody verified, and shows no certificate for an unknown name or no SNI', async () => {
    const added = await json<{ domain: DomainBody }>(await api.request('POST', domains(), { body: { name: unverified } }), 201);
    assert.equal(added.domain.status, 'pending');
    await api.workers.certificateIssuer!.pass();
    const orders = await api.db('certificate_orders').where({ domain: unverified });
    assert.deepEqual(orders, [], 'no order for an unverified name');
    await assert.rejects(
      core.readNamespacedSecret({ namespace: certs.name, name: certificateSecretName(unverified) }),
      (err: unknown) => statusOf(err) === 404,
    );
    await assert.rejects(tlsGet(unverified), /alert|handshake|socket|ECONNRESET/i, 'no certificate for a pending name');
    await assert.rejects(tlsGet(`nobody-${suffix}.example`), /alert|handshake|socket|ECONNRESET/i, 'nor for a name nobody added');
    await assert.rejects(tlsGet(undefined, '/', zone), /alert|handshake|socket|ECONNRESET/i, 'nor without SNI');
  });

  it('removing the domain ends its handshakes at once and deletes its certificate', async () => {
    assert.equal((await tlsGet(zone)).status, 200);
    const removed = await api.request('DELETE', domains(`/${zone}`));
    assert.equal(removed.status, 204, await removed.text());
    await eventually(
      'no certificate served for the removed name',
      async () =>
        await tlsGet(zone).then(
          () => false,
          () => true,
        ),
      { timeoutMs: 5_000, intervalMs: 50 },
    );
    await assert.rejects(
      core.readNamespacedSecret({ namespace: certs.name, name: certificateSecretName(zone) }),
      (err: unknown) => statusOf(err) === 404,
    );
  });
});
