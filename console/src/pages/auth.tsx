// Where a mailed sign-in link lands (/console/auth?code=…). Opening the link spends nothing: this
// page presents the code to the API, and at once takes it out of the address bar and history. In
// the browser that asked for the link it signs in; anywhere else the API names the account first,
// and only "Sign in as …" spends the code (so a link someone else sent cannot sign this browser
// into their account unnoticed, and a mail scanner's visit signs nobody in).
import { useEffect, useRef, useState } from 'preact/hooks';
import { presentSignInCode } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { base, hrefOf } from '../router.js';

type State = { step: 'checking' } | { step: 'confirm'; email: string } | { step: 'signing-in' } | { step: 'failed'; error: unknown };

export function AuthPage({ code }: { code: string }) {
  const [state, setState] = useState<State>({ step: 'checking' });
  // The code stays in memory only: a reload of this page asks for the mail's link again.
  const held = useRef(code);
  const present = async (confirm: boolean) => {
    setState(confirm ? { step: 'signing-in' } : { step: 'checking' });
    try {
      const answer = await presentSignInCode(held.current, confirm);
      if (answer.status === 'confirm') return setState({ step: 'confirm', email: answer.email });
      // A fresh start, so the console asks who is signed in with the new cookie.
      location.replace(`${base}/`);
    } catch (error) {
      setState({ step: 'failed', error });
    }
  };
  const started = useRef(false);
  useEffect(() => {
    if (started.current) return;
    started.current = true;
    history.replaceState(null, '', `${base}/auth`);
    if (held.current === '')
      setState({ step: 'failed', error: new Error('this address holds no sign-in code: open the link from your mail again') });
    else void present(false);
  }, []);
  return (
    <main id="main" class="narrow">
      <PageHeading title="Signing in">Sign in to the svc console</PageHeading>
      {(state.step === 'checking' || state.step === 'signing-in') && <p role="status">Signing in…</p>}
      {state.step === 'confirm' && (
        <div class="notice" id="confirm-sign-in">
          <h2>Sign in as {state.email}?</h2>
          <p>
            This link was asked for in another browser. Sign in here only if you asked for it yourself: someone who sends you a link to
            their own account could then see what you do in it.
          </p>
          <button type="button" onClick={() => void present(true)}>
            Sign in as {state.email}
          </button>{' '}
          <a href={hrefOf({ page: 'sign-in' })}>Cancel</a>
        </div>
      )}
      {state.step === 'failed' && (
        <>
          <ErrorMessage doing="Signing in with the link" error={state.error} />
          <p>
            <a href={hrefOf({ page: 'sign-in' })}>Ask for a new sign-in link</a>
          </p>
        </>
      )}
    </main>
  );
}
