// The account's volumes (docs/api/data.md#volumes): its apps' machines' and its databases', whose
// each is, where it is mounted, its size and how full, and the account's storage against its limit.
// One no machine or database holds any more can be deleted, asked in the page first.
import { useEffect, useState } from 'preact/hooks';
import { api, data, type VolumeList } from '../api.js';
import { ConfirmStep } from '../components/confirm-step.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { TableHead } from '../components/table-head.js';
import { bytesInWords, usageInWords, volumeOwnerInWords, volumeStateInWords } from '../resources.js';
import { hrefOf } from '../router.js';
import { when } from '../time.js';
import { useAction } from '../use-action.js';

export function VolumesPage() {
  const [list, setList] = useState<VolumeList | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const { busy, failure, done, run } = useAction();
  const [confirming, setConfirming] = useState<string | undefined>(undefined);

  const load = () =>
    data(api.GET('/volumes')).then(
      (v) => {
        setList(v);
        setLoadError(undefined);
      },
      (err: unknown) => setLoadError(err),
    );
  useEffect(() => void load(), []);

  const remove = (ref: string) =>
    run(`Deleting volume ${ref}`, () => api.DELETE('/volumes/{ref}', { params: { path: { ref } } }), {
      said: `Volume ${ref} deleted.`,
      after: async () => {
        setConfirming(undefined);
        await load();
      },
    });

  const storage = list?.storage;
  return (
    <>
      <PageHeading title="Volumes">Volumes</PageHeading>
      <p class="muted">
        Each machine of an app that declares volumes has its own, kept across deploys; each database has one. They are made by deploys and
        databases, not here.
      </p>
      {loadError !== undefined && <ErrorMessage doing="Listing volumes" error={loadError} />}
      {!list && loadError === undefined && <p role="status">Loading volumes…</p>}
      {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
      <p role="status" id="volumes-done" class={done ? 'done' : 'visually-hidden'}>
        {done?.said}
      </p>
      {storage && (
        <dl class="facts" id="storage">
          <dt>Storage</dt>
          <dd>
            {bytesInWords(storage.used_bytes)} of {bytesInWords(storage.limit_bytes)} counted against the account’s limit
          </dd>
          <dt>Of which</dt>
          <dd>
            databases {bytesInWords(storage.database_bytes)}, apps’ volumes {bytesInWords(storage.volume_bytes)}, stored artifacts{' '}
            {bytesInWords(storage.artifact_bytes)}
          </dd>
        </dl>
      )}
      {list && list.volumes.length === 0 && <p id="volumes-empty">No volumes: an app’s compose file or a database makes them.</p>}
      {list && list.volumes.length > 0 && (
        <table class="apps volumes" id="volumes">
          <caption class="visually-hidden">Volumes of the account</caption>
          <TableHead columns={['Volume', 'Of', 'Path', 'Size', 'State', 'Created']} actions />
          <tbody>
            {list.volumes.map((v) => {
              const state = volumeStateInWords(v);
              return (
                <tr key={v.ref} data-volume={v.ref}>
                  <th scope="row">
                    <code>{v.ref}</code>
                    {v.node && <div class="muted small">on node {v.node}</div>}
                  </th>
                  <td class="volume-owner">
                    {v.kind === 'machine' && v.app ? (
                      <a href={hrefOf({ page: 'app', name: v.app })}>{volumeOwnerInWords(v)}</a>
                    ) : v.kind === 'database' ? (
                      <a href={hrefOf({ page: 'databases' })}>{volumeOwnerInWords(v)}</a>
                    ) : (
                      volumeOwnerInWords(v)
                    )}
                  </td>
                  <td>{v.path ? <code>{v.path}</code> : <span class="muted">none</span>}</td>
                  <td>{usageInWords(v.used_bytes, v.size_bytes)}</td>
                  <td class="volume-state">
                    <span class={`dot ${state.tone}`} aria-hidden="true" />
                    {state.text}
                  </td>
                  <td>{when(v.created_at)}</td>
                  <td class="actions">
                    {confirming === v.ref ? (
                      <ConfirmStep
                        label={`Confirm deleting ${v.ref}`}
                        action="Delete"
                        busy={busy}
                        onConfirm={() => void remove(v.ref)}
                        onKeep={() => setConfirming(undefined)}
                      >
                        Delete {v.ref}? Its data is gone for good.
                      </ConfirmStep>
                    ) : state.deletable ? (
                      <button type="button" class="secondary small" aria-label={`Delete ${v.ref}`} onClick={() => setConfirming(v.ref)}>
                        Delete
                      </button>
                    ) : (
                      <span class="muted small">in use</span>
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
