// One app's overview: its URL, its status in words, the live deploy and how many custom domains it has.
import { useEffect, useState } from 'preact/hooks';
import { api, data, type App, type Deploy, type Domain } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { ForkApp } from '../components/fork-app.js';
import { PageHeading } from '../components/page-heading.js';
import { hrefOf } from '../router.js';
import { expiryInWords } from '../deploys.js';
import { statusInWords } from '../status.js';
import { when } from '../time.js';
import { useAction } from '../use-action.js';

interface Overview {
  app: App;
  deploy: Deploy | undefined;
  domains: Domain[];
}

async function overviewOf(name: string): Promise<Overview> {
  const appID = name;
  const [app, { domains }] = await Promise.all([
    data(api.GET('/apps/{appID}', { params: { path: { appID } } })),
    data(api.GET('/apps/{appID}/domains', { params: { path: { appID } } })),
  ]);
  const deploy = app.current_deploy
    ? await data(api.GET('/deploys/{deployID}', { params: { path: { deployID: app.current_deploy } } }))
    : undefined;
  return { app, deploy, domains };
}

/**
 * "Open signed in": the app at its own address with a one-time owner link (POST
 * /apps/{app}/auth/owner-link), as `svc open` does and as the app's sign-in page tells its owner to.
 * The same tab goes there: a window opened after the call's await would be a blocked pop-up.
 */
function OpenAsOwner({ name }: { name: string }) {
  const { busy, failure, run } = useAction();
  const open = () =>
    void run(
      `Opening ${name} signed in`,
      () => data(api.POST('/apps/{appID}/auth/owner-link', { params: { path: { appID: name } }, body: {} })),
      {
        after: (link) => window.location.assign(link.url),
      },
    );
  return (
    <>
      <button type="button" class="secondary small" id="open-as-owner" disabled={busy} onClick={open}>
        Open signed in<span class="visually-hidden"> to {name} as its owner</span>
      </button>
      {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
    </>
  );
}

export function AppPage({ name }: { name: string }) {
  const [overview, setOverview] = useState<Overview | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    let live = true;
    setOverview(undefined);
    setError(undefined);
    overviewOf(name).then(
      (o) => live && setOverview(o),
      (err: unknown) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, [name]);
  const status = overview && statusInWords(overview.app);
  return (
    <>
      <p class="crumbs">
        <a href={hrefOf({ page: 'apps' })}>Apps</a> / {name}
      </p>
      <PageHeading title={name}>{name}</PageHeading>
      {error !== undefined && <ErrorMessage doing={`Loading app ${name}`} error={error} />}
      {!overview && error === undefined && <p role="status">Loading…</p>}
      {overview && status && (
        <dl class="facts">
          <dt>URL</dt>
          <dd>
            {overview.app.url ? (
              <>
                <a href={overview.app.url}>{overview.app.url}</a> <OpenAsOwner name={name} />
              </>
            ) : (
              <span class="muted">none until it is deployed</span>
            )}
          </dd>
          <dt>Status</dt>
          <dd id="app-status">
            <span class={`dot ${status.tone}`} aria-hidden="true" />
            {status.text}
          </dd>
          {overview.app.rollout && (
            <>
              <dt>Rollout</dt>
              <dd>{overview.app.rollout}</dd>
            </>
          )}
          <dt>Live deploy</dt>
          <dd id="app-deploy">
            {overview.deploy ? (
              <>
                <code>{overview.deploy.id}</code> ({overview.deploy.kind}, from {overview.deploy.origin}
                {overview.deploy.origin_deploy && (
                  <>
                    {' '}
                    of <code>{overview.deploy.origin_deploy}</code>
                  </>
                )}
                ), live since {when(overview.deploy.live_at)}
              </>
            ) : (
              <span class="muted">none yet</span>
            )}
          </dd>
          <dt>Custom domains</dt>
          <dd>
            <span id="app-domains">
              {overview.domains.length === 0 ? 'none' : `${overview.domains.length}: ${overview.domains.map((d) => d.name).join(', ')}`}
            </span>{' '}
            (<a href={hrefOf({ page: 'app-domains', name })}>Custom domains of {name}</a>)
          </dd>
          <dt>Created</dt>
          <dd>{when(overview.app.created_at)}</dd>
          {overview.app.expires_at && (
            <>
              <dt>Expiry</dt>
              <dd id="app-expiry">{expiryInWords(overview.app.expires_at)}</dd>
            </>
          )}
          <dt>Deploys</dt>
          <dd>
            <a href={hrefOf({ page: 'app-deploys', name })}>Deploys of {name}</a> (build logs, rollback);{' '}
            <a href={hrefOf({ page: 'app-builds', name })}>Builds of {name}</a> (logs, cancel, its Git repository)
          </dd>
          <dt>Runtime</dt>
          <dd>
            <a href={hrefOf({ page: 'app-logs', name })}>Logs of {name}</a> (live) and{' '}
            <a href={hrefOf({ page: 'app-metrics', name })}>Metrics of {name}</a> (requests, errors, latency)
          </dd>
          <dt>Previews</dt>
          <dd>
            <a href={hrefOf({ page: 'app-previews', name })}>Previews of {name}</a>
          </dd>
          <dt>Access</dt>
          <dd>
            <a href={hrefOf({ page: 'app-access', name })}>Access to {name}</a> (policy, app users, sessions)
          </dd>
          <dt>Environment</dt>
          <dd>
            <a href={hrefOf({ page: 'app-env', name })}>Environment variables of {name}</a>
          </dd>
        </dl>
      )}
      {overview && <ForkApp key={name} name={name} />}
    </>
  );
}
