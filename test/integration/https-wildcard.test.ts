// A wildcard domain's certificate by DNS-01 end to end (issue 32 item 3; docs/decisions/0028-https.md),
// on the real API, PostgreSQL, apiserver and ingress-auth, a real Pebble of this file's own, and a
// real BIND 9 (test/support/named.ts) as the platform's DNS-01 zone, updated over RFC 2136 with
// TSIG. The tenant's records are on the local DNS server (pebble-challtestsrv), as for any domain;
// Pebble resolves through named, which serves the platform's zone and forwards the tenant's, and
// follows the tenant's `_acme-challenge` CNAME into the platform's zone as a CA's resolver does.
// - No order while the delegation is not published: Failed, Dns01DelegationMissing, what to publish.
// - Published: ordered by DNS-01, the TXT written in the platform's zone and withdrawn after, the
//   certificate for `*.<base>` served by SNI for a name under it, with the app behind it.
// - The platform's own `*.<apps domain>` (SVC_CERTIFICATES_PLATFORM_ISSUER=dns01): ordered the same
//   way into the platform Secret, through the CNAME a platform team publishes, and served for an
//   app's own hostname.
import assert from 'node:assert/strict';
import { Resolver } from 'node:dns/promises';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { certificateLabel, certificateSecretName } from '../../lib/certificates/contract.js';
import { dns01Target } from '../../lib/certificates/dns01.js';
import { deployLive, expectJson, startTestApi, type TestApi } from '../support/api.js';
import { dnsServers, publish } from '../support/dns.js';
import { appsDomain, startTestIngress, tlsGet as tlsGetAt, type TestIngress, type TlsAnswer } from '../support/ingress.js';
import { kubeConfig, testNamespace } from '../support/kube.js';
import { startNamed, type Named } from '../support/named.js';
import { startPebble, type Pebble } from '../support/pebble.js';
import { freePort } from '../support/ports.js';
import { eventually } from '../support/wait.js';

interface DomainBody {
  name: string;
  status: string;
  records: Array<{ purpose: string; type: string; name: string; value: string; ok: boolean | null }>;
  certificate: { status: string; reason: string | null; expires_at: string | null } | null;
}

describe('wildcard domains over HTTPS, by DNS-01', () => {
  let named: Named;
  let pebble: Pebble;
  let api: TestApi;
  let ingress: TestIngress;
  let certs: Awaited<ReturnType<typeof testNamespace>>;
  let core: k8s.CoreV1Api;
  let root: string;
  const suffix = Date.now().toString(36);
  const base = `wild-${suffix}.example`;
  const wildcard = `*.${base}`;
  const zone = `acme-${suffix}.platform.test`;
  const app = `wild-${suffix}`;
  const json = expectJson;
  const domains = (path = '') => `/api/apps/${app}/domains${path}`;
  const encoded = encodeURIComponent(wildcard);
  const platformSecret = 'svc-apps-tls';
  let apiStarted = 0;

  const tlsGet = (servername: string): Promise<TlsAnswer> => tlsGetAt({ port: ingress.tlsPort!, ca: root, servername });

  before(async () => {
    core = kubeConfig().makeApiClient(k8s.CoreV1Api);
    certs = await testNamespace(core, 'certs');
    named = await startNamed({ zones: [zone], recursion: true, forwardTo: dnsServers()[0]! });
    const httpPort = await freePort();
    pebble = await startPebble({ httpPort, dnsServer: named.server });
    root = await pebble.rootCertificate();
    // The one record a platform team publishes for the platform's own wildcard.
    await publish({ type: 'CNAME', name: `_acme-challenge.${appsDomain}`, value: dns01Target(zone, 'platform', appsDomain) });
    api = await startTestApi({
      env: {
        SVC_DOMAINS_DNS_SERVERS: dnsServers().join(','),
        SVC_CERTIFICATES_NAMESPACE: certs.name,
        SVC_CERTIFICATES_ISSUER: 'acme',
        SVC_ACME_DIRECTORY_URL: pebble.directoryUrl,
        SVC_ACME_CA_FILE: pebble.caFile,
        SVC_ACME_HTTP01_CHECK_URL: `http://127.0.0.1:${httpPort}`,
        SVC_DNS01_ZONE: zone,
        SVC_DNS01_SERVER: named.server,
        SVC_DNS01_TSIG_KEY_NAME: named.key.name,
        SVC_DNS01_TSIG_ALGORITHM: named.key.algorithm,
        SVC_DNS01_TSIG_SECRET: named.key.secret.toString('base64'),
        SVC_CERTIFICATES_PLATFORM_ISSUER: 'dns01',
        SVC_CERTIFICATES_PLATFORM_SECRET: platformSecret,
      },
    });
    apiStarted = Date.now();
    ingress = await startTestIngress(api, {
      port: httpPort,
      tls: true,
      env: { SVC_CERTIFICATES_NAMESPACE: certs.name, SVC_CERTIFICATES_PLATFORM_SECRET: platformSecret },
    });
    await json(await api.request('POST', '/api/apps', { body: { name: app } }), 201);
    await deployLive(api, app, { files: { 'index.html': `<p>${app} under a wildcard</p>` } });
  });
  after(async () => {
    await ingress?.close();
    await api?.close();
    await pebble?.close();
    await named?.stop();
    await certs?.dispose();
  });

  it('asks for the _acme-challenge delegation, and orders nothing until it is published', async () => {
    const added = (await json<{ domain: DomainBody }>(await api.request('POST', domains(), { body: { name: wildcard } }), 201)).domain;
    const target = dns01Target(zone, api.account.id, base);
    const delegation = added.records.find((r) => r.purpose === 'certificate');
    assert.deepEqual(delegation && { type: delegation.type, name: delegation.name, value: delegation.value }, {
      type: 'CNAME',
      name: `_acme-challenge.${base}`,
      value: target,
    });
    const ownership = added.records.find((r) => r.purpose === 'ownership')!;
    await publish({ type: 'TXT', name: ownership.name, value: ownership.value });
    await publish({ type: 'CNAME', name: wildcard, value: `${app}.apps.localhost` });
    const verified = (await json<{ domain: DomainBody }>(await api.request('POST', domains(`/${encoded}/verify`)), 200)).domain;
    assert.equal(verified.status, 'verified', JSON.stringify(verified));
    await api.workers.certificateIssuer!.pass();
    const shown = (await json<{ domain: DomainBody }>(await api.request('GET', domains(`/${encoded}`)), 200)).domain;
    assert.equal(shown.certificate?.status, 'failed', JSON.stringify(shown.certificate));
    assert.match(shown.certificate.reason ?? '', new RegExp(`publish CNAME _acme-challenge\\.${base.replace(/\./g, '\\.')} → ${target}`));
    assert.deepEqual(await api.db('certificate_orders').where({ domain: wildcard }), [], 'no order the CA would fail');
  });

  it('once delegated: ordered by DNS-01 through the platform zone, served by SNI for names under it, the TXT withdrawn', async () => {
    const target = dns01Target(zone, api.account.id, base);
    await publish({ type: 'CNAME', name: `_acme-challenge.${base}`, value: target });
    const started = Date.now();
    const rechecked = (await json<{ domain: DomainBody }>(await api.request('POST', domains(`/${encoded}/verify`)), 200)).domain;
    assert.equal(rechecked.records.find((r) => r.purpose === 'certificate')?.ok, true, JSON.stringify(rechecked.records));
    const name = `api.${base}`;
    const answer = await eventually(
      'the app over HTTPS under the wildcard',
      async () => {
        await api.workers.certificateIssuer!.pass();
        const a = await tlsGet(name).catch(() => undefined);
        return a?.status === 200 ? a : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    console.log(`# wildcard certificate served ${Date.now() - started} ms after the delegation was verified (DNS-01, RFC 2136 to BIND)`);
    assert.match(answer.body, new RegExp(`<p>${app} under a wildcard</p>`));
    assert.match(answer.peer.subjectaltname ?? '', new RegExp(`DNS:\\*\\.${base.replace(/\./g, '\\.')}`));
    const shown = (await json<{ domain: DomainBody }>(await api.request('GET', domains(`/${encoded}`)), 200)).domain;
    assert.equal(shown.certificate?.status, 'issued', JSON.stringify(shown.certificate));
    const orders = await api.db('certificate_orders').where({ domain: wildcard });
    assert.deepEqual(
      orders.map((o: { outcome: string }) => o.outcome),
      ['issued'],
    );
    const secret = await core.readNamespacedSecret({ namespace: certs.name, name: certificateSecretName(wildcard) });
    assert.equal(secret.type, 'kubernetes.io/tls');
    // The challenge's TXT is withdrawn from the platform's zone once the order is done.
    const resolver = new Resolver();
    resolver.setServers([named.server]);
    // NODATA (the name's TXT gone) or NXDOMAIN (the name gone): anything else is not an answer.
    const left = await resolver.resolveTxt(target).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENODATA' || err.code === 'ENOTFOUND') return [];
      throw err;
    });
    assert.deepEqual(left, [], 'no DNS-01 record left in the zone');
    // Another name under the base is served the same certificate; the base itself is not the wildcard's.
    assert.equal((await tlsGet(`www.${base}`)).status, 200);
    await assert.rejects(tlsGet(base), /alert|handshake|socket|ECONNRESET/i);
  });

  it("the platform's own *.<apps domain>: ordered by DNS-01 into the platform Secret, served for an app's own hostname", async () => {
    const hostname = `${app}.${appsDomain}`;
    const answer = await eventually(
      "the app on its own hostname over HTTPS, with the platform's certificate",
      async () => {
        await api.workers.certificateIssuer!.pass();
        const a = await tlsGet(hostname).catch(() => undefined);
        return a?.status === 200 ? a : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500 },
    );
    console.log(
      `# platform certificate *.${appsDomain} served ${Date.now() - apiStarted} ms after the API started (ordered by its first issuer pass; DNS-01, RFC 2136 to BIND)`,
    );
    assert.match(answer.body, new RegExp(`<p>${app} under a wildcard</p>`));
    assert.match(answer.peer.subjectaltname ?? '', new RegExp(`DNS:\\*\\.${appsDomain.replace(/\./g, '\\.')}`));
    const secret = await core.readNamespacedSecret({ namespace: certs.name, name: platformSecret });
    assert.equal(secret.metadata?.labels?.[certificateLabel], 'platform');
    const orders = await api.db('certificate_orders').where({ domain: `*.${appsDomain}` });
    assert.deepEqual(
      orders.map((o: { outcome: string; account_id: string }) => [o.outcome, o.account_id]),
      [['issued', 'platform']],
      'one order, in the budget like any other',
    );
    // Another pass orders nothing more: the certificate is fresh.
    const again = await api.workers.certificateIssuer!.pass();
    assert.deepEqual([again.issued, again.renewed, again.failed], [[], [], []]);
  });
});
