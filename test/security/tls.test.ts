// Attacks on HTTPS (docs/decisions/0028-https.md, issue 32), against ingress-auth's TLS listener on
// the test cluster, its certificates and challenges fed the way the issuer writes them (Secrets and
// ConfigMaps in the certificates namespace) and its Domains made Verified through their status, as the
// verifier would (test/integration/https-domains.test.ts does it all through a real CA):
// - a connection opened for one tenant's domain carrying a request for another's (or for an app
//   hostname): 421, nothing of the other app;
// - another account's certificate (its wildcard, or one left behind for a name that moved) never
//   shown for a name this account's Domain routes; a certificate for a name not verified serves nobody;
// - an SNI name nobody has, no SNI, and a flood of handshakes for random names: no certificate, no
//   order at the CA, bounded work, and the listener still serving;
// - HTTP-01 answers only for the challenge's own host and token, never proxied to the app.
import assert from 'node:assert/strict';
import { request as httpsRequest } from 'node:https';
import { connect as tlsConnect, type PeerCertificate, type TLSSocket } from 'node:tls';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { challengeConfigMapName, challengeLabel } from '../../lib/certificates/contract.js';
import { pluralOf } from '../../lib/contract.js';
import { mergePatch } from '../../lib/kube/client.js';
import { group, version } from '../../lib/resources/index.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { certificateFor, certificateSecret, type Pem } from '../support/certificates.js';
import { Browser, startTestIngress, type TestIngress } from '../support/ingress.js';
import { kubeConfig, testNamespace, uniqueName } from '../support/kube.js';
import { eventually } from '../support/wait.js';

describe('HTTPS attacks on ingress-auth', () => {
  let api: TestApi;
  let ingress: TestIngress;
  let core: k8s.CoreV1Api;
  let custom: k8s.CustomObjectsApi;
  let certs: Awaited<ReturnType<typeof testNamespace>>;
  let a: Awaited<ReturnType<typeof testNamespace>>;
  let b: Awaited<ReturnType<typeof testNamespace>>;
  const id = Date.now().toString(36);
  const shopA = `shop-a-${id}.example`;
  const shopB = `shop-b-${id}.example`;
  const wild = `w-${id}.example`;
  const pending = `pending-${id}.example`;
  const pems: Record<string, Pem> = {};

  const handshake = (servername: string | undefined): Promise<PeerCertificate> =>
    new Promise((resolve, reject) => {
      const socket: TLSSocket = tlsConnect({
        host: '127.0.0.1',
        port: ingress.tlsPort!,
        servername: servername ?? '',
        rejectUnauthorized: false,
      });
      socket.setTimeout(5_000, () => socket.destroy(new Error('timed out')));
      socket.once('secureConnect', () => {
        const peer = socket.getPeerCertificate();
        socket.end();
        resolve(peer);
      });
      socket.once('error', reject);
    });
  const get = (servername: string, host: string, path = '/'): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = httpsRequest(
        { host: '127.0.0.1', port: ingress.tlsPort, path, servername, headers: { host }, rejectUnauthorized: false, agent: false },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.end();
    });

  const app = async (namespace: string, name: string): Promise<void> => {
    await custom.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: pluralOf('App'),
      body: { apiVersion: `${group}/${version}`, kind: 'App', metadata: { name }, spec: {} },
    });
  };
  const domain = async (namespace: string, name: string, target: string, phase: 'Verified' | 'Pending') => {
    const objectName = uniqueName('d');
    await custom.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: pluralOf('Domain'),
      body: { apiVersion: `${group}/${version}`, kind: 'Domain', metadata: { name: objectName }, spec: { domain: name, app: target } },
    });
    await custom.patchNamespacedCustomObjectStatus(
      { group, version, namespace, plural: pluralOf('Domain'), name: objectName, body: { status: { phase } } },
      mergePatch,
    );
  };
  const secret = (name: string, namespace: string) =>
    core.createNamespacedSecret({ namespace: certs.name, body: certificateSecret(pems[name]!, name, namespace) });

  before(async () => {
    const kc = kubeConfig();
    core = kc.makeApiClient(k8s.CoreV1Api);
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    certs = await testNamespace(core, 'tls-certs');
    a = await testNamespace(core, 'tls-a');
    b = await testNamespace(core, 'tls-b');
    api = await startTestApi();
    ingress = await startTestIngress(api, { tls: true, env: { SVC_CERTIFICATES_NAMESPACE: certs.name } });
    for (const name of [shopA, shopB, `*.${wild}`, pending]) pems[name] = await certificateFor(name);
    await app(a.name, 'web');
    await app(b.name, 'web');
    await domain(a.name, shopA, 'web', 'Verified');
    await domain(b.name, shopB, 'web', 'Verified');
    await domain(a.name, `*.${wild}`, 'web', 'Verified');
    // b verified one name under a's wildcard exactly (it holds that name's DNS).
    await domain(b.name, `x.${wild}`, 'web', 'Verified');
    await domain(a.name, pending, 'web', 'Pending');
    await secret(shopA, a.name);
    await secret(shopB, b.name);
    await secret(`*.${wild}`, a.name);
    await secret(pending, a.name);
    await eventually('both tenants’ certificates served', async () => {
      const [x, y] = await Promise.all([handshake(shopA).catch(() => undefined), handshake(shopB).catch(() => undefined)]);
      return x?.subjectaltname === `DNS:${shopA}` && y?.subjectaltname === `DNS:${shopB}`;
    });
  });
  after(async () => {
    await ingress?.close();
    await api?.close();
    for (const ns of [a, b, certs]) await ns?.dispose();
  });

  it("answers 421 to a request for another tenant's domain, or an app hostname, on a connection opened for one's own", async () => {
    const own = await get(shopA, shopA);
    assert.notEqual(own.status, 421, 'its own name is served (the app has no machines: not 421)');
    for (const host of [shopB, `${shopB}:${ingress.tlsPort}`, shopB.toUpperCase(), `web.apps.localhost`, `x.${wild}`]) {
      const r = await get(shopA, host);
      assert.equal(r.status, 421, host);
      assert.doesNotMatch(r.body, /web/);
    }
  });

  it("never shows another account's certificate: its wildcard for a name this account routes, nor one left for a moved name", async () => {
    // x.<wild> routes to b (an exact name wins over a's wildcard), which has no certificate of its own.
    await assert.rejects(handshake(`x.${wild}`), /alert|handshake|ECONNRESET|socket/i);
    // y.<wild> routes to a by its wildcard: a's wildcard certificate.
    assert.equal((await handshake(`y.${wild}`)).subjectaltname, `DNS:*.${wild}`);
    // shop-b's name, with a certificate annotated for a (as left behind if the name moved from a to b).
    await core.replaceNamespacedSecret({
      namespace: certs.name,
      name: certificateSecret(pems[shopB]!, shopB, a.name).metadata!.name!,
      body: certificateSecret(pems[shopB]!, shopB, a.name),
    });
    await eventually('the misattributed certificate no longer shown', async () =>
      handshake(shopB).then(
        () => false,
        () => true,
      ),
    );
    await core.replaceNamespacedSecret({
      namespace: certs.name,
      name: certificateSecret(pems[shopB]!, shopB, b.name).metadata!.name!,
      body: certificateSecret(pems[shopB]!, shopB, b.name),
    });
    await eventually(
      'its own certificate back',
      async () => (await handshake(shopB).catch(() => undefined))?.subjectaltname === `DNS:${shopB}`,
    );
  });

  it('shows no certificate for a name not verified, a name nobody has, or no SNI', async () => {
    for (const name of [pending, `nobody-${id}.example`, 'localhost', undefined])
      await assert.rejects(handshake(name), /alert|handshake|ECONNRESET|socket/i, String(name));
  });

  it('withstands a flood of handshakes for random names: none gets a certificate, no order is made, work stays bounded', async () => {
    const started = Date.now();
    let refused = 0;
    const names = Array.from({ length: 400 }, (_, i) => `r${i}-${Math.random().toString(36).slice(2)}.example`);
    for (let i = 0; i < names.length; i += 40)
      await Promise.all(
        names.slice(i, i + 40).map((n) =>
          handshake(n).then(
            () => undefined,
            () => void refused++,
          ),
        ),
      );
    const ms = Date.now() - started;
    console.log(`# 400 handshakes for random names refused in ${ms} ms`);
    assert.equal(refused, names.length);
    assert.ok(ms < 20_000, `bounded: ${ms} ms`);
    // Nothing of it reached the issuer: no order row, no challenge, no certificate.
    assert.equal((await api.db('certificate_orders').whereIn('domain', names)).length, 0);
    assert.equal((await core.listNamespacedSecret({ namespace: certs.name })).items.length, 4);
    // And the listener still serves.
    assert.equal((await handshake(shopA)).subjectaltname, `DNS:${shopA}`);
  });

  it("answers HTTP-01 only for the challenge's own host and token, and never proxies that path to the app", async () => {
    const token = 'Tk_' + 'a'.repeat(40);
    await core.createNamespacedConfigMap({
      namespace: certs.name,
      body: {
        metadata: { name: challengeConfigMapName(token), labels: { [challengeLabel]: 'http-01' } },
        data: { domain: shopA, token, keyAuthorization: `${token}.thumbprint` },
      },
    });
    const browser = new Browser(ingress.url);
    const path = `/.well-known/acme-challenge/${token}`;
    const answered = await eventually('the challenge answered', async () => {
      const r = await browser.request(shopA, path);
      return r.status === 200 ? r : undefined;
    });
    assert.equal(answered.body, `${token}.thumbprint`);
    for (const [host, p] of [
      [shopB, path],
      [`web.apps.localhost`, path],
      [shopA, `/.well-known/acme-challenge/${token.slice(0, -1)}`],
      [shopA, `/.well-known/acme-challenge/${token}/x`],
    ] as const) {
      const r = await browser.request(host, p);
      assert.equal(r.status, 404, `${host}${p}: ${r.status} ${r.body.slice(0, 100)}`);
      assert.doesNotMatch(r.body, /thumbprint/);
    }
    // A path that only looks like one (it resolves to /etc/passwd) is no challenge: it is redirected
    // to HTTPS like any other path of a name with a certificate, and answers no key authorization.
    const traversal = await browser.request(shopA, `/.well-known/acme-challenge/..%2f..%2f..%2fetc%2fpasswd`);
    assert.ok([308, 400, 404].includes(traversal.status), `${traversal.status}`);
    assert.doesNotMatch(`${traversal.body} ${String(traversal.headers.location)}`, /thumbprint|acme-challenge/);
  });
});
