// The console's root: who is signed in (GET /account with the session cookie), which page the path
// names, and sign-in whenever the API says the session is over (401).
import { useEffect, useState } from 'preact/hooks';
import { api, data, onSignedOut, type Account } from './api.js';
import { ErrorMessage } from './components/error-message.js';
import { Layout } from './components/layout.js';
import { PageHeading } from './components/page-heading.js';
import { AppPage } from './pages/app.js';
import { AuthPage } from './pages/auth.js';
import { CliLoginPage, rememberCliLogin, takeRememberedCliLogin } from './pages/cli-login.js';
import { AppEnvPage } from './pages/app-env.js';
import { AppDeploysPage } from './pages/app-deploys.js';
import { AppPreviewsPage } from './pages/app-previews.js';
import { AppDomainsPage } from './pages/app-domains.js';
import { AppLogsPage } from './pages/app-logs.js';
import { AppMetricsPage } from './pages/app-metrics.js';
import { AppAccessPage } from './pages/app-access.js';
import { UsagePage } from './pages/usage.js';
import { WebhooksPage } from './pages/webhooks.js';
import { DatabasesPage } from './pages/databases.js';
import { AppBuildsPage } from './pages/app-builds.js';
import { ImportPage } from './pages/import.js';
import { SandboxesPage, SandboxPage } from './pages/sandboxes.js';
import { VolumesPage } from './pages/volumes.js';
import { AppsPage } from './pages/apps.js';
import { EventsPage } from './pages/events.js';
import { SignInPage } from './pages/sign-in.js';
import { TokensPage } from './pages/tokens.js';
import { PasskeysPage } from './pages/passkeys.js';
import { IdpCallbackPage } from './pages/idp-callback.js';
import { hrefOf, navigate, onLinkClick, useRoute } from './router.js';

type Session =
  { state: 'checking' } | { state: 'signed-in'; account: Account } | { state: 'signed-out' } | { state: 'failed'; error: unknown };

export function Shell() {
  const route = useRoute();
  const [session, setSession] = useState<Session>({ state: 'checking' });
  useEffect(() => {
    document.addEventListener('click', onLinkClick);
    const off = onSignedOut(() => setSession({ state: 'signed-out' }));
    data(api.GET('/account')).then(
      (account) => setSession({ state: 'signed-in', account }),
      (err: unknown) => setSession((err as { status?: number }).status === 401 ? { state: 'signed-out' } : { state: 'failed', error: err }),
    );
    return () => {
      document.removeEventListener('click', onLinkClick);
      off();
    };
  }, []);
  // Signed out: the sign-in page, at its own address; signed in: never the sign-in page.
  useEffect(() => {
    if (session.state === 'signed-out' && route.page !== 'sign-in' && route.page !== 'auth' && route.page !== 'idp-callback') {
      // A svc login's code, kept to come back to after sign-in (which opens the console at its start).
      if (route.page === 'cli-login') rememberCliLogin(route.code);
      navigate(hrefOf({ page: 'sign-in' }), { replace: true });
    }
    const cliLogin =
      session.state === 'signed-in' && (route.page === 'apps' || route.page === 'sign-in') ? takeRememberedCliLogin() : undefined;
    if (cliLogin) navigate(hrefOf({ page: 'cli-login', code: cliLogin }), { replace: true });
    else if (session.state === 'signed-in' && route.page === 'sign-in') navigate(hrefOf({ page: 'apps' }), { replace: true });
  }, [session.state, route.page]);

  // A mailed link's page, signed in or not: it ends by opening the console afresh.
  if (route.page === 'auth') return <AuthPage code={route.code} />;
  if (route.page === 'idp-callback') return <IdpCallbackPage search={route.search} />;
  if (session.state === 'checking') return <p role="status">Loading the console…</p>;
  if (session.state === 'failed')
    return (
      <main id="main" class="narrow">
        <PageHeading title="Unavailable">The console cannot start</PageHeading>
        <ErrorMessage doing="Asking the API who is signed in" error={session.error} />
      </main>
    );
  if (session.state === 'signed-out') return <SignInPage />;
  return (
    <Layout account={session.account} current={route.page} onSignedOut={() => setSession({ state: 'signed-out' })}>
      {route.page === 'apps' && <AppsPage />}
      {route.page === 'app' && <AppPage name={route.name} />}
      {route.page === 'app-env' && <AppEnvPage name={route.name} />}
      {route.page === 'app-deploys' && <AppDeploysPage name={route.name} open={route.deploy} />}
      {route.page === 'app-previews' && <AppPreviewsPage name={route.name} />}
      {route.page === 'app-domains' && <AppDomainsPage name={route.name} />}
      {route.page === 'app-logs' && <AppLogsPage name={route.name} />}
      {route.page === 'app-metrics' && <AppMetricsPage name={route.name} />}
      {route.page === 'app-access' && <AppAccessPage name={route.name} />}
      {route.page === 'webhooks' && <WebhooksPage open={route.webhook} />}
      {route.page === 'usage' && <UsagePage />}
      {route.page === 'databases' && <DatabasesPage />}
      {route.page === 'sandboxes' && <SandboxesPage />}
      {route.page === 'sandbox' && <SandboxPage id={route.id} />}
      {route.page === 'app-builds' && <AppBuildsPage name={route.name} open={route.build} />}
      {route.page === 'import' && <ImportPage />}
      {route.page === 'volumes' && <VolumesPage />}
      {route.page === 'tokens' && <TokensPage />}
      {route.page === 'passkeys' && <PasskeysPage />}
      {route.page === 'events' && <EventsPage />}
      {route.page === 'cli-login' && <CliLoginPage code={route.code} />}
      {route.page === 'not-found' && (
        <>
          <PageHeading title="Not found">No such page</PageHeading>
          <p>
            The console has no page at {route.path}. <a href={hrefOf({ page: 'apps' })}>See your apps</a>.
          </p>
        </>
      )}
      {route.page === 'sign-in' && <p role="status">Signed in; opening your apps…</p>}
    </Layout>
  );
}
