// An app's deploys, newest first (GET /apps/{appID}/deploys, paged by next_before): status in
// words, kind, origin, when, which one serves. One opens to its details at its own address
// (/console/apps/<name>/deploys/<id>), with the log of the build it came from (GET
// /builds/{id}/logs, followed with ?follow=true while the build runs). "Roll back to this" on a
// deploy that served before asks in the page first, then POST /apps/{appID}/rollback; the list is
// asked for again after it, and every two seconds while a deploy is undecided, so the new one is
// seen going live without a reload. Below, the app's builds that made no deploy (running, failed,
// canceled), each with its log.
import { Fragment } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, data, type Build, type Deploy } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { TableHead } from '../components/table-head.js';
import {
  appendLog,
  buildOf,
  buildPending,
  buildRunning,
  buildStatusInWords,
  canRollBack,
  deployStatusInWords,
  emptyLog,
  inFlight,
  liveDeploy,
  mergeDeploys,
  originInWords,
  summaryFacts,
  type LogView,
} from '../deploys.js';
import { hrefOf } from '../router.js';
import { when } from '../time.js';
import { useAction } from '../use-action.js';
import { DeployDrop } from '../components/deploy-drop.js';
import { ConfirmStep } from '../components/confirm-step.js';

/** Deploys asked for at a time. */
const pageSize = 20;
/** How often an undecided deploy or a running build is asked about again. */
const pollMs = 2000;

/** A build's whole log: read once, or followed until the build ends. `onChunk` gets the text as it comes. */
async function readLog(buildID: string, follow: boolean, onChunk: (text: string) => void, signal: AbortSignal): Promise<void> {
  if (!follow) {
    const { data: text } = await api.GET('/builds/{buildID}/logs', { params: { path: { buildID } }, parseAs: 'text', signal });
    onChunk(text ?? '');
    return;
  }
  const { data: body } = await api.GET('/builds/{buildID}/logs', {
    params: { path: { buildID }, query: { follow: 'true' } },
    parseAs: 'stream',
    signal,
  });
  if (!body) return;
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onChunk(value);
  }
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

/** A build's status and log, in a scrolling <pre>, kept at its end while it grows if the reader is there. */
export function BuildLog({ buildID, onEnded }: { buildID: string; onEnded?: () => void }) {
  const [build, setBuild] = useState<Build | undefined>(undefined);
  const [log, setLog] = useState<LogView>(emptyLog);
  const [following, setFollowing] = useState(false);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<unknown>(undefined);
  const [attempt, setAttempt] = useState(0);
  const pre = useRef<HTMLPreElement>(null);
  const atEnd = useRef(true);

  useEffect(() => {
    const controller = new AbortController();
    const { signal } = controller;
    setError(undefined);
    setLoaded(false);
    (async () => {
      let wasRunning = false;
      for (;;) {
        const b = await data(api.GET('/builds/{buildID}', { params: { path: { buildID } }, signal }));
        if (signal.aborted) return;
        setBuild(b);
        const follow = buildRunning(b.status);
        setFollowing(follow);
        // Each read is the whole log from its start: the first chunk replaces what was shown.
        let first = true;
        await readLog(
          buildID,
          follow,
          (chunk) => {
            const fresh = first;
            first = false;
            setLog((l) => appendLog(fresh ? emptyLog : l, chunk));
            setLoaded(true);
          },
          signal,
        );
        if (signal.aborted) return;
        setLoaded(true);
        if (!follow) {
          if (wasRunning) onEnded?.();
          return;
        }
        // The stream ended: the build did, or the connection dropped. Its status says which.
        wasRunning = true;
        await sleep(pollMs / 4, signal);
      }
    })().catch((err: unknown) => {
      if (signal.aborted) return;
      setFollowing(false);
      setError(err);
    });
    return () => controller.abort();
  }, [buildID, attempt]);

  // While it grows, the view stays at the end unless the reader scrolled up.
  useEffect(() => {
    const el = pre.current;
    if (el && following && atEnd.current) el.scrollTop = el.scrollHeight;
  }, [log, following]);

  const status = build && buildStatusInWords(build);
  return (
    <div class="build-log">
      <p id={`build-${buildID}-status`}>
        Build <code>{buildID}</code>
        {status && (
          <>
            : <span class={`dot ${status.tone}`} aria-hidden="true" />
            {status.text}
            {build.duration_seconds !== null && ` in ${build.duration_seconds} s`}
          </>
        )}
      </p>
      <p role="status" class={following || !loaded ? 'muted' : 'visually-hidden'}>
        {!loaded && error === undefined ? 'Loading the build log…' : following ? 'Following the log while the build runs…' : ''}
      </p>
      {error !== undefined && (
        <>
          <ErrorMessage doing={`Reading the log of build ${buildID}`} error={error} />
          <button type="button" class="secondary small" onClick={() => setAttempt((a) => a + 1)}>
            Read the log again
          </button>
        </>
      )}
      {log.dropped > 0 && <p class="muted small">The log’s first {log.dropped.toLocaleString('en')} characters are not shown.</p>}
      {loaded && (
        <pre
          ref={pre}
          class="log"
          id={`build-${buildID}-log`}
          tabIndex={0}
          role="region"
          aria-label={`Log of build ${buildID}`}
          onScroll={(e) => {
            const el = e.currentTarget;
            atEnd.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
          }}
        >
          {log.text || '(the log is empty)'}
        </pre>
      )}
    </div>
  );
}

/** One deploy's facts, and its build's log when it came from one. */
function DeployDetails({ name, deploy, onBuildEnded }: { name: string; deploy: Deploy; onBuildEnded: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  useEffect(() => heading.current?.focus(), [deploy.id]);
  const status = deployStatusInWords(deploy);
  const build = buildOf(deploy);
  const summary = summaryFacts(deploy.summary);
  return (
    <section aria-labelledby="deploy-details-heading" id="deploy-details" class="details">
      <h2 id="deploy-details-heading" ref={heading} tabIndex={-1}>
        Deploy {deploy.id}
      </h2>
      <p>
        <a href={hrefOf({ page: 'app-deploys', name })}>Close the details</a>
      </p>
      <dl class="facts">
        <dt>Status</dt>
        <dd id="deploy-details-status">
          <span class={`dot ${status.tone}`} aria-hidden="true" />
          {status.text}
        </dd>
        <dt>Kind</dt>
        <dd>{deploy.kind}</dd>
        <dt>From</dt>
        <dd>{originInWords(deploy)}</dd>
        <dt>Image</dt>
        <dd>{deploy.image ? <code>{deploy.image}</code> : <span class="muted">none (files served by the platform)</span>}</dd>
        <dt>Digest</dt>
        <dd>{deploy.digest ? <code class="wrap">{deploy.digest}</code> : <span class="muted">none</span>}</dd>
        <dt>Made</dt>
        <dd>
          {when(deploy.created_at)}
          {deploy.created_by && ` by ${deploy.created_by}`}
        </dd>
        <dt>Went live</dt>
        <dd>{deploy.live_at ? when(deploy.live_at) : <span class="muted">never</span>}</dd>
        {summary.map(([k, v]) => (
          <Fragment key={k}>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </Fragment>
        ))}
      </dl>
      {build ? (
        <section aria-labelledby="build-log-heading">
          <h3 id="build-log-heading">Build log</h3>
          <BuildLog buildID={build} onEnded={onBuildEnded} />
        </section>
      ) : (
        <p class="muted">This deploy did not come from a build, so it has no build log.</p>
      )}
    </section>
  );
}

/** The app's builds that made no deploy: running ones (followed) and ones that failed or were canceled. */
function OtherBuilds({ name, onBuildEnded }: { name: string; onBuildEnded: () => void }) {
  const [builds, setBuilds] = useState<Build[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [open, setOpen] = useState<string | undefined>(undefined);
  const [round, setRound] = useState(0);
  useEffect(() => {
    let live = true;
    data(api.GET('/apps/{appID}/builds', { params: { path: { appID: name }, query: { limit: 10 } } })).then(
      (b) => {
        if (!live) return;
        setBuilds(b.builds.filter((x) => x.deploy_id === null));
        setError(undefined);
      },
      (err: unknown) => live && setError(err),
    );
    return () => {
      live = false;
    };
  }, [name, round]);
  // A running build is asked about again until it ends and its deploy is made (then the deploys are read again).
  const running = builds?.some(buildPending) ?? false;
  const wasRunning = useRef(false);
  useEffect(() => {
    // One ended (or made its deploy and left this list): the deploys are asked for again.
    if (wasRunning.current && !running) onBuildEnded();
    wasRunning.current = running;
    if (!running) return;
    const timer = setTimeout(() => setRound((r) => r + 1), pollMs * 2);
    return () => clearTimeout(timer);
  }, [running, round]);
  const ended = () => {
    setRound((r) => r + 1);
    onBuildEnded();
  };
  if (error !== undefined) return <ErrorMessage doing={`Listing the builds of ${name}`} error={error} />;
  if (!builds || builds.length === 0) return null;
  return (
    <section aria-labelledby="builds-heading">
      <h2 id="builds-heading">Builds that made no deploy</h2>
      <p class="muted">Running, failed or canceled: the newest of the app’s last ten builds.</p>
      <ul class="builds" id="builds">
        {builds.map((b) => {
          const s = buildStatusInWords(b);
          const shown = open === b.id;
          return (
            <li key={b.id} data-build={b.id}>
              <code>{b.id}</code>: <span class={`dot ${s.tone}`} aria-hidden="true" />
              {s.text}, {when(b.created_at)}{' '}
              <button
                type="button"
                class="secondary small"
                aria-expanded={shown}
                aria-controls={`build-${b.id}-panel`}
                onClick={() => setOpen(shown ? undefined : b.id)}
              >
                {shown ? 'Hide the log' : 'Show the log'}
                <span class="visually-hidden"> of build {b.id}</span>
              </button>
              <div id={`build-${b.id}-panel`}>{shown && <BuildLog buildID={b.id} onEnded={ended} />}</div>
            </li>
          );
        })}
      </ul>
    </section>
  );
}

export function AppDeploysPage({ name, open }: { name: string; open?: string | undefined }) {
  const appID = name;
  const [deploys, setDeploys] = useState<Deploy[] | undefined>(undefined);
  const [nextBefore, setNextBefore] = useState<string | null>(null);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [opened, setOpened] = useState<{ deploy?: Deploy; error?: unknown } | undefined>(undefined);
  const [confirming, setConfirming] = useState<string | undefined>(undefined);
  const { busy, failure, done, run, say } = useAction();
  const [round, setRound] = useState(0);
  // How many are shown: a refresh asks for as many again (the API's most is 200).
  const shown = useRef(pageSize);
  const showing = useRef(appID);
  showing.current = appID;

  const refresh = async () => {
    const page = await data(
      api.GET('/apps/{appID}/deploys', { params: { path: { appID }, query: { limit: Math.min(200, Math.max(pageSize, shown.current)) } } }),
    );
    // An answer about the app shown before a navigation is dropped.
    if (showing.current !== appID) return;
    setDeploys(page.deploys);
    setNextBefore(page.next_before);
    setLoadError(undefined);
  };

  useEffect(() => {
    let live = true;
    setDeploys(undefined);
    setLoadError(undefined);
    shown.current = pageSize;
    refresh().catch((err: unknown) => live && setLoadError(err));
    return () => {
      live = false;
    };
  }, [appID]);

  // Asked again every two seconds while one is undecided (a rollback going live, a deploy failing).
  const undecided = deploys?.some(inFlight) ?? false;
  useEffect(() => {
    if (!undecided) return;
    const timer = setTimeout(() => {
      refresh().then(
        () => setRound((r) => r + 1),
        () => setRound((r) => r + 1),
      );
    }, pollMs);
    return () => clearTimeout(timer);
  }, [undecided, round]);

  // The deploy whose details are open: from the list, else asked for (an older one, a shared link).
  const listed = open ? deploys?.find((d) => d.id === open) : undefined;
  useEffect(() => {
    setOpened(undefined);
    if (!open || listed) return;
    let live = true;
    data(api.GET('/deploys/{deployID}', { params: { path: { deployID: open } } })).then(
      (deploy) => live && setOpened({ deploy }),
      (error: unknown) => live && setOpened({ error }),
    );
    return () => {
      live = false;
    };
  }, [open, listed === undefined]);

  const older = async () => {
    if (!nextBefore) return;
    // The message of the last change stays.
    await run(
      'Listing older deploys',
      () => data(api.GET('/apps/{appID}/deploys', { params: { path: { appID }, query: { limit: pageSize, before: nextBefore } } })),
      {
        keepDone: true,
        after: (page) => {
          const merged = mergeDeploys(deploys ?? [], page.deploys);
          shown.current = merged.length;
          setDeploys(merged);
          setNextBefore(page.next_before);
        },
      },
    );
  };

  const rollBack = (target: Deploy) =>
    run(
      `Rolling back to deploy ${target.id}`,
      () => data(api.POST('/apps/{appID}/rollback', { params: { path: { appID } }, body: { deploy_id: target.id } })),
      {
        said: (made) => `Rolling ${name} back to deploy ${target.id}: deploy ${made.id} is on its way; it is marked below when it serves.`,
        after: async () => {
          setConfirming(undefined);
          // The rollback is made: a failed read of the list is the list's failure, not the rollback's (a retry would roll back twice).
          await refresh().catch((err: unknown) => setLoadError(err));
        },
      },
    );

  const details = listed ?? opened?.deploy;
  const current = deploys && liveDeploy(deploys);
  return (
    <>
      <p class="crumbs">
        <a href={hrefOf({ page: 'apps' })}>Apps</a> / <a href={hrefOf({ page: 'app', name })}>{name}</a> / deploys
      </p>
      <PageHeading title={`${name} deploys`}>Deploys of {name}</PageHeading>
      {loadError !== undefined && <ErrorMessage doing={`Listing the deploys of ${name}`} error={loadError} />}
      {!deploys && loadError === undefined && <p role="status">Loading…</p>}
      {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
      <p role="status" id="deploys-done" class={done ? 'done' : 'visually-hidden'}>
        {done?.said}
      </p>
      <DeployDrop
        name={name}
        onDeployed={(made, what) =>
          // Listed first, then said: the notice never names a deploy the list does not show yet.
          void refresh()
            .catch(() => undefined)
            .then(() => say(`Deploy ${made.id} of ${what} is on its way; it is marked below when it serves.`))
        }
      />
      {deploys && (
        <>
          <p id="deploys-live">
            {current ? (
              <>
                Serving now: <code>{current.id}</code>, live since {when(current.live_at)}.
              </>
            ) : (
              'No deploy serves the app now.'
            )}
            {undecided && ' A deploy is under way: this list follows it.'}
          </p>
          {deploys.length === 0 ? (
            <p id="deploys-empty">
              No deploys yet: drop a folder above, or deploy one with the CLI: <code>svc deploy {name} DIR</code>.
            </p>
          ) : (
            <table class="apps deploys" id="deploys">
              <caption class="visually-hidden">Deploys of {name}, newest first</caption>
              <TableHead columns={['Deploy', 'Status', 'Kind', 'From', 'Made']} actions />
              <tbody>
                {deploys.map((d) => {
                  const s = deployStatusInWords(d);
                  return (
                    <tr key={d.id} data-deploy={d.id} class={d.id === open ? 'selected' : undefined}>
                      <th scope="row">
                        <a
                          href={hrefOf({ page: 'app-deploys', name, deploy: d.id })}
                          aria-current={d.id === open ? 'true' : undefined}
                          aria-label={`Details of deploy ${d.id}`}
                        >
                          <code>{d.id}</code>
                        </a>
                        {d.current && <span class="tag live">live</span>}
                      </th>
                      <td>
                        <span class={`dot ${s.tone}`} aria-hidden="true" />
                        {s.text}
                      </td>
                      <td>{d.kind}</td>
                      <td>{originInWords(d)}</td>
                      <td class="when">{when(d.created_at)}</td>
                      <td class="actions">
                        {canRollBack(d) &&
                          (confirming === d.id ? (
                            <ConfirmStep
                              label={`Confirm rolling back to ${d.id}`}
                              action="Roll back"
                              keep="Cancel"
                              danger={false}
                              busy={busy}
                              onConfirm={() => void rollBack(d)}
                              onKeep={() => setConfirming(undefined)}
                            >
                              Roll {name} back to {d.id}? A new deploy of what it served is made and goes live in place of{' '}
                              {current ? current.id : 'the current one'}.
                            </ConfirmStep>
                          ) : (
                            <button type="button" class="secondary small" onClick={() => setConfirming(d.id)}>
                              Roll back to this<span class="visually-hidden"> (deploy {d.id})</span>
                            </button>
                          ))}
                      </td>
                    </tr>
                  );
                })}
              </tbody>
            </table>
          )}
          {nextBefore && (
            <p>
              <button type="button" class="secondary" disabled={busy} onClick={() => void older()}>
                Show older deploys
              </button>
            </p>
          )}
        </>
      )}
      {open && opened?.error !== undefined && <ErrorMessage doing={`Loading deploy ${open}`} error={opened.error} />}
      {open && !details && opened?.error === undefined && deploys && <p role="status">Loading deploy {open}…</p>}
      {details && <DeployDetails name={name} deploy={details} onBuildEnded={() => void refresh().catch(() => undefined)} />}
      <OtherBuilds name={name} onBuildEnded={() => void refresh().catch(() => undefined)} />
    </>
  );
}
