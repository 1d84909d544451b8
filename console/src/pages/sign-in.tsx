// Sign-in: an email address, then "check your mail". The answer is the same whether or not the
// address has an account; the mailed link works once, for ten minutes, and opens the console signed in.
import { useState } from 'preact/hooks';
import { requestSignIn } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';

export function SignInPage() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState<string | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(undefined);
    try {
      setSent(await requestSignIn(email));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="narrow">
      <PageHeading title="Sign in">Sign in to the svc console</PageHeading>
      {sent ? (
        <div class="notice" role="status" id="sent">
          <h2>Check your mail</h2>
          <p>{sent.charAt(0).toUpperCase() + sent.slice(1)}.</p>
          <p>The link works once, for ten minutes. You can close this tab: the link opens the console signed in.</p>
          <button type="button" class="secondary" onClick={() => setSent(undefined)}>
            Use another address
          </button>
        </div>
      ) : (
        <form onSubmit={(e) => void submit(e)}>
          <label for="email">Email address</label>
          <input
            id="email"
            name="email"
            type="email"
            autocomplete="email"
            required
            value={email}
            onInput={(e) => setEmail(e.currentTarget.value)}
          />
          <button type="submit" disabled={busy}>
            Email me a sign-in link
          </button>
          {error !== undefined && <ErrorMessage doing="Asking for a sign-in link" error={error} />}
        </form>
      )}
    </main>
  );
}
