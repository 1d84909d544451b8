// Custom domains through ingress-auth, against the test cluster (docs/decisions/0027-app-domains.md):
// a Domain made Verified through its status subresource serves its App exactly as the app's own
// hostname does; a wildcard serves one label under it; the app's policy and sign-in follow the custom
// host; Misconfigured or deleted stops routing at the informer's event, a session notwithstanding;
// a Domain of another namespace serves only an App of its own namespace. The Domains are written
// here directly: on a platform the API's verifier sets their status (test/integration/domains.test.ts).
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { RouteTable } from '../../ingress-auth/routes.js';
import { mergePatch } from '../../lib/kube/client.js';
import { pluralOf } from '../../lib/contract.js';
import { group, version, type DomainStatus } from '../../lib/resources/index.js';
import { startTestApi, type TestApi } from '../support/api.js';
import { appsDomain, Browser, fragmentSecret, startTestIngress, type Answer, type TestIngress } from '../support/ingress.js';
import { kubeConfig, testNamespace, uniqueName } from '../support/kube.js';
import { eventually } from '../support/wait.js';

const echoHandler = 'export default (req) => Object.fromEntries(req.headers)\n';
const policy = 'x-svc:\n  auth:\n    owner: true\n    paths: [/api/**]\n';
/** How long a Domain's change may take to reach the routing: the informer's event, not a resync. */
const atOnce = { timeoutMs: 5_000, intervalMs: 50 };

describe('ingress-auth custom domains', () => {
  let api: TestApi;
  let ia: TestIngress;
  let custom: k8s.CustomObjectsApi;
  let elsewhere: Awaited<ReturnType<typeof testNamespace>>;
  const app = uniqueName('dom');
  // Names no other test file or earlier run holds: of two verified Domains of one name the oldest
  // serves, and a leftover would take this file's.
  const shop = `${uniqueName('shop')}.example`;
  const theirs = `${uniqueName('theirs')}.example`;
  const appHost = `${app}.${appsDomain}`;
  const home = `<h1>${app} home</h1>`;

  const json = async <T>(res: Response, status: number): Promise<T> => {
    const text = await res.text();
    assert.equal(res.status, status, text);
    return JSON.parse(text) as T;
  };

  const createDomain = async (namespace: string, domain: string, target: string): Promise<string> => {
    const name = uniqueName('d');
    await custom.createNamespacedCustomObject({
      group,
      version,
      namespace,
      plural: pluralOf('Domain'),
      body: { apiVersion: `${group}/${version}`, kind: 'Domain', metadata: { name }, spec: { domain, app: target } },
    });
    return name;
  };
  const setPhase = (namespace: string, name: string, phase: NonNullable<DomainStatus['phase']>) =>
    custom.patchNamespacedCustomObjectStatus(
      { group, version, namespace, plural: pluralOf('Domain'), name, body: { status: { phase } } },
      mergePatch,
    );
  const deleteDomain = (namespace: string, name: string) =>
    custom.deleteNamespacedCustomObject({ group, version, namespace, plural: pluralOf('Domain'), name });

  const navigate = (b: Browser, host: string, path: string) =>
    b.request(host, path, {
      headers: [
        ['Sec-Fetch-Mode', 'navigate'],
        ['Sec-Fetch-Dest', 'document'],
        ['Accept', 'text/html'],
      ],
    });
  const fetchJson = (b: Browser, host: string, path: string) =>
    b.request(host, path, {
      headers: [
        ['Sec-Fetch-Mode', 'cors'],
        ['Sec-Fetch-Dest', 'empty'],
        ['Accept', 'application/json'],
      ],
    });
  /** The answer on `host` once `ok` holds, within the informer's event (atOnce). */
  const soon = async (what: string, host: string, ok: (a: Answer) => boolean, b = new Browser(ia.url), path = '/') => {
    let last = '';
    return eventually(
      what,
      async () => {
        const a = await b.request(host, path, { headers: [['Accept', 'application/json']] });
        last = `${a.status} ${a.body.slice(0, 200)}`;
        return ok(a) ? a : undefined;
      },
      atOnce,
    ).catch((err: Error) => Promise.reject(new Error(`${err.message}; last answer on ${host}: ${last}`)));
  };
  const served = (a: Answer) => a.status === 200 && a.body.includes(home);
  const unknown = (a: Answer) => a.status === 404 && /no app is served at/.test(a.body);
  const signInAsOwner = async (b: Browser, host: string) => {
    const link = await json<{ url: string }>(await api.request('POST', `/api/apps/${app}/auth/owner-link`, { body: { next: '/' } }), 201);
    // The link names the app hostname; its one-time handoff is the app's, redeemed on any host that serves it.
    const r = await b.redeem(host, fragmentSecret(link.url));
    assert.equal(r.status, 200, r.body);
    return r;
  };

  before(async () => {
    api = await startTestApi({ env: { SVC_ROLLOUT_DEADLINE_SECONDS: '30' } });
    ia = await startTestIngress(api);
    const kc = kubeConfig();
    custom = kc.makeApiClient(k8s.CustomObjectsApi);
    elsewhere = await testNamespace(kc.makeApiClient(k8s.CoreV1Api), 'domains');
    await json(await api.request('POST', '/api/apps', { body: { name: app } }), 201);
    const files = {
      'handlers/index.js': `export default () => new Response('${home}', { headers: { 'content-type': 'text/html' } })\n`,
      'api/echo.js': echoHandler,
    };
    const { id } = await json<{ id: string }>(
      await api.request('POST', `/api/apps/${app}/deploy`, { body: { compose: policy, files } }),
      202,
    );
    await eventually(
      `${app} deploy ${id} live`,
      async () => {
        const d = await json<{ status: string }>(await api.request('GET', `/api/deploys/${id}`), 200);
        if (d.status === 'failed') throw new Error(`deploy failed: ${JSON.stringify(d)}`);
        return d.status === 'live';
      },
      { timeoutMs: 90_000, intervalMs: 250 },
    );
    await eventually(`${app} served on its hostname`, async () => served(await new Browser(ia.url).request(appHost, '/')), {
      timeoutMs: 30_000,
    });
  });
  after(async () => {
    await ia?.close();
    await elsewhere?.dispose();
    await api?.close();
  });

  it('serves a verified domain exactly as the app hostname, and a wildcard one label under it', async () => {
    const ns = api.account.namespace;
    const exact = await createDomain(ns, shop, app);
    await setPhase(ns, exact, 'Pending');
    assert.ok(unknown(await new Browser(ia.url).request(shop, '/')), 'not while Pending');
    await setPhase(ns, exact, 'Verified');
    const r = await soon(`${shop} to serve ${app}`, shop, served);
    assert.match(String(r.headers['x-request-id']), /^[0-9a-f-]{36}$/);
    for (const h of [`${shop}:8081`, `${shop.toUpperCase()}.`])
      assert.ok(served(await new Browser(ia.url).request(h, '/')), `${h}: the same name`);
    const echo = JSON.parse((await new Browser(ia.url).request(shop, '/api/echo', { headers: [['Accept', 'application/json']] })).body) as {
      error?: string;
    };
    assert.equal(echo.error, 'authentication_required', 'the policy of the app on its custom domain');

    const www = `www.${shop}`;
    assert.ok(unknown(await new Browser(ia.url).request(www, '/')), 'no wildcard yet');
    const wildcard = await createDomain(ns, `*.${shop}`, app);
    await setPhase(ns, wildcard, 'Pending');
    assert.ok(unknown(await new Browser(ia.url).request(www, '/')), 'not while the wildcard is Pending');
    await setPhase(ns, wildcard, 'Verified');
    await soon(`${www} to serve ${app}`, www, served);
    assert.ok(unknown(await new Browser(ia.url).request(`a.b.${shop}`, '/')), 'a wildcard matches one label');
    assert.ok(served(await new Browser(ia.url).request(shop, '/')), 'the exact name still serves');
  });

  it("applies the app's policy on the custom host: sign-in, the session and its cookie are that host's", async () => {
    const b = new Browser(ia.url);
    const nav = await navigate(b, shop, '/api/echo');
    assert.equal(nav.status, 303);
    // Relative: the browser stays on the custom host for sign-in.
    assert.equal(nav.headers.location, `/_svc/auth/login?next=${encodeURIComponent('/api/echo')}`);
    const login = await navigate(b, shop, '/_svc/auth/login?next=%2Fapi%2Fecho');
    assert.equal(login.status, 200, login.body);
    assert.match(login.body, new RegExp(`Sign in to ${app}`));
    const script = await fetchJson(b, shop, '/api/echo');
    assert.equal(script.status, 401);
    assert.match(String(script.headers['www-authenticate']), new RegExp(`realm="${shop.replace(/\./g, '\\.')}"`));

    const signed = await signInAsOwner(b, shop);
    assert.doesNotMatch(String(signed.headers['set-cookie']), /domain=/i, 'host-only');
    assert.ok(b.cookie(shop, 'svc-session'), 'the session cookie is set on the custom host');
    const echo = await fetchJson(b, shop, '/api/echo');
    assert.equal(echo.status, 200, echo.body);
    assert.equal((JSON.parse(echo.body) as Record<string, string>).host?.replace(/:\d+$/, ''), shop);
    // The same cookie is no session on the app hostname (sessions are one host's).
    b.setCookie(appHost, 'svc-session', b.cookie(shop, 'svc-session')!);
    assert.equal((await fetchJson(b, appHost, '/api/echo')).status, 401);
  });

  it('stops routing a domain once it is Misconfigured or deleted, a valid session notwithstanding', async () => {
    const ns = api.account.namespace;
    const host = `${uniqueName('gone')}.example`;
    const name = await createDomain(ns, host, app);
    await setPhase(ns, name, 'Verified');
    await soon(`${host} to serve ${app}`, host, served);
    const b = new Browser(ia.url);
    await signInAsOwner(b, host);
    assert.equal((await fetchJson(b, host, '/api/echo')).status, 200, 'signed in on the domain');

    await setPhase(ns, name, 'Misconfigured');
    await soon(`${host} to stop routing (Misconfigured)`, host, unknown, b, '/api/echo');
    assert.ok(unknown(await b.request(host, '/')));
    await setPhase(ns, name, 'Verified');
    await soon(`${host} to serve again (Verified)`, host, (a) => a.status === 200, b, '/api/echo');
    await deleteDomain(ns, name);
    await soon(`${host} to stop routing (deleted)`, host, unknown, b, '/api/echo');
    assert.ok(served(await new Browser(ia.url).request(appHost, '/')), 'the app hostname is untouched');
  });

  it("never serves this namespace's app through a Domain of another namespace", async () => {
    const routes = ia.ingress.routes;
    assert.ok(routes instanceof RouteTable);
    // The other namespace's Domain names this app's name; there is no App of that name there.
    const name = await createDomain(elsewhere.name, theirs, app);
    await setPhase(elsewhere.name, name, 'Verified');
    await eventually(`${theirs} in the domain index`, () => routes.domains.target(theirs) !== undefined, atOnce);
    const r = await new Browser(ia.url).request(theirs, '/', { headers: [['Accept', 'application/json']] });
    assert.ok(unknown(r), `${r.status} ${r.body}`);
    // Once the other namespace has an App of that name, that one serves it (not deployed: a 503).
    await custom.createNamespacedCustomObject({
      group,
      version,
      namespace: elsewhere.name,
      plural: pluralOf('App'),
      body: { apiVersion: `${group}/${version}`, kind: 'App', metadata: { name: app }, spec: {} },
    });
    const other = await soon(`${theirs} served by the other namespace's App`, theirs, (a) => a.status !== 404);
    assert.equal(other.status, 503, other.body);
    assert.deepEqual(JSON.parse(other.body), { error: 'the app is not deployed yet' });
    assert.ok(served(await new Browser(ia.url).request(appHost, '/')), 'the older App keeps its hostname');
    assert.ok(served(await new Browser(ia.url).request(shop, '/')), "and this namespace's domain its App");
  });
});
