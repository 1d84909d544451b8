// An app's environment: its own variables (masked until revealed, each editable and removable),
// what an attached database provides besides (read-only, values never sent by the API), and a .env
// pasted in bulk: parsed here by the CLI's rules, previewed, and sent as one PATCH only when every
// line is right, so a paste never half-applies.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, data, type AppEnv } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { TableHead } from '../components/table-head.js';
import { ownVariables, previewPaste, sourceInWords } from '../env-changes.js';
import { hrefOf } from '../router.js';
import { useAction } from '../use-action.js';

type Where = 'table' | 'paste';
type Editing = { name: string; mode: 'edit'; value: string } | { name: string; mode: 'remove' } | undefined;

export function AppEnvPage({ name }: { name: string }) {
  const appID = name;
  const [env, setEnv] = useState<AppEnv | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [revealed, setRevealed] = useState<ReadonlySet<string>>(new Set());
  const [editing, setEditing] = useState<Editing>(undefined);
  // Said where the change was asked for: by the table, or under the paste box at the page's foot.
  const { busy, failure, done, run } = useAction<Where>();
  const [paste, setPaste] = useState('');

  useEffect(() => {
    let live = true;
    setEnv(undefined);
    setLoadError(undefined);
    data(api.GET('/apps/{appID}/env', { params: { path: { appID } } })).then(
      (e) => live && setEnv(e),
      (err: unknown) => live && setLoadError(err),
    );
    return () => {
      live = false;
    };
  }, [appID]);

  const preview = useMemo(() => (env && paste.trim() ? previewPaste(paste, env) : undefined), [paste, env]);

  /** One change sent; the answer is the environment as it is now. */
  const change = (doing: string, call: () => Promise<AppEnv | undefined>, said: string, where: Where = 'table') =>
    run(doing, async () => (await call()) ?? (await data(api.GET('/apps/{appID}/env', { params: { path: { appID } } }))), {
      said,
      where,
      after: (next) => {
        setEnv(next);
        setEditing(undefined);
      },
    });

  const save = (key: string, value: string) =>
    change(
      `Setting ${key}`,
      () => data(api.PATCH('/apps/{appID}/env', { params: { path: { appID } }, body: { [key]: value } })),
      `${key} set.`,
    );
  const remove = (key: string) =>
    change(
      `Removing ${key}`,
      async () => {
        await api.DELETE('/apps/{appID}/env/{key}', { params: { path: { appID, key } } });
        return undefined;
      },
      `${key} removed.`,
    );
  const applyPaste = async () => {
    if (!preview || preview.errors.length > 0) return;
    const names = Object.keys(preview.patch);
    const ok = await change(
      'Applying the pasted variables',
      () => data(api.PATCH('/apps/{appID}/env', { params: { path: { appID } }, body: preview.patch })),
      `${names.length} variable${names.length === 1 ? '' : 's'} set: ${names.join(', ')}.`,
      'paste',
    );
    if (ok) setPaste('');
  };
  const toggle = (key: string) =>
    setRevealed((r) => {
      const next = new Set(r);
      if (!next.delete(key)) next.add(key);
      return next;
    });

  const own = env ? ownVariables(env) : [];
  const pending = preview ? preview.changes.filter((c) => c.kind !== 'unchanged') : [];
  return (
    <>
      <p class="crumbs">
        <a href={hrefOf({ page: 'apps' })}>Apps</a> / <a href={hrefOf({ page: 'app', name })}>{name}</a> / environment
      </p>
      <PageHeading title={`${name} environment`}>Environment of {name}</PageHeading>
      {loadError !== undefined && <ErrorMessage doing={`Loading the environment of ${name}`} error={loadError} />}
      {!env && loadError === undefined && <p role="status">Loading…</p>}
      {failure?.where === 'table' && <ErrorMessage doing={failure.doing} error={failure.error} />}
      <p role="status" id="env-done" class={done?.where === 'table' ? 'done' : 'visually-hidden'}>
        {done?.where === 'table' && done.said}
      </p>
      {env && (
        <>
          <section aria-labelledby="own-heading">
            <h2 id="own-heading">The app’s variables</h2>
            {own.length === 0 ? (
              <p id="own-empty">None yet: paste a .env below to add some.</p>
            ) : (
              <table class="apps env" id="own-env">
                <caption class="visually-hidden">Variables of {name}; values hidden until revealed</caption>
                <TableHead columns={['Name', 'Value']} actions />
                <tbody>
                  {own.map((v) => {
                    const shown = revealed.has(v.name);
                    const row = editing?.name === v.name ? editing : undefined;
                    return (
                      <tr key={v.name} data-name={v.name}>
                        <th scope="row">
                          <code>{v.name}</code>
                          {v.overriddenBy && <span class="tag warn">not used on the machines: {v.overriddenBy} provides its own</span>}
                        </th>
                        <td class="value">
                          {row?.mode === 'edit' ? (
                            <form
                              class="inline"
                              onSubmit={(e) => {
                                e.preventDefault();
                                void save(v.name, row.value);
                              }}
                            >
                              <label for={`edit-${v.name}`} class="visually-hidden">
                                New value of {v.name}
                              </label>
                              <input
                                id={`edit-${v.name}`}
                                value={row.value}
                                autocomplete="off"
                                spellcheck={false}
                                onInput={(e) => setEditing({ name: v.name, mode: 'edit', value: e.currentTarget.value })}
                              />
                              <button type="submit" disabled={busy}>
                                Save
                              </button>
                              <button type="button" class="secondary" onClick={() => setEditing(undefined)}>
                                Cancel
                              </button>
                            </form>
                          ) : (
                            <>
                              <code class="secret" id={`value-${v.name}`}>
                                {shown ? v.value || '(empty)' : '••••••••'}
                              </code>
                              <button
                                type="button"
                                class="secondary small"
                                aria-pressed={shown}
                                aria-label={`${shown ? 'Hide' : 'Reveal'} the value of ${v.name}`}
                                onClick={() => toggle(v.name)}
                              >
                                {shown ? 'Hide' : 'Reveal'}
                              </button>
                            </>
                          )}
                        </td>
                        <td class="actions">
                          {row?.mode === 'remove' ? (
                            <span role="group" aria-label={`Confirm removing ${v.name}`}>
                              Remove {v.name}?{' '}
                              <button type="button" class="danger small" disabled={busy} onClick={() => void remove(v.name)}>
                                Remove
                              </button>{' '}
                              <button type="button" class="secondary small" onClick={() => setEditing(undefined)}>
                                Keep
                              </button>
                            </span>
                          ) : (
                            row?.mode !== 'edit' && (
                              <>
                                <button
                                  type="button"
                                  class="secondary small"
                                  aria-label={`Edit ${v.name}`}
                                  onClick={() => setEditing({ name: v.name, mode: 'edit', value: v.value })}
                                >
                                  Edit
                                </button>{' '}
                                <button
                                  type="button"
                                  class="secondary small"
                                  aria-label={`Remove ${v.name}`}
                                  onClick={() => setEditing({ name: v.name, mode: 'remove' })}
                                >
                                  Remove
                                </button>
                              </>
                            )
                          )}
                        </td>
                      </tr>
                    );
                  })}
                </tbody>
              </table>
            )}
          </section>

          {env.provided.length > 0 && (
            <section aria-labelledby="provided-heading">
              <h2 id="provided-heading">Provided to the machines</h2>
              <p class="muted">
                Set by the platform, not by the app: they win over the app’s own of the same name. Their values are credentials and are
                never shown here.
              </p>
              <table class="apps env" id="provided-env">
                <caption class="visually-hidden">Variables provided to the machines of {name}</caption>
                <TableHead columns={['Name', 'Source', 'Value']} />
                <tbody>
                  {env.provided.map((p) => (
                    <tr key={p.name} data-name={p.name}>
                      <th scope="row">
                        <code>{p.name}</code>
                        {p.overrides && <span class="tag">overrides the app’s own</span>}
                      </th>
                      <td>{sourceInWords(p.source)}</td>
                      <td class="muted">hidden</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
          )}

          <section aria-labelledby="paste-heading">
            <h2 id="paste-heading">Paste a .env</h2>
            <form
              onSubmit={(e) => {
                e.preventDefault();
                void applyPaste();
              }}
            >
              <label for="dotenv">KEY=VALUE lines, as in a .env file</label>
              <p class="hint" id="dotenv-hint">
                # starts a comment; values may be 'single' or "double" quoted (\n and other escapes in double quotes); export before a name
                is allowed. Nothing is sent until you apply, and nothing while a line is wrong.
              </p>
              <textarea
                id="dotenv"
                rows={8}
                spellcheck={false}
                autocomplete="off"
                aria-describedby="dotenv-hint"
                value={paste}
                onInput={(e) => setPaste(e.currentTarget.value)}
              />
              {preview && preview.errors.length > 0 && (
                <div class="error" role="alert" id="paste-errors">
                  <strong>
                    {preview.errors.length === 1 ? 'One line is' : `${preview.errors.length} lines are`} wrong; nothing will be sent until
                    {preview.errors.length === 1 ? ' it is' : ' they are'} fixed:
                  </strong>
                  <ul>
                    {preview.errors.map((e) => (
                      <li key={e}>{e}</li>
                    ))}
                  </ul>
                </div>
              )}
              {preview && preview.errors.length === 0 && (
                <div class="preview" id="paste-preview" role="status">
                  {pending.length === 0 ? (
                    <p>Nothing to change: every variable is already set to that value.</p>
                  ) : (
                    <>
                      <p>Applying will change {pending.length === 1 ? 'one variable' : `${pending.length} variables`}:</p>
                      <ul>
                        {pending.map((c) => (
                          <li key={c.name}>
                            <code>{c.name}</code> {c.kind === 'added' ? 'added' : 'changed'}
                            {c.overridden && ' (not used on the machines: a provided variable of that name wins)'}
                          </li>
                        ))}
                      </ul>
                    </>
                  )}
                  {preview.repeated.length > 0 && <p>Given more than once, the last one counts: {preview.repeated.join(', ')}.</p>}
                </div>
              )}
              <button type="submit" disabled={busy || !preview || preview.errors.length > 0 || pending.length === 0}>
                Apply the pasted variables
              </button>
              {failure?.where === 'paste' && <ErrorMessage doing={failure.doing} error={failure.error} />}
              <p role="status" id="paste-done" class={done?.where === 'paste' ? 'done' : 'visually-hidden'}>
                {done?.where === 'paste' && done.said}
              </p>
            </form>
          </section>
        </>
      )}
    </>
  );
}
