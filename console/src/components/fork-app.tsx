// "Fork" on an app's overview (POST /apps/{app}/fork): a new app of the account with the same env
// and the live deploy's tree, as `svc apps fork` makes one; the console then opens it.
import { useState } from 'preact/hooks';
import { api, data } from '../api.js';
import { hrefOf, navigate } from '../router.js';
import { useAction } from '../use-action.js';
import { ErrorMessage } from './error-message.js';

export function ForkApp({ name }: { name: string }) {
  const [open, setOpen] = useState(false);
  const [target, setTarget] = useState(`${name}-copy`);
  const { busy, failure, run } = useAction();
  const fork = (event: Event) => {
    event.preventDefault();
    void run(
      `Forking ${name}`,
      () => data(api.POST('/apps/{appID}/fork', { params: { path: { appID: name } }, body: { name: target.trim() } })),
      {
        after: (made) => navigate(hrefOf({ page: 'app', name: made.app.name })),
      },
    );
  };
  if (!open)
    return (
      <p>
        <button type="button" class="secondary" onClick={() => setOpen(true)}>
          Fork {name}…
        </button>
      </p>
    );
  return (
    <form id="fork-app" onSubmit={fork} aria-labelledby="fork-app-heading">
      <h2 id="fork-app-heading">Fork {name}</h2>
      <p class="hint" id="fork-app-hint">
        A new app serving what {name} serves, with its configuration and environment; not its domains, app users, previews, database or
        volumes&apos; data. {name} is not changed.
      </p>
      <label for="fork-app-name">Name of the new app</label>{' '}
      <input
        id="fork-app-name"
        value={target}
        autocomplete="off"
        spellcheck={false}
        aria-describedby="fork-app-hint"
        onInput={(e) => setTarget(e.currentTarget.value)}
      />{' '}
      <button type="submit" disabled={busy || !target.trim()}>
        Fork
      </button>{' '}
      <button type="button" class="secondary" disabled={busy} onClick={() => setOpen(false)}>
        Cancel
      </button>
      {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
    </form>
  );
}
