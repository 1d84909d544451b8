// An app's custom domains (docs/api/domains.md): each one's status in words and the API's reason,
// its HTTPS certificate, and the DNS records to publish (type, name, value), each name and value with
// a copy button; a check now, a removal asked for in the page first, and a form to add one whose
// refusal is the API's own message. While a domain waits for its records the list is read again
// every few seconds, as the platform's own checks run.
import { useEffect, useState } from 'preact/hooks';
import { api, data, type Domain } from '../api.js';
import { ConfirmStep } from '../components/confirm-step.js';
import { ErrorMessage } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { TableHead } from '../components/table-head.js';
import { certificateInWords, domainInputProblem, domainLabel, domainStatusInWords, recordRows } from '../resources.js';
import { hrefOf } from '../router.js';
import { when } from '../time.js';
import { useAction } from '../use-action.js';

const refreshMs = 5000;

/** Copies `text`, and says in words whether it worked (a click's handler: no inline script). */
async function copyText(text: string, what: string): Promise<string> {
  try {
    await navigator.clipboard.writeText(text);
    return `Copied the ${what}.`;
  } catch {
    return `The browser refused the clipboard: select the ${what} and copy it.`;
  }
}

function DomainCard({
  domain,
  busy,
  confirming,
  onCopied,
  onVerify,
  onAskRemove,
  onRemove,
  onKeep,
}: {
  domain: Domain;
  busy: boolean;
  confirming: boolean;
  onCopied: (said: string) => void;
  onVerify: () => void;
  onAskRemove: () => void;
  onRemove: () => void;
  onKeep: () => void;
}) {
  const status = domainStatusInWords(domain);
  const https = certificateInWords(domain);
  const label = domainLabel(domain);
  const id = `domain-${domain.name.replace(/[^a-z0-9-]/g, '_')}`;
  return (
    <section class="domain" aria-labelledby={`${id}-heading`} data-domain={domain.name}>
      <h2 id={`${id}-heading`}>
        {label}
        {domain.declared && <span class="tag">from the app’s spec</span>}
      </h2>
      <dl class="facts">
        <dt>Status</dt>
        <dd class="domain-status">
          <span class={`dot ${status.tone}`} aria-hidden="true" />
          {status.text}
        </dd>
        {domain.reason && (
          <>
            <dt>Reason</dt>
            <dd class="domain-reason">{domain.reason}</dd>
          </>
        )}
        {status.next && (
          <>
            <dt>Next</dt>
            <dd>{status.next}</dd>
          </>
        )}
        <dt>HTTPS</dt>
        <dd class="domain-https">
          <span class={`dot ${https.tone}`} aria-hidden="true" />
          {https.text}
        </dd>
        <dt>Checked</dt>
        <dd>
          {domain.checked_at ? when(domain.checked_at) : 'not yet'}
          {domain.next_check_at && `; next check ${when(domain.next_check_at)}`}
        </dd>
      </dl>
      <table class="apps records">
        <caption>DNS records to publish for {label}</caption>
        <TableHead columns={['Type', 'Name', 'Value', 'Last check']} />
        <tbody>
          {recordRows(domain).map((r) => (
            <tr key={r.key} data-record-type={r.type}>
              <th scope="row">
                {r.type}
                <div class="muted small">{r.purpose}</div>
              </th>
              <td>
                <code class="wrap record-name">{r.name}</code>{' '}
                <button
                  type="button"
                  class="secondary small"
                  aria-label={`Copy the name of the ${r.type} record ${r.name}`}
                  onClick={() => void copyText(r.name, `name of the ${r.type} record`).then(onCopied)}
                >
                  Copy
                </button>
              </td>
              <td>
                <code class="wrap record-value">{r.value}</code>{' '}
                <button
                  type="button"
                  class="secondary small"
                  aria-label={`Copy the value of the ${r.type} record ${r.name}`}
                  onClick={() => void copyText(r.value, `value of the ${r.type} record`).then(onCopied)}
                >
                  Copy
                </button>
              </td>
              <td>
                <span class={`dot ${r.check.tone}`} aria-hidden="true" />
                {r.check.text}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <p class="hint">
        In a DNS provider’s form the name is usually written relative to the zone (<code>@</code> for the apex), and the value without
        quotes.
      </p>
      {confirming ? (
        <ConfirmStep
          label={`Confirm removing ${domain.name}`}
          action="Remove"
          busy={busy}
          small={false}
          onConfirm={onRemove}
          onKeep={onKeep}
        >
          Remove {label}? It stops routing to the app at once, and the name is free for anyone.
          {domain.declared && ' The app’s spec names it: it is added again unless the spec changes too.'}
        </ConfirmStep>
      ) : (
        <p>
          {domain.status !== 'failed' && domain.status !== 'verified' && (
            <>
              <button type="button" class="secondary" disabled={busy} aria-label={`Check now: ${domain.name}`} onClick={onVerify}>
                Check now
              </button>{' '}
            </>
          )}
          <button type="button" class="secondary" aria-label={`Remove ${domain.name}`} onClick={onAskRemove}>
            Remove
          </button>
        </p>
      )}
    </section>
  );
}

export function AppDomainsPage({ name }: { name: string }) {
  const appID = name;
  const [domains, setDomains] = useState<Domain[] | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const { busy, failure, done, run, say } = useAction<'list' | 'form'>();
  const [confirming, setConfirming] = useState<string | undefined>(undefined);
  const [newName, setNewName] = useState('');
  const [problem, setProblem] = useState<string | undefined>(undefined);

  const load = () =>
    data(api.GET('/apps/{appID}/domains', { params: { path: { appID } } })).then(
      (d) => {
        setDomains(d.domains);
        setLoadError(undefined);
      },
      (err: unknown) => setLoadError(err),
    );
  useEffect(() => {
    setDomains(undefined);
    setLoadError(undefined);
    void load();
  }, [appID]);
  // The platform checks a waiting domain by itself (2 s after adding, then backing off): read again meanwhile.
  const waiting = domains?.some((d) => d.status === 'pending' || d.status === 'misconfigured') ?? false;
  useEffect(() => {
    if (!waiting) return undefined;
    const timer = setInterval(() => void load(), refreshMs);
    return () => clearInterval(timer);
  }, [waiting, appID]);

  const act = (doing: string, call: () => Promise<unknown>, said: string, where: 'list' | 'form' = 'list') =>
    run(doing, call, {
      said,
      where,
      after: async () => {
        setConfirming(undefined);
        await load();
      },
    });
  const add = async (event: Event) => {
    event.preventDefault();
    const wrong = domainInputProblem(newName);
    setProblem(wrong);
    if (wrong) return;
    const wanted = newName.trim();
    let added = wanted;
    const ok = await act(
      `Adding ${wanted}`,
      async () => {
        added = (await data(api.POST('/apps/{appID}/domains', { params: { path: { appID } }, body: { name: wanted } }))).domain.name;
      },
      `${wanted} added: publish its records below.`,
      'form',
    );
    if (ok) {
      setNewName('');
      say(`${added} added: publish its records below.`, 'form');
    }
  };
  const verify = (d: Domain) =>
    act(
      `Checking ${d.name}`,
      () => data(api.POST('/apps/{appID}/domains/{domain}/verify', { params: { path: { appID, domain: d.name } } })),
      `${d.name} checked.`,
    );
  const remove = (d: Domain) =>
    act(
      `Removing ${d.name}`,
      () => api.DELETE('/apps/{appID}/domains/{domain}', { params: { path: { appID, domain: d.name } } }),
      `${d.name} removed: it no longer routes to ${name}, and the name is free.`,
    );

  return (
    <>
      <p class="crumbs">
        <a href={hrefOf({ page: 'apps' })}>Apps</a> / <a href={hrefOf({ page: 'app', name })}>{name}</a> / custom domains
      </p>
      <PageHeading title={`${name} domains`}>Custom domains of {name}</PageHeading>
      <p class="muted">
        A name of your own that routes to the app once the platform sees its DNS records; it then gets an HTTPS certificate within seconds.
      </p>
      {loadError !== undefined && <ErrorMessage doing={`Listing the domains of ${name}`} error={loadError} />}
      {!domains && loadError === undefined && <p role="status">Loading domains…</p>}
      {failure?.where === 'list' && <ErrorMessage doing={failure.doing} error={failure.error} />}
      <p role="status" id="domains-done" class={done ? 'done' : 'visually-hidden'}>
        {done?.said}
      </p>
      {domains && domains.length === 0 && <p id="domains-empty">{name} has no custom domains yet: add one below.</p>}
      {domains?.map((d) => (
        <DomainCard
          key={d.name}
          domain={d}
          busy={busy}
          confirming={confirming === d.name}
          onCopied={(said) => say(said)}
          onVerify={() => void verify(d)}
          onAskRemove={() => setConfirming(d.name)}
          onRemove={() => void remove(d)}
          onKeep={() => setConfirming(undefined)}
        />
      ))}

      <section aria-labelledby="add-domain-heading">
        <h2 id="add-domain-heading">Add a domain</h2>
        <form id="add-domain" onSubmit={(e) => void add(e)} noValidate>
          <label for="domain-name">Domain name</label>
          <p class="hint" id="domain-name-hint">
            A subdomain (shop.example.com), an apex (example.com) or a wildcard (*.shop.example.com); Unicode names are fine.
          </p>
          <input
            id="domain-name"
            value={newName}
            autocomplete="off"
            spellcheck={false}
            aria-describedby={problem ? 'domain-name-hint domain-name-problem' : 'domain-name-hint'}
            aria-invalid={problem ? true : undefined}
            onInput={(e) => {
              setNewName(e.currentTarget.value);
              setProblem(undefined);
            }}
          />
          {problem && (
            <p class="error" id="domain-name-problem" role="alert">
              {problem}
            </p>
          )}
          <p>
            <button type="submit" disabled={busy}>
              Add the domain
            </button>
          </p>
          {failure?.where === 'form' && <ErrorMessage doing={failure.doing} error={failure.error} />}
        </form>
      </section>
    </>
  );
}
