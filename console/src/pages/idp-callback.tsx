// Where the identity provider sends the browser back (/console/idp/callback?code=…&state=…). Opening
// it spends nothing: this page presents the query to the API (with the console's CSRF defences) and
// at once takes it out of the address bar and history; the API finishes the flow only in the
// browser that started it.
import { useEffect, useRef, useState } from 'preact/hooks';
import { finishIdpSignIn } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { base, hrefOf } from '../router.js';

export function IdpCallbackPage({ search }: { search: string }) {
  const [error, setError] = useState<unknown>(undefined);
  const held = useRef(search);
  const started = useRef(false);
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    history.replaceState(null, '', `${base}/idp/callback`);
    finishIdpSignIn(held.current).then(
      // A fresh start, so the console asks who is signed in with the new cookie.
      () => location.replace(`${base}/`),
      (err: unknown) => setError(err),
    );
  }, []);
  return (
    <main id="main" class="narrow">
      <PageHeading title="Signing in">Sign in to the svc console</PageHeading>
      {error === undefined ? (
        <p role="status">Signing in…</p>
      ) : (
        <>
          <ErrorMessage doing="Signing in at the identity provider" error={error} />
          <p>
            <a href={hrefOf({ page: 'sign-in' })}>Back to sign-in</a>
          </p>
        </>
      )}
    </main>
  );
}
