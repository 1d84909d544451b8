// Sign-in: an email address, then "check your mail"; or a passkey; or the platform's identity
// provider, when the API offers them (GET /console/providers). The email answer is the same whether
// or not the address has an account; the mailed link works once, for ten minutes, and opens the
// console signed in.
import { useEffect, useState } from 'preact/hooks';
import { requestSignIn, signInProviders, startIdpSignIn, type SignInProviders } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { base } from '../router.js';
import { passkeySignIn, passkeysInThisBrowser } from '../webauthn.js';

export function SignInPage() {
  const [email, setEmail] = useState('');
  const [sent, setSent] = useState<string | undefined>(undefined);
  const [error, setError] = useState<{ doing: string; error: unknown } | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [providers, setProviders] = useState<SignInProviders | undefined>(undefined);
  useEffect(() => {
    // Without the answer the page offers email alone, which always works.
    signInProviders().then(setProviders, () => undefined);
  }, []);
  const attempt = async (doing: string, step: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await step();
    } catch (err) {
      setError({ doing, error: err });
    } finally {
      setBusy(false);
    }
  };
  const submit = (event: Event) => {
    event.preventDefault();
    void attempt('Asking for a sign-in link', async () => setSent(await requestSignIn(email)));
  };
  // A fresh start once signed in, so the console asks who is signed in with the new cookie.
  const withPasskey = () =>
    void attempt('Signing in with a passkey', async () => {
      await passkeySignIn();
      location.replace(`${base}/`);
    });
  const atProvider = () =>
    void attempt('Signing in at the identity provider', async () => {
      location.assign(await startIdpSignIn());
    });
  const passkey = providers?.passkey === true && passkeysInThisBrowser();
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
        <>
          <form onSubmit={submit}>
            <label for="email">Email address</label>
            <input
              id="email"
              name="email"
              type="email"
              autocomplete="email webauthn"
              required
              value={email}
              onInput={(e) => setEmail(e.currentTarget.value)}
            />
            <button type="submit" disabled={busy}>
              Email me a sign-in link
            </button>
          </form>
          {(passkey || providers?.idp) && (
            <section aria-labelledby="other-ways" class="other-ways">
              <h2 id="other-ways">Or</h2>
              {passkey && (
                <button type="button" class="secondary" id="passkey-sign-in" disabled={busy} onClick={withPasskey}>
                  Sign in with a passkey
                </button>
              )}{' '}
              {providers?.idp && (
                <button type="button" class="secondary" id="idp-sign-in" disabled={busy} onClick={atProvider}>
                  Sign in with your identity provider
                </button>
              )}
            </section>
          )}
          {error !== undefined && <ErrorMessage doing={error.doing} error={error.error} />}
        </>
      )}
    </main>
  );
}
