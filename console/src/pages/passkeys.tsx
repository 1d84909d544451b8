// The owner's console passkeys: the list, adding one in this browser (or on a security key), and
// removing one after a confirmation. Each addition is mailed to the owner by the API.
import { useEffect, useState } from 'preact/hooks';
import { api, data, signInProviders, type ConsolePasskey } from '../api.js';
import { ConfirmStep } from '../components/confirm-step.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { TableHead } from '../components/table-head.js';
import { when } from '../time.js';
import { useAction } from '../use-action.js';
import { addPasskey, passkeysInThisBrowser } from '../webauthn.js';

export function PasskeysPage() {
  const [passkeys, setPasskeys] = useState<ConsolePasskey[] | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [possible, setPossible] = useState<boolean | undefined>(undefined);
  const [confirming, setConfirming] = useState<string | undefined>(undefined);
  const { busy, failure, done, run } = useAction();

  const load = () =>
    data(api.GET('/console/passkeys')).then(
      (p) => {
        setPasskeys(p.passkeys);
        setLoadError(undefined);
      },
      (err: unknown) => setLoadError(err),
    );
  useEffect(() => {
    void load();
    signInProviders().then(
      (p) => setPossible(p.passkey),
      () => setPossible(false),
    );
  }, []);

  const add = () => run('Adding a passkey', addPasskey, { said: 'Passkey added: it signs you in from the sign-in page.', after: load });
  const remove = (p: ConsolePasskey) =>
    run('Removing the passkey', () => api.DELETE('/console/passkeys/{passkeyID}', { params: { path: { passkeyID: p.id } } }), {
      said: 'Passkey removed.',
      after: async () => {
        setConfirming(undefined);
        await load();
      },
    });

  return (
    <>
      <PageHeading title="Passkeys">Passkeys</PageHeading>
      <p class="muted">
        A passkey signs you in to this console without a mailed link: your device or security key proves it is you. It works on this
        console's address only.
      </p>
      {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
      <p role="status" id="passkeys-done" class={done ? 'done' : 'visually-hidden'}>
        {done?.said}
      </p>
      {loadError !== undefined && <ErrorMessage doing="Listing passkeys" error={loadError} />}
      {!passkeys && loadError === undefined && <p role="status">Loading passkeys…</p>}
      {passkeys && passkeys.length === 0 && <p id="no-passkeys">No passkeys yet.</p>}
      {passkeys && passkeys.length > 0 && (
        <table class="apps" id="passkeys">
          <caption class="visually-hidden">Console passkeys of the account</caption>
          <TableHead columns={['Passkey', 'Added', 'Last used']} actions />
          <tbody>
            {passkeys.map((p) => {
              const label = `passkey ${p.id.slice(0, 12)}…`;
              return (
                <tr key={p.id}>
                  <th scope="row">
                    <code>{p.id.slice(0, 12)}…</code>
                    {p.transports.length > 0 && <div class="muted small">{p.transports.join(', ')}</div>}
                  </th>
                  <td>{when(p.created_at)}</td>
                  <td>{p.last_used_at ? when(p.last_used_at) : <span class="muted">never</span>}</td>
                  <td class="actions">
                    {confirming === p.id ? (
                      <ConfirmStep
                        label={`Confirm removing ${label}`}
                        action="Remove"
                        busy={busy}
                        onConfirm={() => void remove(p)}
                        onKeep={() => setConfirming(undefined)}
                      >
                        Remove {label}? It will not sign anyone in from then on.
                      </ConfirmStep>
                    ) : (
                      <button type="button" class="secondary small" aria-label={`Remove ${label}`} onClick={() => setConfirming(p.id)}>
                        Remove
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      <section aria-labelledby="add-heading">
        <h2 id="add-heading">Add a passkey</h2>
        {possible === false ? (
          <p id="passkeys-unavailable">
            Passkeys need the console at a host name (not an IP address) set as the API's public URL; sign in by email meanwhile.
          </p>
        ) : !passkeysInThisBrowser() ? (
          <p>This browser cannot make passkeys.</p>
        ) : (
          <button type="button" id="passkey-add" disabled={busy || possible === undefined} onClick={() => void add()}>
            Add a passkey
          </button>
        )}
      </section>
    </>
  );
}
