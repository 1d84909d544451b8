// Who may open an app (docs/api/app-users.md): its authentication policy as the API reports it
// (GET /apps/{appID}/auth/providers: which sign-in providers the declared policy admits, and which
// this platform is set up for), read-only, in words and as JSON; its app users (email, state,
// sessions) with Disable and Enable; and revoking sessions, one user's or every one of the app,
// after a confirmation in the page. The policy itself is changed by deploying (compose x-svc.auth,
// a page's meta tags or front matter), not here.
import { useEffect, useState } from 'preact/hooks';
import { appUserStateInWords, policyInWords, type AppUser, type AuthProvider } from '../account.js';
import { api, data } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { hrefOf } from '../router.js';
import { useAction } from '../use-action.js';
import { when } from '../time.js';
import { TableHead } from '../components/table-head.js';
import { ConfirmStep } from '../components/confirm-step.js';

/** Pages of app users read at most: 5,000 users, 200 a page (the API's largest). */
const maxUserPages = 25;

/** The app's users, following `next_after` (at most maxUserPages pages); `more` when some were left unread. */
async function allUsers(appID: string): Promise<{ users: AppUser[]; more: boolean }> {
  const users: AppUser[] = [];
  let after: string | undefined;
  for (let pages = 0; pages < maxUserPages; pages++) {
    const page = await data(
      api.GET('/apps/{appID}/auth/users', { params: { path: { appID }, query: { limit: 200, ...(after ? { after } : {}) } } }),
    );
    users.push(...page.users);
    // A cursor that does not move would loop for ever: taken as the end.
    if (!page.next_after || page.next_after === after) return { users, more: false };
    after = page.next_after;
  }
  return { users, more: true };
}

/** What is being confirmed: revoking one user's sessions, or all of the app's. */
type Confirming = { kind: 'user'; user: AppUser } | { kind: 'all' } | undefined;

/** A new page per app: nothing (a message, a confirmation, a late answer) carries from one app to the next. */
export function AppAccessPage({ name }: { name: string }) {
  return <AccessOf key={name} name={name} />;
}

function AccessOf({ name }: { name: string }) {
  const appID = name;
  const [providers, setProviders] = useState<AuthProvider[] | undefined>(undefined);
  const [policyError, setPolicyError] = useState<unknown>(undefined);
  const [users, setUsers] = useState<AppUser[] | undefined>(undefined);
  const [moreUsers, setMoreUsers] = useState(false);
  const [usersError, setUsersError] = useState<unknown>(undefined);
  const [confirming, setConfirming] = useState<Confirming>(undefined);
  const { busy, failure, done, run } = useAction();

  const loadUsers = () =>
    allUsers(appID).then(
      (u) => {
        setUsers(u.users);
        setMoreUsers(u.more);
        setUsersError(undefined);
      },
      (err: unknown) => setUsersError(err),
    );
  useEffect(() => {
    let live = true;
    setProviders(undefined);
    setPolicyError(undefined);
    setUsers(undefined);
    data(api.GET('/apps/{appID}/auth/providers', { params: { path: { appID } } })).then(
      (p) => live && setProviders(p.providers),
      (err: unknown) => live && setPolicyError(err),
    );
    void loadUsers();
    return () => {
      live = false;
    };
  }, [name]);

  // Said once the users are read again: the message never stands beside a row from before.
  const act = (doing: string, call: () => Promise<string>) =>
    run(doing, call, {
      said: (said) => said,
      after: async () => {
        setConfirming(undefined);
        await loadUsers();
      },
    });
  const setDisabled = (u: AppUser, disable: boolean) =>
    act(`${disable ? 'Disabling' : 'Enabling'} ${u.email}`, async () => {
      const path = { appID, userID: u.id };
      if (disable) await data(api.POST('/apps/{appID}/auth/users/{userID}/disable', { params: { path } }));
      else await data(api.POST('/apps/{appID}/auth/users/{userID}/enable', { params: { path } }));
      return disable ? `${u.email} disabled: their sessions ended and they cannot sign in.` : `${u.email} enabled: they can sign in again.`;
    });
  const revoke = (target: NonNullable<Confirming>) =>
    act(target.kind === 'user' ? `Revoking the sessions of ${target.user.email}` : `Revoking every session of ${name}`, async () => {
      const body = target.kind === 'user' ? { user_id: target.user.id } : {};
      const { revoked } = await data(api.POST('/apps/{appID}/auth/sessions/revoke', { params: { path: { appID } }, body }));
      const whose = target.kind === 'user' ? `of ${target.user.email}` : `of ${name}`;
      return `${revoked} session${revoked === 1 ? '' : 's'} ${whose} revoked.`;
    });

  const policy = providers && policyInWords(providers);
  const sessions = users?.reduce((n, u) => n + u.active_sessions, 0) ?? 0;
  return (
    <>
      <p class="crumbs">
        <a href={hrefOf({ page: 'apps' })}>Apps</a> / <a href={hrefOf({ page: 'app', name })}>{name}</a> / access
      </p>
      <PageHeading title={`Access to ${name}`}>Access to {name}</PageHeading>

      <section aria-labelledby="policy-heading">
        <h2 id="policy-heading">Policy</h2>
        {policyError !== undefined && <ErrorMessage doing={`Reading the policy of ${name}`} error={policyError} />}
        {!providers && policyError === undefined && <p role="status">Loading the policy…</p>}
        {policy && providers && (
          <>
            <div id="policy">
              <p>{policy.lines[0]}</p>
              {policy.lines.length > 1 && (
                <ul>
                  {policy.lines.slice(1).map((l) => (
                    <li key={l}>{l}</li>
                  ))}
                </ul>
              )}
            </div>
            <p class="muted small">
              As declared by its last deploy (compose <code>x-svc.auth</code>, a page's <code>svc-auth</code> meta tags or front matter):
              deploy again to change it.
            </p>
            <details>
              <summary>As JSON (GET /api/apps/{name}/auth/providers)</summary>
              <pre class="log" role="region" tabIndex={0} aria-label={`The sign-in providers of ${name} as JSON`} id="policy-json">
                {JSON.stringify({ providers }, null, 2)}
              </pre>
            </details>
          </>
        )}
      </section>

      <section aria-labelledby="users-heading">
        <h2 id="users-heading">App users</h2>
        <p class="muted">
          The people a <code>required</code> or <code>emails</code> policy admits, made when they first sign in. Disabling one ends their
          sessions at once.
        </p>
        {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
        <p role="status" id="access-done" class={done ? 'done' : 'visually-hidden'}>
          {done?.said}
        </p>
        {usersError !== undefined && <ErrorMessage doing={`Listing the users of ${name}`} error={usersError} />}
        {!users && usersError === undefined && <p role="status">Loading app users…</p>}
        {users && users.length === 0 && <p id="app-users-empty">No app users yet.</p>}
        {moreUsers && (
          <p class="muted" id="app-users-more">
            The first {users?.length.toLocaleString('en')} app users are shown; the API has more (<code>svc users ls {name}</code> lists
            them all).
          </p>
        )}
        {users && users.length > 0 && (
          <table class="apps app-users" id="app-users">
            <caption class="visually-hidden">App users of {name}</caption>
            <TableHead columns={['Email', 'State', 'Last sign-in']} actions />
            <tbody>
              {users.map((u) => {
                const state = appUserStateInWords(u);
                const asking = confirming?.kind === 'user' && confirming.user.id === u.id;
                return (
                  <tr key={u.id} data-user={u.id}>
                    <th scope="row">
                      {u.email}
                      {u.name && <div class="small">{u.name}</div>}
                      <div class="muted small">
                        <code>{u.id}</code>
                      </div>
                    </th>
                    <td>
                      <span class={`dot ${state.tone}`} aria-hidden="true" />
                      {state.text}
                    </td>
                    <td>
                      {u.last_sign_in_at ? when(u.last_sign_in_at) : <span class="muted">never</span>}
                      {u.last_provider && <div class="muted small">with {u.last_provider}</div>}
                    </td>
                    <td class="actions">
                      {u.disabled ? (
                        <button type="button" class="secondary small" disabled={busy} onClick={() => void setDisabled(u, false)}>
                          Enable<span class="visually-hidden"> {u.email}</span>
                        </button>
                      ) : (
                        <button type="button" class="secondary small" disabled={busy} onClick={() => void setDisabled(u, true)}>
                          Disable<span class="visually-hidden"> {u.email}</span>
                        </button>
                      )}{' '}
                      {asking ? (
                        <ConfirmStep
                          label={`Confirm revoking the sessions of ${u.email}`}
                          action="Revoke"
                          busy={busy}
                          onConfirm={() => void revoke({ kind: 'user', user: u })}
                          onKeep={() => setConfirming(undefined)}
                        >
                          Sign {u.email} out everywhere? They can sign in again.
                        </ConfirmStep>
                      ) : (
                        u.active_sessions > 0 && (
                          <button type="button" class="secondary small" onClick={() => setConfirming({ kind: 'user', user: u })}>
                            Revoke sessions<span class="visually-hidden"> of {u.email}</span>
                          </button>
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

      <section aria-labelledby="sessions-heading">
        <h2 id="sessions-heading">Sessions</h2>
        <p>
          {users ? `${sessions} active app-user session${sessions === 1 ? '' : 's'}.` : ''} Revoking every session signs everyone out of{' '}
          {name}, the owner's and other providers' sign-ins too; they can sign in again if the policy admits them.
        </p>
        {confirming?.kind === 'all' ? (
          <ConfirmStep
            label={`Confirm revoking every session of ${name}`}
            action="Revoke every session"
            busy={busy}
            onConfirm={() => void revoke({ kind: 'all' })}
            onKeep={() => setConfirming(undefined)}
          >
            Sign everyone out of {name}?
          </ConfirmStep>
        ) : (
          <button type="button" class="secondary" onClick={() => setConfirming({ kind: 'all' })}>
            Revoke every session of {name}
          </button>
        )}
      </section>
    </>
  );
}
