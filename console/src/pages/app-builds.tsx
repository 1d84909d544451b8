// An app's builds, newest first (GET /apps/{appID}/builds, its 50 newest): status in words, source,
// the deploy each made, when and how long. One opens to its log at its own address
// (/console/apps/<name>/builds/<id>), shown by the deploys page's BuildLog (followed with
// ?follow=true while the build runs). Cancel, on a queued or running build, asks in the page first
// (POST /builds/{id}/cancel). The list is read again every two seconds while a build runs. Above
// it, the Git repositories the builds came from (an imported app's: its branch and the newest
// commit built), since the API keeps no list of imports of its own (docs/api/imports.md).
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, data, type Build } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { buildPending, buildRunning, buildStatusInWords } from '../deploys.js';
import { hrefOf } from '../router.js';
import { buildSourceInWords, repositoriesOf, sortBuilds } from '../sandboxes.js';
import { when } from '../time.js';
import { useAction } from '../use-action.js';
import { BuildLog } from './app-deploys.js';
import { TableHead } from '../components/table-head.js';
import { ConfirmStep } from '../components/confirm-step.js';

/** Builds asked for (the API's most is 100). */
const listed = 50;
/** How often the list is read again while a build runs. */
const pollMs = 2000;

/** An app's builds page: a fresh one for each app (no message or confirmation carried over). */
export function AppBuildsPage({ name, open }: { name: string; open?: string | undefined }) {
  return <BuildsOf key={name} name={name} open={open} />;
}

function BuildsOf({ name, open }: { name: string; open?: string | undefined }) {
  const appID = name;
  const [builds, setBuilds] = useState<Build[] | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [confirming, setConfirming] = useState<string | undefined>(undefined);
  const { busy, failure, done, run } = useAction();
  const [round, setRound] = useState(0);
  const showing = useRef(appID);
  showing.current = appID;

  const refresh = async () => {
    const page = await data(api.GET('/apps/{appID}/builds', { params: { path: { appID }, query: { limit: listed } } }));
    if (showing.current !== appID) return;
    setBuilds(sortBuilds(page.builds));
    setLoadError(undefined);
  };
  useEffect(() => {
    let live = true;
    setBuilds(undefined);
    setLoadError(undefined);
    setConfirming(undefined);
    refresh().catch((err: unknown) => live && setLoadError(err));
    return () => {
      live = false;
    };
  }, [appID]);

  const pending = builds?.some(buildPending) ?? false;
  useEffect(() => {
    if (!pending) return undefined;
    const timer = setTimeout(() => {
      refresh().then(
        () => setRound((r) => r + 1),
        () => setRound((r) => r + 1),
      );
    }, pollMs);
    return () => clearTimeout(timer);
  }, [pending, round]);

  const cancel = (b: Build) =>
    run(`Canceling build ${b.id}`, () => data(api.POST('/builds/{buildID}/cancel', { params: { path: { buildID: b.id } } })), {
      said: `Build ${b.id} canceled.`,
      after: () => {
        setConfirming(undefined);
        // The cancel is asked: a failed read of the list is the list's failure, not the cancel's.
        return refresh().catch((err: unknown) => setLoadError(err));
      },
    });

  // The build whose log is open: from the list, else asked for by its id in BuildLog (an older one, a shared link).
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (open) heading.current?.focus();
  }, [open]);
  const repositories = builds ? repositoriesOf(builds) : [];
  return (
    <>
      <p class="crumbs">
        <a href={hrefOf({ page: 'apps' })}>Apps</a> / <a href={hrefOf({ page: 'app', name })}>{name}</a> / builds
      </p>
      <PageHeading title={`${name} builds`}>Builds of {name}</PageHeading>
      {loadError !== undefined && <ErrorMessage doing={`Listing the builds of ${name}`} error={loadError} />}
      {!builds && loadError === undefined && <p role="status">Loading…</p>}
      {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
      <p role="status" id="builds-done" class={done ? 'done' : 'visually-hidden'}>
        {done?.said}
      </p>
      {builds && (
        <>
          <section aria-labelledby="repositories-heading">
            <h2 id="repositories-heading">Git repository</h2>
            {repositories.length === 0 ? (
              <p id="repositories-none" class="muted">
                None of these builds came from a Git repository. <a href={hrefOf({ page: 'import' })}>Import a repository</a> as a new app
                to have every push built.
              </p>
            ) : (
              <>
                <p class="muted">
                  Pushes are built as they come (the push webhook), and each repository is also asked for new commits every minute. The
                  newest build of each branch says the last commit seen.
                </p>
                <table class="apps repositories" id="repositories">
                  <caption class="visually-hidden">Git repositories the builds of {name} came from</caption>
                  <TableHead columns={['Repository', 'Branch', 'Last commit built', 'Newest build']} />
                  <tbody>
                    {repositories.map((r) => {
                      const s = buildStatusInWords({ status: r.status, reason: null, message: null });
                      return (
                        <tr key={`${r.url} ${r.ref ?? ''} ${r.path ?? ''}`}>
                          <th scope="row" class="wrap">
                            {r.url}
                            {r.path && <div class="muted small">directory {r.path}</div>}
                          </th>
                          <td>{r.ref ?? <span class="muted">the default branch</span>}</td>
                          <td>{r.commit ? <code>{r.commit.slice(0, 12)}</code> : <span class="muted">not known yet</span>}</td>
                          <td>
                            {when(r.at)}:{' '}
                            <a href={hrefOf({ page: 'app-builds', name, build: r.build })}>
                              <code>{r.build}</code>
                            </a>
                            , <span class={`dot ${s.tone}`} aria-hidden="true" />
                            {s.text.toLowerCase()}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </>
            )}
          </section>

          <section aria-labelledby="builds-list-heading">
            <h2 id="builds-list-heading">Builds</h2>
            {pending && <p class="muted">A build is under way: this list follows it.</p>}
            {builds.length === 0 ? (
              <p id="builds-empty">
                No builds yet. Build a directory with the CLI: <code>svc build {name} DIR</code>.
              </p>
            ) : (
              <table class="apps builds" id="builds">
                <caption class="visually-hidden">Builds of {name}, newest first</caption>
                <TableHead columns={['Build', 'Status', 'Source', 'Deploy', 'Made']} actions />
                <tbody>
                  {builds.map((b) => {
                    const s = buildStatusInWords(b);
                    return (
                      <tr key={b.id} data-build={b.id} class={b.id === open ? 'selected' : undefined}>
                        <th scope="row">
                          <a
                            href={hrefOf({ page: 'app-builds', name, build: b.id })}
                            aria-current={b.id === open ? 'true' : undefined}
                            aria-label={`Log of build ${b.id}`}
                          >
                            <code>{b.id}</code>
                          </a>
                        </th>
                        <td class="build-status">
                          <span class={`dot ${s.tone}`} aria-hidden="true" />
                          {s.text}
                          {b.duration_seconds !== null && <span class="muted"> in {b.duration_seconds} s</span>}
                        </td>
                        <td class="wrap">{buildSourceInWords(b)}</td>
                        <td>
                          {b.deploy_id ? (
                            <a href={hrefOf({ page: 'app-deploys', name, deploy: b.deploy_id })}>
                              <code>{b.deploy_id}</code>
                            </a>
                          ) : b.deploy_error ? (
                            <span>not deployed: {b.deploy_error}</span>
                          ) : b.deploy ? (
                            <span class="muted">{b.status === 'succeeded' || buildRunning(b.status) ? 'once built' : 'none'}</span>
                          ) : (
                            <span class="muted">not asked for</span>
                          )}
                        </td>
                        <td class="when">{when(b.created_at)}</td>
                        <td class="actions">
                          {buildRunning(b.status) &&
                            (confirming === b.id ? (
                              <ConfirmStep
                                label={`Confirm canceling build ${b.id}`}
                                action="Cancel the build"
                                keep="Keep it running"
                                busy={busy}
                                onConfirm={() => void cancel(b)}
                                onKeep={() => setConfirming(undefined)}
                              >
                                Cancel build {b.id}? Its builder is stopped and nothing is deployed from it.
                              </ConfirmStep>
                            ) : (
                              <button type="button" class="secondary small" onClick={() => setConfirming(b.id)}>
                                Cancel<span class="visually-hidden"> build {b.id}</span>
                              </button>
                            ))}
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            )}
          </section>
        </>
      )}
      {open && (
        <section aria-labelledby="build-open-heading" id="build-details" class="details">
          <h2 id="build-open-heading" ref={heading} tabIndex={-1}>
            Build {open}
          </h2>
          <p>
            <a href={hrefOf({ page: 'app-builds', name })}>Close the log</a>
          </p>
          <BuildLog key={open} buildID={open} onEnded={() => void refresh().catch(() => undefined)} />
        </section>
      )}
    </>
  );
}
