// The frame of every signed-in page: the console's name, the account, navigation and sign-out.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { signOut, type Account } from '../api.js';
import { base } from '../router.js';
import { ErrorMessage } from './error-message.js';

export function Layout({ account, onSignedOut, children }: { account: Account; onSignedOut: () => void; children: ComponentChildren }) {
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const doSignOut = async () => {
    setBusy(true);
    try {
      await signOut();
      onSignedOut();
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={`${base}/`}>
          svc console
        </a>
        <nav aria-label="Main">
          <a href={`${base}/`}>Apps</a>
        </nav>
        <span class="who">{account.email}</span>
        <button type="button" class="secondary" onClick={() => void doSignOut()} disabled={busy}>
          Sign out
        </button>
      </header>
      <main id="main">
        {error !== undefined && <ErrorMessage doing="Signing out" error={error} />}
        {children}
      </main>
    </>
  );
}
