// A platform with every sign-in provider for tests: a test API and ingress-auth configured with the
// real oidc-provider (idp) and the code host's double (GitHub's interface), apps deployed with the
// given policies (an echo handler under /api/**), and a browser's whole provider round trip.
import assert from 'node:assert/strict';
import { startTestApi, type TestApi } from './api.js';
import { startTestCodehost, type TestCodehost } from './codehost.js';
import { appsDomain, Browser, fragmentSecret, freePort, startTestIngress, type Answer, type TestIngress } from './ingress.js';
import { startTestOidcProvider, type TestOidcProvider } from './oidc-provider.js';
import { eventually } from './wait.js';

export const echoHandler = 'export default (req) => Object.fromEntries(req.headers)\n';

export interface ProviderPlatform {
  api: TestApi;
  ia: TestIngress;
  op: TestOidcProvider;
  gh: TestCodehost;
  port: number;
  /** `<app>.apps.localhost:<port>`, as a browser names it. */
  host(app: string): string;
  fetchJson(b: Browser, app: string, path: string): Promise<Answer>;
  /** The whole provider round trip in one browser: start on the app, the provider, the callback, the handoff. */
  providerSignIn(b: Browser, app: string, provider: 'idp' | 'codehost', who: string): Promise<Answer>;
  close(): Promise<void>;
}

export async function startProviderPlatform(opts: {
  /** App name → policy line of `x-svc.auth` (e.g. `emails: [ada@other.test]`). */
  apps: Record<string, string>;
  idpAccounts: Parameters<typeof startTestOidcProvider>[0]['accounts'];
  codehostUsers: Array<Parameters<TestCodehost['addUser']>[0]>;
}): Promise<ProviderPlatform> {
  const port = await freePort();
  const host = (app: string) => `${app}.${appsDomain}:${port}`;
  const loginHost = `login.${appsDomain}:${port}`;
  const callbacks = (p: string) => `http://${loginHost}/_svc/auth/${p}/callback`;
  const op = await startTestOidcProvider({ redirectUris: [callbacks('idp')], accounts: opts.idpAccounts });
  const gh = await startTestCodehost({ callbackUrl: callbacks('codehost') });
  for (const u of opts.codehostUsers) gh.addUser(u);
  const api = await startTestApi({ env: { SVC_ROLLOUT_DEADLINE_SECONDS: '30', SVC_APPS_URL_SUFFIX: `:${port}` } });
  const ia = await startTestIngress(api, {
    port,
    env: {
      SVC_APPS_URL_SUFFIX: `:${port}`,
      SVC_IDP_ISSUER: op.issuer,
      SVC_IDP_CLIENT_ID: op.clientId,
      SVC_IDP_CLIENT_SECRET: op.clientSecret,
      SVC_CODEHOST_URL: gh.url,
      SVC_CODEHOST_API_URL: gh.apiUrl,
      SVC_CODEHOST_CLIENT_ID: gh.clientId,
      SVC_CODEHOST_CLIENT_SECRET: gh.clientSecret,
    },
  });
  const fetchJson = (b: Browser, app: string, path: string) =>
    b.request(host(app), path, {
      headers: [
        ['Sec-Fetch-Mode', 'cors'],
        ['Accept', 'application/json'],
      ],
    });
  const location = (r: Answer) => {
    assert.equal(r.status, 303, r.body);
    return String(r.headers.location);
  };
  const providerSignIn = async (b: Browser, app: string, provider: 'idp' | 'codehost', who: string): Promise<Answer> => {
    const start = await b.request(host(app), '/_svc/auth/' + provider + '/start?next=%2Fapi%2Fecho', {
      headers: [['Sec-Fetch-Mode', 'navigate']],
    });
    const authorize = location(start);
    assert.ok(b.cookie(host(app), 'svc-flow'), 'the flow is bound to this browser');
    const callback = provider === 'idp' ? await op.signIn(authorize, who) : await gh.signIn(authorize, who);
    assert.equal(callback.host, loginHost, 'one callback host for every app');
    const back = location(await b.request(loginHost, callback.pathname + callback.search));
    assert.ok(back.startsWith(`http://${host(app)}/_svc/auth/login?next=%2Fapi%2Fecho#handoff=`), back);
    return b.redeem(host(app), fragmentSecret(back));
  };

  const ids: Array<[string, string]> = [];
  for (const [app, policy] of Object.entries(opts.apps)) {
    const created = await api.request('POST', '/api/apps', { body: { name: app } });
    assert.equal(created.status, 201, await created.text());
    const compose = `x-svc:\n  auth:\n    ${policy}\n    paths: [/api/**]\n`;
    const res = await api.request('POST', `/api/apps/${app}/deploy`, { body: { compose, files: { 'api/echo.js': echoHandler } } });
    assert.equal(res.status, 202, await res.clone().text());
    ids.push([app, ((await res.json()) as { id: string }).id]);
  }
  for (const [app, id] of ids) {
    await eventually(
      `${app} live`,
      async () => ((await (await api.request('GET', `/api/deploys/${id}`)).json()) as { status: string }).status === 'live',
      { timeoutMs: 90_000 },
    );
    await eventually(`${app} in the ingress`, async () => (await fetchJson(new Browser(ia.url), app, '/api/echo')).status === 401, {
      timeoutMs: 30_000,
    });
  }
  return {
    api,
    ia,
    op,
    gh,
    port,
    host,
    fetchJson,
    providerSignIn,
    close: async () => {
      await ia.close();
      await api.close();
      await op.close();
      await gh.close();
    },
  };
}
