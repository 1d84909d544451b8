// An app's previews (GET /apps/{appID}/previews): each a ref served beside the app at its own URL,
// by an app named <app>--<ref> whose record (GET /apps/{preview}) says its status and expiry. Delete
// asks in the page first, then DELETE /apps/{appID}/previews/{ref} (its database copy goes with it),
// and the list is asked for again.
import { useEffect, useState } from 'preact/hooks';
import { api, data, type App, type Preview } from '../api.js';
import { ConfirmStep } from '../components/confirm-step.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { TableHead } from '../components/table-head.js';
import { expiryInWords } from '../deploys.js';
import { hrefOf } from '../router.js';
import { statusInWords } from '../status.js';
import { when } from '../time.js';
import { useAction } from '../use-action.js';

interface Row {
  preview: Preview;
  /** The preview's own app; undefined when it could not be read (it is being deleted, say). */
  app: App | undefined;
}

async function previewsOf(appID: string): Promise<Row[]> {
  const { previews } = await data(api.GET('/apps/{appID}/previews', { params: { path: { appID } } }));
  return Promise.all(
    previews.map(async (preview) => ({
      preview,
      app: await data(api.GET('/apps/{appID}', { params: { path: { appID: preview.app } } })).catch(() => undefined),
    })),
  );
}

export function AppPreviewsPage({ name }: { name: string }) {
  const appID = name;
  const [rows, setRows] = useState<Row[] | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [confirming, setConfirming] = useState<string | undefined>(undefined);
  const { busy, failure, done, run } = useAction();
  // Expiry is said relative to now: said again each minute.
  const [now, setNow] = useState(() => new Date());
  useEffect(() => {
    const timer = setInterval(() => setNow(new Date()), 60_000);
    return () => clearInterval(timer);
  }, []);

  const load = async (deleted?: string) => {
    const r = await previewsOf(appID);
    setRows(r.filter((row) => row.preview.ref !== deleted));
    setLoadError(undefined);
    setNow(new Date());
  };
  useEffect(() => {
    let live = true;
    setRows(undefined);
    setLoadError(undefined);
    previewsOf(appID).then(
      (r) => live && setRows(r),
      (err: unknown) => live && setLoadError(err),
    );
    return () => {
      live = false;
    };
  }, [appID]);

  const remove = (ref: string) =>
    run(`Deleting preview ${ref}`, () => api.DELETE('/apps/{appID}/previews/{ref}', { params: { path: { appID, ref } } }), {
      said: `Preview ${ref} deleted.`,
      after: async () => {
        setConfirming(undefined);
        // Its app may still be listed while the cluster removes it: it is not shown again.
        await load(ref).catch((err: unknown) => setLoadError(err));
      },
    });

  return (
    <>
      <p class="crumbs">
        <a href={hrefOf({ page: 'apps' })}>Apps</a> / <a href={hrefOf({ page: 'app', name })}>{name}</a> / previews
      </p>
      <PageHeading title={`${name} previews`}>Previews of {name}</PageHeading>
      {loadError !== undefined && <ErrorMessage doing={`Listing the previews of ${name}`} error={loadError} />}
      {!rows && loadError === undefined && <p role="status">Loading…</p>}
      {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
      <p role="status" id="previews-done" class={done ? 'done' : 'visually-hidden'}>
        {done?.said}
      </p>
      {rows && rows.length === 0 && (
        <p id="previews-empty">
          No previews. Make one of a branch or a pull request with the CLI: <code>svc previews create {name} REF</code>.
        </p>
      )}
      {rows && rows.length > 0 && (
        <table class="apps previews" id="previews">
          <caption class="visually-hidden">Previews of {name}</caption>
          <TableHead columns={['Ref', 'URL', 'Deploy', 'Status', 'Expiry', 'Made']} actions />
          <tbody>
            {rows.map(({ preview: p, app }) => {
              const status = app ? statusInWords(app) : { text: p.status, tone: 'busy' as const };
              const expiry = app ? expiryInWords(app.expires_at, now) : 'unknown';
              return (
                <tr key={p.ref} data-ref={p.ref}>
                  <th scope="row">
                    {p.ref}
                    <div class="muted small">
                      app <code>{p.app}</code>
                    </div>
                  </th>
                  <td>{p.url ? <a href={p.url}>{p.url}</a> : <span class="muted">none yet</span>}</td>
                  <td>{p.current_deploy ? <code>{p.current_deploy}</code> : <span class="muted">none yet</span>}</td>
                  <td>
                    <span class={`dot ${status.tone}`} aria-hidden="true" />
                    {status.text}
                  </td>
                  <td class={expiry === 'expired' ? 'warn-text' : undefined}>
                    {app?.expires_at ? (
                      <time dateTime={app.expires_at} title={when(app.expires_at)}>
                        {expiry}
                      </time>
                    ) : (
                      expiry
                    )}
                  </td>
                  <td>{when(p.created_at)}</td>
                  <td class="actions">
                    {confirming === p.ref ? (
                      <ConfirmStep
                        label={`Confirm deleting preview ${p.ref}`}
                        action="Delete"
                        busy={busy}
                        onConfirm={() => void remove(p.ref)}
                        onKeep={() => setConfirming(undefined)}
                      >
                        Delete preview {p.ref}? Its URL stops answering
                        {p.database ? `, and its database copy ${p.database} is deleted` : ''}.
                      </ConfirmStep>
                    ) : (
                      <button
                        type="button"
                        class="secondary small"
                        aria-label={`Delete preview ${p.ref}`}
                        onClick={() => setConfirming(p.ref)}
                      >
                        Delete
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
    </>
  );
}
