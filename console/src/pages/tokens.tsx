// The account's API tokens: the list, a new token restricted to some apps, actions and a lifetime
// (shown once: the API keeps only its hash), and revoking one after a confirmation that says when
// it is the console's own session, whose revocation signs this browser out.
import { useEffect, useState } from 'preact/hooks';
import { api, data, type Token, type TokenAction, type TokenCreated } from '../api.js';
import { ConfirmStep } from '../components/confirm-step.js';
import { ErrorMessage } from '../components/error-message.js';
import { ShownOnce } from '../components/shown-once.js';
import { PageHeading } from '../components/page-heading.js';
import { TableHead } from '../components/table-head.js';
import { sessionToken, tokenActions, tokenRequest } from '../token-form.js';
import { when } from '../time.js';
import { useAction } from '../use-action.js';

const lifetimes = [
  { value: '1d', label: '1 day' },
  { value: '7d', label: '7 days' },
  { value: '30d', label: '30 days' },
  { value: '90d', label: '90 days' },
  { value: '366d', label: '366 days (the longest)' },
];

function NewToken({ created, onDone }: { created: TokenCreated; onDone: () => void }) {
  return (
    <ShownOnce
      id="new-token"
      fieldId="new-token-value"
      heading={`Token ${created.name ?? ''} created`}
      warning={
        <>
          <strong>Copy it now: it will not be shown again.</strong> The platform keeps only what verifies it.
        </>
      }
      label="The new token"
      what="token"
      value={created.token}
      rows={3}
      onDone={onDone}
    />
  );
}

export function TokensPage() {
  const [tokens, setTokens] = useState<Token[] | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  // A failed revoke is said above the list, a failed create under its form.
  const { busy, failure, done, run } = useAction<'list' | 'form'>();
  const [created, setCreated] = useState<TokenCreated | undefined>(undefined);
  const [confirming, setConfirming] = useState<string | undefined>(undefined);
  const [name, setName] = useState('');
  const [apps, setApps] = useState('');
  const [actions, setActions] = useState<ReadonlySet<TokenAction>>(new Set());
  const [lifetime, setLifetime] = useState('90d');

  const load = () =>
    data(api.GET('/account/tokens')).then(
      (t) => {
        setTokens(t.tokens);
        setLoadError(undefined);
      },
      (err: unknown) => setLoadError(err),
    );
  useEffect(() => void load(), []);

  const create = async (event: Event) => {
    event.preventDefault();
    await run(
      'Creating the token',
      () => data(api.POST('/account/tokens', { body: tokenRequest({ name, apps, actions: [...actions], expiresIn: lifetime }) })),
      {
        where: 'form',
        after: async (made) => {
          setCreated(made);
          setName('');
          setApps('');
          setActions(new Set());
          await load();
        },
      },
    );
  };
  // The message of the last change stays while a revoke runs.
  const revoke = (token: Token) =>
    run(
      `Revoking token ${token.name ?? token.nonce}`,
      () => api.DELETE('/account/tokens/{nonce}', { params: { path: { nonce: token.nonce } } }),
      {
        said: `Token ${token.name ?? token.nonce} revoked.`,
        where: 'list',
        keepDone: true,
        after: async () => {
          setConfirming(undefined);
          // When it was this session's, this answers 401 and the console shows sign-in.
          await load();
        },
      },
    );

  const session = tokens ? sessionToken(tokens) : undefined;
  const live = tokens?.filter((t) => !t.revoked) ?? [];
  return (
    <>
      <PageHeading title="Tokens">API tokens</PageHeading>
      {created && <NewToken created={created} onDone={() => setCreated(undefined)} />}
      {failure?.where === 'list' && <ErrorMessage doing={failure.doing} error={failure.error} />}
      <p role="status" id="tokens-done" class={done ? 'done' : 'visually-hidden'}>
        {done?.said}
      </p>
      {loadError !== undefined && <ErrorMessage doing="Listing tokens" error={loadError} />}
      {!tokens && loadError === undefined && <p role="status">Loading tokens…</p>}
      {tokens && (
        <table class="apps tokens" id="tokens">
          <caption class="visually-hidden">API tokens of the account</caption>
          <TableHead columns={['Name', 'Restrictions', 'Created', 'Expires']} actions />
          <tbody>
            {live.map((t) => {
              const mine = session === t.nonce;
              const label = t.name ?? t.nonce;
              return (
                <tr key={t.nonce} data-nonce={t.nonce}>
                  <th scope="row">
                    {t.name ?? <span class="muted">unnamed</span>}
                    {mine && <span class="tag">this session</span>}
                    <div class="muted small">
                      <code>{t.nonce}</code>
                    </div>
                  </th>
                  <td>
                    {t.restrictions.filter((r) => !r.startsWith('expires=')).join('; ') || <span class="muted">none: full authority</span>}
                  </td>
                  <td>{when(t.created_at)}</td>
                  <td>{when(t.expires_at)}</td>
                  <td class="actions">
                    {confirming === t.nonce ? (
                      <ConfirmStep
                        label={`Confirm revoking ${label}`}
                        action={mine ? 'Revoke and sign out' : 'Revoke'}
                        busy={busy}
                        onConfirm={() => void revoke(t)}
                        onKeep={() => setConfirming(undefined)}
                      >
                        Revoke {label}? Whatever uses it, and every token made from it, stops working.
                        {mine && <strong> It is this console session: revoking it signs you out.</strong>}
                      </ConfirmStep>
                    ) : (
                      <button type="button" class="secondary small" aria-label={`Revoke ${label}`} onClick={() => setConfirming(t.nonce)}>
                        Revoke
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}

      <section aria-labelledby="create-heading">
        <h2 id="create-heading">Create a token</h2>
        <p class="muted">A new token can do at most what this session can. Leave apps or actions empty for no such restriction.</p>
        <form onSubmit={(e) => void create(e)} id="create-token">
          <label for="token-name">Token name</label>
          <input id="token-name" value={name} maxLength={100} autocomplete="off" onInput={(e) => setName(e.currentTarget.value)} />
          <label for="token-apps">Only for these apps (separated by commas; empty: every app)</label>
          <input id="token-apps" value={apps} autocomplete="off" spellcheck={false} onInput={(e) => setApps(e.currentTarget.value)} />
          <fieldset>
            <legend>Actions (none checked: every action)</legend>
            {tokenActions.map((a) => (
              <label class="check" key={a.action}>
                <input
                  type="checkbox"
                  name="actions"
                  value={a.action}
                  checked={actions.has(a.action)}
                  onChange={(e) => {
                    const next = new Set(actions);
                    if (e.currentTarget.checked) next.add(a.action);
                    else next.delete(a.action);
                    setActions(next);
                  }}
                />
                <code>{a.action}</code>: {a.words}
              </label>
            ))}
          </fieldset>
          <label for="token-expiry">Expires after</label>
          <select id="token-expiry" value={lifetime} onChange={(e) => setLifetime(e.currentTarget.value)}>
            {lifetimes.map((l) => (
              <option key={l.value} value={l.value}>
                {l.label}
              </option>
            ))}
          </select>
          <p>
            <button type="submit" disabled={busy}>
              Create the token
            </button>
          </p>
          {failure?.where === 'form' && <ErrorMessage doing={failure.doing} error={failure.error} />}
        </form>
      </section>
    </>
  );
}
