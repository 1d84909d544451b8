// Approving a `svc login` (/console/cli-login?code=…, the address the CLI prints; a device-code flow
// like GitHub's /login/device). The page names the request (device, when, from which address, its
// code) and warns that only the person who ran svc login should approve it; Approve (with the
// token's actions and lifetime) lets that terminal collect a token of this account, Deny tells it
// no. Without a code in the address, it asks for the one the terminal shows.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ConsoleError, data, type CliLogin, type TokenAction } from '../api.js';
import {
  approveRequest,
  defaultLifetimeDays,
  defaultLoginActions,
  loginStateInWords,
  maxLifetimeDays,
  normalUserCode,
  rememberedCode,
  rememberEntry,
  rememberKey,
  userCodeProblem,
  type Access,
} from '../cli-login.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { hrefOf, navigate } from '../router.js';
import { when } from '../time.js';
import { tokenActions } from '../token-form.js';

/** Keeps a code opened while signed out, so the console comes back to it after sign-in. */
export function rememberCliLogin(code: string): void {
  try {
    if (normalUserCode(code)) localStorage.setItem(rememberKey, rememberEntry(code));
  } catch {
    // No storage (a private window's quota): after sign-in the console opens the apps.
  }
}

/** The code kept before sign-in, once (it is forgotten as it is taken). */
export function takeRememberedCliLogin(): string | undefined {
  try {
    const stored = localStorage.getItem(rememberKey);
    if (stored !== null) localStorage.removeItem(rememberKey);
    return rememberedCode(stored);
  } catch {
    return undefined;
  }
}

function CodeForm({ initial }: { initial: string }) {
  const [value, setValue] = useState(initial);
  const [problem, setProblem] = useState<string | undefined>(initial ? userCodeProblem(initial) : undefined);
  const submit = (event: Event) => {
    event.preventDefault();
    const code = normalUserCode(value);
    if (!code) return setProblem(userCodeProblem(value));
    navigate(hrefOf({ page: 'cli-login', code }));
  };
  return (
    <form id="cli-login-code" onSubmit={submit} noValidate>
      <label for="cli-login-code-input">The code your terminal shows</label>
      <p class="hint" id="cli-login-code-hint">
        Run <code>svc login</code> in your terminal: it shows a code of 8 letters, such as BCDF-GHJK (any case; the dash is optional).
      </p>
      <input
        id="cli-login-code-input"
        value={value}
        autocomplete="off"
        autocapitalize="characters"
        spellcheck={false}
        aria-describedby={problem ? 'cli-login-code-hint cli-login-code-problem' : 'cli-login-code-hint'}
        aria-invalid={problem ? true : undefined}
        onInput={(e) => {
          setValue(e.currentTarget.value);
          setProblem(undefined);
        }}
      />
      {problem && (
        <p class="error" id="cli-login-code-problem" role="alert">
          {problem}
        </p>
      )}
      <p>
        <button type="submit">Continue</button>
      </p>
    </form>
  );
}

function LoginRequest({ code }: { code: string }) {
  const [login, setLogin] = useState<CliLogin | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [failure, setFailure] = useState<{ doing: string; error: unknown } | undefined>(undefined);
  const [outcome, setOutcome] = useState<'approved' | 'denied' | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  // Fewer than everything unless the person asks: a phished approval then cannot manage tokens or webhooks.
  const [access, setAccess] = useState<Access>('chosen');
  const [actions, setActions] = useState<ReadonlySet<TokenAction>>(new Set(defaultLoginActions));
  const [days, setDays] = useState(String(defaultLifetimeDays));
  const [problem, setProblem] = useState<{ problem: string; field: 'days' | 'actions' } | undefined>(undefined);
  // When the form goes (approved, denied), the focus goes to what happened instead of the page's end.
  const said = useRef<HTMLParagraphElement>(null);

  const load = () =>
    data(api.GET('/cli/logins/{userCode}', { params: { path: { userCode: code } } })).then(
      (l) => {
        setLogin(l);
        setLoadError(undefined);
      },
      (err: unknown) => setLoadError(err),
    );
  useEffect(() => {
    setLogin(undefined);
    setLoadError(undefined);
    setFailure(undefined);
    setOutcome(undefined);
    void load();
  }, [code]);
  useEffect(() => {
    if (outcome) said.current?.focus();
  }, [outcome]);

  const decide = async (approve: boolean) => {
    setFailure(undefined);
    setProblem(undefined);
    const request = approve ? approveRequest({ access, actions: [...actions], days }) : undefined;
    if (request && 'problem' in request) return setProblem(request);
    setBusy(true);
    try {
      if (request) await data(api.POST('/cli/logins/{userCode}/approve', { params: { path: { userCode: code } }, body: request.body }));
      else await data(api.POST('/cli/logins/{userCode}/deny', { params: { path: { userCode: code } } }));
      setOutcome(approve ? 'approved' : 'denied');
    } catch (error) {
      setFailure({ doing: approve ? 'Approving the login' : 'Denying the login', error });
      // No longer pending (409: decided elsewhere, or expired): its state is read again and said.
      await load();
    } finally {
      setBusy(false);
    }
  };

  const status = !login
    ? loadError === undefined
      ? `Looking up code ${code}…`
      : ''
    : outcome === 'approved'
      ? 'Approved: you can return to your terminal.'
      : outcome === 'denied'
        ? 'Denied.'
        : (loginStateInWords(login.state) ?? '');
  const pending = login?.state === 'pending' && !outcome;
  const notFound = loadError instanceof ConsoleError && loadError.status === 404;
  return (
    <>
      <p role="status" id="cli-login-status" ref={said} tabIndex={-1} class={outcome || (login && !pending) ? 'done' : undefined}>
        {status}
      </p>
      {loadError !== undefined && (
        <>
          <ErrorMessage doing={`Looking up code ${code}`} error={loadError} />
          <p>
            {notFound ? 'No svc login waits with this code: check the code your terminal shows.' : 'Try again, or type the code again.'}
          </p>
          <CodeForm key={code} initial={code} />
        </>
      )}
      {login && (
        <section aria-labelledby="cli-login-request-heading">
          <h2 id="cli-login-request-heading">The request</h2>
          <dl class="facts" id="cli-login-request">
            <dt>Device, as the terminal named itself</dt>
            <dd>{login.name}</dd>
            <dt>Code</dt>
            <dd>
              <code>{login.user_code}</code>
            </dd>
            <dt>Asked</dt>
            <dd>{when(login.requested_at)}</dd>
            <dt>From the address</dt>
            <dd>
              <code>{login.requested_from}</code>
            </dd>
            <dt>Waits until</dt>
            <dd>{when(login.expires_at)}</dd>
          </dl>
        </section>
      )}
      {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
      {login && pending && (
        <section aria-labelledby="cli-login-decide-heading">
          <h2 id="cli-login-decide-heading">Approve or deny</h2>
          <div class="notice" id="cli-login-warning">
            <p class="warn-text">
              <strong>
                Approve only if you just ran svc login yourself and your terminal shows this same code. Someone who sends you this link
                could otherwise get a token to your account.
              </strong>
            </p>
            <p>
              The code here: <code>{login.user_code}</code>
            </p>
            {login.requested_from !== login.your_address && (
              <p id="cli-login-elsewhere">
                It was asked from <code>{login.requested_from}</code>, and this browser is at <code>{login.your_address}</code>: deny it
                unless you ran svc login on another machine or network just now.
              </p>
            )}
          </div>
          <form
            id="cli-login-approve"
            onSubmit={(e) => {
              e.preventDefault();
              void decide(true);
            }}
            noValidate
          >
            <fieldset aria-describedby={problem?.field === 'actions' ? 'cli-login-problem' : undefined}>
              <legend>What the terminal's token may do</legend>
              <label class="check">
                <input type="radio" name="access" value="all" checked={access === 'all'} onChange={() => setAccess('all')} />
                Everything this account can do (every action)
              </label>
              <label class="check">
                <input type="radio" name="access" value="chosen" checked={access === 'chosen'} onChange={() => setAccess('chosen')} />
                Only the actions checked below
              </label>
              {tokenActions.map((a) => (
                <label class="check" key={a.action}>
                  <input
                    type="checkbox"
                    name="actions"
                    value={a.action}
                    disabled={access !== 'chosen'}
                    checked={access === 'chosen' && actions.has(a.action)}
                    onChange={(e) => {
                      const next = new Set(actions);
                      if (e.currentTarget.checked) next.add(a.action);
                      else next.delete(a.action);
                      setActions(next);
                      setProblem(undefined);
                    }}
                  />
                  <code>{a.action}</code>: {a.words}
                </label>
              ))}
            </fieldset>
            <label for="cli-login-days">Token lifetime in days</label>
            <p class="hint" id="cli-login-days-hint">
              From 1 to {maxLifetimeDays}; {defaultLifetimeDays} unless changed. The token can be revoked sooner on the Tokens page.
            </p>
            <input
              id="cli-login-days"
              type="number"
              inputMode="numeric"
              min={1}
              max={maxLifetimeDays}
              step={1}
              value={days}
              aria-describedby={problem?.field === 'days' ? 'cli-login-days-hint cli-login-problem' : 'cli-login-days-hint'}
              aria-invalid={problem?.field === 'days' ? true : undefined}
              onInput={(e) => {
                setDays(e.currentTarget.value);
                setProblem(undefined);
              }}
            />
            {problem && (
              <p class="error" id="cli-login-problem" role="alert">
                {problem.problem}
              </p>
            )}
            <p>
              <button type="submit" disabled={busy}>
                Approve
              </button>{' '}
              <button type="button" class="secondary" disabled={busy} onClick={() => void decide(false)}>
                Deny
              </button>
            </p>
          </form>
        </section>
      )}
    </>
  );
}

export function CliLoginPage({ code }: { code: string }) {
  const normal = normalUserCode(code);
  return (
    <>
      <PageHeading title="Approve svc login">Approve a svc login</PageHeading>
      <p class="muted">A terminal that ran svc login asks for a token of this account. Approve it here, or deny it.</p>
      {normal ? <LoginRequest code={normal} /> : <CodeForm key={code} initial={code} />}
    </>
  );
}
