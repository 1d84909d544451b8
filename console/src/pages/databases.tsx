// The account's databases (docs/api/data.md): each one's phase in words, size and how full, the app
// it is attached to, and what deleting it does to its data; attach one to an app or detach it, delete
// one (asked in the page first, refused while attached), and create one. While one is starting the
// list is read again every few seconds.
import { useEffect, useState } from 'preact/hooks';
import { api, data, type Database, type DatabaseRequest } from '../api.js';
import { ConfirmStep } from '../components/confirm-step.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { TableHead } from '../components/table-head.js';
import { databaseDeletable, databasePhaseInWords, databaseSizes, deletionInWords, usageInWords } from '../resources.js';
import { hrefOf } from '../router.js';
import { when } from '../time.js';
import { useAction } from '../use-action.js';

const refreshMs = 3000;
type Editing = { name: string; mode: 'attach'; app: string } | { name: string; mode: 'detach' | 'delete' } | undefined;

export function DatabasesPage() {
  const [databases, setDatabases] = useState<Database[] | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const { busy, failure, done, run } = useAction<'list' | 'form'>();
  const [editing, setEditing] = useState<Editing>(undefined);
  const [name, setName] = useState('');
  const [size, setSize] = useState(String(1024 ** 3));
  const [retain, setRetain] = useState(false);

  const load = () =>
    data(api.GET('/databases')).then(
      (d) => {
        setDatabases(d.databases);
        setLoadError(undefined);
        return d.databases;
      },
      (err: unknown) => {
        setLoadError(err);
        return undefined;
      },
    );
  useEffect(() => void load(), []);
  // A change the list does not show yet: the API answers from caches a moment behind its writes,
  // and which app a database serves is its controller's word, recorded once it has acted. The list
  // is read again until it shows it, so the page never keeps the state from before the change.
  const [awaited, setAwaited] = useState<((list: Database[]) => boolean) | undefined>(undefined);
  useEffect(() => {
    if (awaited && databases && awaited(databases)) setAwaited(undefined);
  }, [databases, awaited]);
  const starting = (databases?.some((d) => d.phase === 'Pending' || d.phase === 'Deleting') ?? false) || awaited !== undefined;
  useEffect(() => {
    if (!starting) return undefined;
    const timer = setInterval(() => void load(), refreshMs);
    return () => clearInterval(timer);
  }, [starting]);

  const act = (
    doing: string,
    call: () => Promise<unknown>,
    said: string,
    settled: (list: Database[]) => boolean,
    where: 'list' | 'form' = 'list',
  ) =>
    run(doing, call, {
      said,
      where,
      after: async () => {
        setEditing(undefined);
        setAwaited(() => settled);
        await load();
      },
    });
  const create = async (event: Event) => {
    event.preventDefault();
    const wanted = name.trim();
    const body: DatabaseRequest = { name: wanted, storage_bytes: Number(size), deletion_policy: retain ? 'retain' : 'drop' };
    const ok = await act(
      `Creating database ${wanted}`,
      () => data(api.POST('/databases', { body })),
      `Database ${wanted} created: it is starting, ready in a few seconds.`,
      (list) => list.some((d) => d.name === wanted),
      'form',
    );
    if (ok) {
      setName('');
      setRetain(false);
    }
  };
  const attach = (db: Database, app: string) =>
    act(
      `Attaching ${db.name} to ${app}`,
      () => data(api.PUT('/apps/{appID}/database', { params: { path: { appID: app } }, body: { name: db.name } })),
      `${db.name} attached to ${app}: its machines get DATABASE_URL as they are replaced.`,
      (list) => list.some((d) => d.name === db.name && d.attached_to === app),
    );
  const detach = (db: Database) =>
    act(
      `Detaching ${db.name} from ${db.attached_to ?? ''}`,
      () => api.DELETE('/apps/{appID}/database', { params: { path: { appID: db.attached_to ?? '' } } }),
      `${db.name} detached from ${db.attached_to ?? ''}.`,
      (list) => list.some((d) => d.name === db.name && !d.attached_to),
    );
  const remove = (db: Database) =>
    act(
      `Deleting ${db.name}`,
      () => api.DELETE('/databases/{name}', { params: { path: { name: db.name } } }),
      `Database ${db.name} deleted.`,
      (list) => !list.some((d) => d.name === db.name && d.phase !== 'Deleting'),
    );

  return (
    <>
      <PageHeading title="Databases">Databases</PageHeading>
      <p class="muted">
        PostgreSQL servers of the account’s own, each on a volume of its own. One attaches to one app at a time, whose machines then get{' '}
        <code>DATABASE_URL</code> and the <code>PG*</code> variables.
      </p>
      {loadError !== undefined && <ErrorMessage doing="Listing databases" error={loadError} />}
      {!databases && loadError === undefined && <p role="status">Loading databases…</p>}
      {failure?.where === 'list' && <ErrorMessage doing={failure.doing} error={failure.error} />}
      <p role="status" id="databases-done" class={done ? 'done' : 'visually-hidden'}>
        {done?.said}
      </p>
      {databases && databases.length === 0 && <p id="databases-empty">No databases yet: create one below.</p>}
      {databases && databases.length > 0 && (
        <table class="apps databases" id="databases">
          <caption class="visually-hidden">Databases of the account</caption>
          <TableHead columns={['Name', 'State', 'Size', 'Attached to', 'Created']} actions />
          <tbody>
            {databases.map((db) => {
              const phase = databasePhaseInWords(db);
              const deletable = databaseDeletable(db);
              const row = editing?.name === db.name ? editing : undefined;
              return (
                <tr key={db.name} data-database={db.name}>
                  <th scope="row">
                    {db.name}
                    <div class="muted small">
                      {db.engine}; on delete, {deletionInWords(db.deletion_policy)}
                    </div>
                  </th>
                  <td class="database-state">
                    <span class={`dot ${phase.tone}`} aria-hidden="true" />
                    {phase.text}
                  </td>
                  <td>{usageInWords(db.used_bytes, db.storage_bytes)}</td>
                  <td class="database-app">
                    {db.attached_to ? (
                      <a href={hrefOf({ page: 'app', name: db.attached_to })}>{db.attached_to}</a>
                    ) : (
                      <span class="muted">none</span>
                    )}
                  </td>
                  <td>{when(db.created_at)}</td>
                  <td class="actions">
                    {row?.mode === 'attach' && (
                      <form
                        class="inline"
                        onSubmit={(e) => {
                          e.preventDefault();
                          void attach(db, row.app.trim());
                        }}
                      >
                        <label for={`attach-${db.name}`}>App to attach {db.name} to</label>
                        <input
                          id={`attach-${db.name}`}
                          value={row.app}
                          autocomplete="off"
                          spellcheck={false}
                          onInput={(e) => setEditing({ name: db.name, mode: 'attach', app: e.currentTarget.value })}
                        />
                        <button type="submit" class="small" disabled={busy || !row.app.trim()}>
                          Attach
                        </button>
                        <button type="button" class="secondary small" onClick={() => setEditing(undefined)}>
                          Cancel
                        </button>
                      </form>
                    )}
                    {row?.mode === 'detach' && (
                      <ConfirmStep
                        label={`Confirm detaching ${db.name}`}
                        action="Detach"
                        busy={busy}
                        onConfirm={() => void detach(db)}
                        onKeep={() => setEditing(undefined)}
                      >
                        Detach {db.name} from {db.attached_to}? Its machines lose DATABASE_URL as they are replaced; the data stays.
                      </ConfirmStep>
                    )}
                    {row?.mode === 'delete' && (
                      <ConfirmStep
                        label={`Confirm deleting ${db.name}`}
                        action="Delete"
                        busy={busy}
                        onConfirm={() => void remove(db)}
                        onKeep={() => setEditing(undefined)}
                      >
                        Delete {db.name}? {deletionInWords(db.deletion_policy).replace(/^./, (c) => c.toUpperCase())}.
                      </ConfirmStep>
                    )}
                    {!row && (
                      <>
                        {db.attached_to ? (
                          <button
                            type="button"
                            class="secondary small"
                            aria-label={`Detach ${db.name} from ${db.attached_to}`}
                            onClick={() => setEditing({ name: db.name, mode: 'detach' })}
                          >
                            Detach
                          </button>
                        ) : (
                          <button
                            type="button"
                            class="secondary small"
                            aria-label={`Attach ${db.name} to an app`}
                            disabled={db.phase === 'Deleting'}
                            onClick={() => setEditing({ name: db.name, mode: 'attach', app: '' })}
                          >
                            Attach
                          </button>
                        )}{' '}
                        <button
                          type="button"
                          class="secondary small"
                          aria-label={`Delete ${db.name}`}
                          disabled={!deletable.ok}
                          title={deletable.why}
                          onClick={() => setEditing({ name: db.name, mode: 'delete' })}
                        >
                          Delete
                        </button>
                        {!deletable.ok && <div class="muted small">To delete it, {deletable.why}.</div>}
                      </>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}

      <section aria-labelledby="create-database-heading">
        <h2 id="create-database-heading">Create a database</h2>
        <form id="create-database" onSubmit={(e) => void create(e)}>
          <label for="database-name">Database name</label>
          <p class="hint" id="database-name-hint">
            Lower-case letters, digits and dashes, at most 40 characters; unique in the account.
          </p>
          <input
            id="database-name"
            value={name}
            required
            maxLength={40}
            autocomplete="off"
            spellcheck={false}
            aria-describedby="database-name-hint"
            onInput={(e) => setName(e.currentTarget.value)}
          />
          <label for="database-size">Size of its volume</label>
          <select id="database-size" value={size} onChange={(e) => setSize(e.currentTarget.value)}>
            {databaseSizes.map((s) => (
              <option key={s.bytes} value={String(s.bytes)}>
                {s.label}
              </option>
            ))}
          </select>
          <label class="check">
            <input type="checkbox" checked={retain} onChange={(e) => setRetain(e.currentTarget.checked)} />
            Keep its volume when the database is deleted
          </label>
          <p>
            <button type="submit" disabled={busy}>
              Create the database
            </button>
          </p>
          {failure?.where === 'form' && <ErrorMessage doing={failure.doing} error={failure.error} />}
        </form>
      </section>
    </>
  );
}
