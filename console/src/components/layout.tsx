// The frame of every signed-in page: the console's name, the account, navigation and sign-out.
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { signOut, type Account } from '../api.js';
import { hrefOf, type Route } from '../router.js';
import { ErrorMessage } from './error-message.js';

/** The navigation's pages; an app's pages count as Apps. */
const sections = [
  {
    label: 'Apps',
    route: { page: 'apps' },
    pages: [
      'apps',
      'app',
      'app-env',
      'app-deploys',
      'app-previews',
      'app-domains',
      'app-logs',
      'app-metrics',
      'app-builds',
      'import',
      'app-access',
    ],
  },
  { label: 'Databases', route: { page: 'databases' }, pages: ['databases'] },
  { label: 'Sandboxes', route: { page: 'sandboxes' }, pages: ['sandboxes', 'sandbox'] },
  { label: 'Volumes', route: { page: 'volumes' }, pages: ['volumes'] },
  { label: 'Events', route: { page: 'events' }, pages: ['events'] },
  { label: 'Tokens', route: { page: 'tokens' }, pages: ['tokens'] },
  { label: 'Passkeys', route: { page: 'passkeys' }, pages: ['passkeys'] },
  { label: 'Webhooks', route: { page: 'webhooks' }, pages: ['webhooks'] },
  { label: 'Usage', route: { page: 'usage' }, pages: ['usage'] },
] satisfies Array<{ label: string; route: Route; pages: Array<Route['page']> }>;

export function Layout({
  account,
  current,
  onSignedOut,
  children,
}: {
  account: Account;
  current: Route['page'];
  onSignedOut: () => void;
  children: ComponentChildren;
}) {
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
        <a class="brand" href={hrefOf({ page: 'apps' })}>
          svc console
        </a>
        <nav aria-label="Main">
          {sections.map((s) => (
            <a key={s.label} href={hrefOf(s.route)} aria-current={(s.pages as string[]).includes(current) ? 'page' : undefined}>
              {s.label}
            </a>
          ))}
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
