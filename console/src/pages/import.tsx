// Importing a Git repository as an app (docs/api/imports.md): **Preview** says what would be built
// (GET /apps/imports/preview: the plan, the compose services, the authentication policy found),
// creating nothing; **Import** makes the app and its first build (POST /apps/imports), then shows
// the push webhook's path and secret (said once) and links to the app's builds, where the build's
// log is followed. The API keeps no list of imports: an imported app's builds page shows its
// repository, branch and the last commit built.
import { useState } from 'preact/hooks';
import { api, data, type ImportPreview, type ImportRequest, type Imported } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { hrefOf } from '../router.js';
import { repositoryProblem } from '../sandboxes.js';
import { useAction } from '../use-action.js';

export function ImportPage() {
  const [repository, setRepository] = useState('');
  const [ref, setRef] = useState('');
  const [dir, setDir] = useState('');
  const [name, setName] = useState('');
  const [token, setToken] = useState('');
  const [problem, setProblem] = useState<string | undefined>(undefined);
  const { busy, failure, run } = useAction();
  const [preview, setPreview] = useState<ImportPreview | undefined>(undefined);
  const [made, setMade] = useState<Imported | undefined>(undefined);

  const where = () => ({ ...(ref.trim() ? { ref: ref.trim() } : {}), ...(dir.trim() ? { path: dir.trim() } : {}) });
  const checked = (): string | undefined => {
    const p = repositoryProblem(repository);
    setProblem(p);
    return p ? undefined : repository.trim();
  };

  const doPreview = async () => {
    const url = checked();
    if (!url) return;
    setPreview(undefined);
    await run(
      `Previewing ${url}`,
      () =>
        data(
          api.GET('/apps/imports/preview', {
            params: { query: { repository: url, ...where() } },
            ...(token ? { headers: { 'X-Svc-Git-Token': token } } : {}),
          }),
        ),
      { after: setPreview },
    );
  };

  const doImport = async (event: Event) => {
    event.preventDefault();
    const url = checked();
    if (!url) return;
    const body: ImportRequest = {
      repository: url,
      ...where(),
      ...(name.trim() ? { name: name.trim() } : {}),
      ...(token ? { token } : {}),
    };
    await run(`Importing ${url}`, () => data(api.POST('/apps/imports', { body })), {
      after: (answer) => {
        setMade(answer);
        setToken('');
      },
    });
  };

  const plan = preview?.plan as { kind?: unknown; why?: unknown } | null | undefined;
  return (
    <>
      <p class="crumbs">
        <a href={hrefOf({ page: 'apps' })}>Apps</a> / import
      </p>
      <PageHeading title="Import a repository">Import a Git repository</PageHeading>
      <p class="muted">
        The repository becomes an app: it is built and deployed, and from then on every push is built, the default branch into the app and
        any other branch into a preview. The CLI’s is <code>svc import</code>.
      </p>
      {made ? (
        <section aria-labelledby="imported-heading" id="imported">
          <h2 id="imported-heading">Imported as {made.app.name}</h2>
          <p role="status" class="done">
            App {made.app.name} made from {made.repository.url} (default branch {made.repository.default_branch}); its first build,{' '}
            <code>{made.build.id}</code>, is under way.
          </p>
          <p>
            <a href={hrefOf({ page: 'app-builds', name: made.app.name, build: made.build.id })}>Follow the build of {made.app.name}</a>
          </p>
          <h3>Push webhook</h3>
          <p>
            Give the code host this path on the API’s address and this secret (content type JSON, events <code>push</code> and{' '}
            <code>delete</code>). <strong>The secret is shown only now.</strong> Without it, the repository is still asked for new commits
            every minute.
          </p>
          <dl class="facts">
            <dt>Path</dt>
            <dd>
              <code class="wrap">{made.repository.hook_path}</code>
            </dd>
            <dt>Secret</dt>
            <dd>
              <code class="wrap" id="imported-secret">
                {made.repository.hook_secret}
              </code>
            </dd>
          </dl>
        </section>
      ) : (
        <form id="import" onSubmit={(e) => void doImport(e)} noValidate>
          <label for="import-repository">Repository</label>
          <p class="hint" id="import-repository-hint">
            Its https address, as <code>git clone</code> takes it.
          </p>
          <input
            id="import-repository"
            type="url"
            value={repository}
            required
            autocomplete="off"
            spellcheck={false}
            aria-describedby={problem ? 'import-repository-hint import-repository-problem' : 'import-repository-hint'}
            aria-invalid={problem ? 'true' : undefined}
            onInput={(e) => {
              setRepository(e.currentTarget.value);
              setPreview(undefined);
            }}
          />
          {problem && (
            <p class="error" id="import-repository-problem" role="alert">
              {problem.replace(/^./, (c) => c.toUpperCase())}.
            </p>
          )}
          <label for="import-ref">Branch or tag</label>
          <p class="hint" id="import-ref-hint">
            Empty: the repository’s default branch.
          </p>
          <input
            id="import-ref"
            value={ref}
            autocomplete="off"
            spellcheck={false}
            aria-describedby="import-ref-hint"
            onInput={(e) => {
              setRef(e.currentTarget.value);
              setPreview(undefined);
            }}
          />
          <label for="import-path">Directory</label>
          <p class="hint" id="import-path-hint">
            The sub-directory that is the app; empty: the whole repository.
          </p>
          <input
            id="import-path"
            value={dir}
            autocomplete="off"
            spellcheck={false}
            aria-describedby="import-path-hint"
            onInput={(e) => {
              setDir(e.currentTarget.value);
              setPreview(undefined);
            }}
          />
          <label for="import-name">App name</label>
          <p class="hint" id="import-name-hint">
            Empty: the repository’s name.
          </p>
          <input
            id="import-name"
            value={name}
            maxLength={40}
            autocomplete="off"
            spellcheck={false}
            aria-describedby="import-name-hint"
            onInput={(e) => setName(e.currentTarget.value)}
          />
          <label for="import-token">Access token (a private repository)</label>
          <p class="hint" id="import-token-hint">
            Kept in a secret of the account and given only to each build’s clone; never shown again.
          </p>
          <input
            id="import-token"
            type="password"
            value={token}
            autocomplete="off"
            aria-describedby="import-token-hint"
            onInput={(e) => setToken(e.currentTarget.value)}
          />
          <p>
            <button type="button" class="secondary" disabled={busy} onClick={() => void doPreview()}>
              Preview
            </button>{' '}
            <button type="submit" disabled={busy}>
              Import
            </button>
          </p>
          <p role="status" class={busy ? 'muted' : 'visually-hidden'}>
            {busy ? 'Asking the repository…' : ''}
          </p>
          {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
        </form>
      )}
      {preview && !made && (
        <section aria-labelledby="import-preview-heading" id="import-preview">
          <h2 id="import-preview-heading">What importing would do</h2>
          <dl class="facts">
            <dt>Repository</dt>
            <dd class="wrap">{preview.repository}</dd>
            <dt>Branch or tag</dt>
            <dd>
              {preview.ref} at commit <code>{preview.commit.slice(0, 12)}</code>
              {preview.path && `, directory ${preview.path}`}
            </dd>
            <dt>Build</dt>
            <dd id="import-preview-plan">
              {plan ? `${String(plan.kind)}: ${String(plan.why)}` : <span>Nothing can be built: {preview.problem}</span>}
            </dd>
            {preview.services.length > 0 && (
              <>
                <dt>Services</dt>
                <dd>{preview.services.map((s) => `${s.name} (${s.image}${s.port === null ? '' : `, port ${s.port}`})`).join(', ')}</dd>
              </>
            )}
            <dt>Authentication</dt>
            <dd>{preview.auth_from}</dd>
          </dl>
        </section>
      )}
    </>
  );
}
