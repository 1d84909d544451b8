// The account's webhooks (docs/api/webhooks.md): each one's URL, event kinds and state; a new one
// (URL and event kinds; its signing secret shown once, as the API returns it only then); deleting
// one after a confirmation in the page; enabling a disabled one. One opens at its own address to
// its recent deliveries: status in words, attempts, response code, when, every attempt on demand,
// and "Redeliver". While a delivery is pending the list is read again every two seconds.
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import {
  deliveryStateInWords,
  parseEventFilters,
  responseInWords,
  webhookStateInWords,
  webhookUrlProblem,
  type Delivery,
  type DeliveryDetail,
  type Webhook,
  type WebhookCreated,
} from '../account.js';
import { api, data } from '../api.js';
import { ErrorMessage } from '../components/error-message.js';
import { ShownOnce } from '../components/shown-once.js';
import { PageHeading } from '../components/page-heading.js';
import { hrefOf, navigate } from '../router.js';
import { when, whenExactly } from '../time.js';
import { eventKinds } from '../../../lib/event-kinds.js';
import { TableHead } from '../components/table-head.js';
import { ConfirmStep } from '../components/confirm-step.js';

const refreshMs = 2000;
type Failure = { doing: string; error: unknown; where: 'list' | 'form' } | undefined;

function NewSecret({ created, onDone }: { created: WebhookCreated; onDone: () => void }) {
  return (
    <ShownOnce
      id="new-webhook"
      fieldId="new-webhook-secret"
      heading={`Webhook ${created.id} created`}
      warning={
        <>
          <strong>Copy its signing secret now: it will not be shown again.</strong> Your receiver verifies each delivery with it (Standard
          Webhooks).
        </>
      }
      label="The signing secret"
      what="secret"
      value={created.secret}
      rows={2}
      onDone={onDone}
    />
  );
}

function Attempts({ webhook, delivery, version }: { webhook: string; delivery: string; version: string }) {
  const [detail, setDetail] = useState<DeliveryDetail | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  useEffect(() => {
    let live = true;
    data(
      api.GET('/account/webhooks/{webhookID}/deliveries/{deliveryID}', { params: { path: { webhookID: webhook, deliveryID: delivery } } }),
    ).then(
      (d) => {
        if (!live) return;
        setDetail(d);
        setError(undefined);
      },
      (err: unknown) => live && setError(err),
    );
    return () => {
      live = false;
    };
    // `version`: the delivery as listed, so its attempts are read again when it changes.
  }, [webhook, delivery, version]);
  if (error !== undefined) return <ErrorMessage doing={`Reading the attempts of delivery ${delivery}`} error={error} />;
  if (!detail) return <p role="status">Loading its attempts…</p>;
  if (detail.attempt_log.length === 0) return <p id={`attempts-${delivery}`}>No attempt yet.</p>;
  return (
    <table class="apps attempts" id={`attempts-${delivery}`}>
      <caption>Every attempt of delivery {delivery}</caption>
      <TableHead columns={['When', 'Answer', 'Took', 'Start of the answer']} />
      <tbody>
        {detail.attempt_log.map((a, i) => (
          <tr key={i}>
            <th scope="row">{whenExactly(a.attempted_at)}</th>
            <td>{responseInWords(a.status, a.error)}</td>
            <td>{a.duration_ms} ms</td>
            <td>{a.response_excerpt ? <code class="wrap">{a.response_excerpt.slice(0, 200)}</code> : <span class="muted">none</span>}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Deliveries({ webhook }: { webhook: Webhook }) {
  const [deliveries, setDeliveries] = useState<Delivery[] | undefined>(undefined);
  const [error, setError] = useState<unknown>(undefined);
  const [failure, setFailure] = useState<{ doing: string; error: unknown } | undefined>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const [open, setOpen] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const webhookID = webhook.id;
  const load = () =>
    data(api.GET('/account/webhooks/{webhookID}/deliveries', { params: { path: { webhookID }, query: { limit: 20 } } })).then(
      (d) => {
        setDeliveries(d.deliveries);
        setError(undefined);
      },
      (err: unknown) => setError(err),
    );
  useEffect(() => {
    setDeliveries(undefined);
    setOpen(undefined);
    void load();
  }, [webhookID]);
  const pending = deliveries?.some((d) => d.status === 'pending') ?? false;
  useEffect(() => {
    if (!pending) return undefined;
    const timer = setInterval(() => void load(), refreshMs);
    return () => clearInterval(timer);
  }, [pending, webhookID]);

  const redeliver = async (d: Delivery) => {
    setBusy(true);
    setFailure(undefined);
    setDone(undefined);
    try {
      await data(
        api.POST('/account/webhooks/{webhookID}/deliveries/{deliveryID}/redeliver', { params: { path: { webhookID, deliveryID: d.id } } }),
      );
      // Read again first: the notice never stands beside the delivery as it was before.
      await load();
      setDone(`Delivery ${d.id} is being sent again.`);
    } catch (err) {
      setFailure({ doing: `Redelivering ${d.id}`, error: err });
    } finally {
      setBusy(false);
    }
  };

  return (
    <section class="details" id="deliveries-section" aria-labelledby="deliveries-heading">
      <h2 id="deliveries-heading" tabIndex={-1}>
        Recent deliveries to {webhook.url}
      </h2>
      <p class="toolbar">
        <button type="button" class="secondary small" onClick={() => void load()}>
          Refresh the deliveries
        </button>{' '}
        <a href={hrefOf({ page: 'webhooks' })}>Close</a>
      </p>
      {failure && <ErrorMessage doing={failure.doing} error={failure.error} />}
      <p role="status" id="deliveries-done" class={done ? 'done' : 'visually-hidden'}>
        {done}
      </p>
      {error !== undefined && <ErrorMessage doing="Listing the deliveries" error={error} />}
      {!deliveries && error === undefined && <p role="status">Loading deliveries…</p>}
      {deliveries && deliveries.length === 0 && (
        <p id="deliveries-empty">Nothing sent yet: an event of the kinds it names will be delivered the moment it is recorded.</p>
      )}
      {deliveries && deliveries.length > 0 && (
        <table class="apps deliveries" id="deliveries">
          <caption class="visually-hidden">The 20 newest deliveries to {webhook.url}</caption>
          <TableHead columns={['Event', 'Status', 'Attempts', 'Response code', 'Last attempt']} actions />
          <tbody>
            {deliveries.map((d) => {
              const state = deliveryStateInWords(d);
              return (
                <Fragment key={d.id}>
                  <tr data-delivery={d.id}>
                    <th scope="row">
                      {d.event_type} <span class="muted small">event {d.event_id}</span>
                      <div class="muted small">
                        <code>{d.id}</code>
                      </div>
                    </th>
                    <td>
                      <span class={`dot ${state.tone}`} aria-hidden="true" />
                      {state.text}
                      {d.status === 'pending' && d.next_attempt_at && d.attempts > 0 && (
                        <div class="muted small">next attempt {when(d.next_attempt_at)}</div>
                      )}
                    </td>
                    <td>{d.attempts}</td>
                    <td>{d.last_status ?? <span class="muted">none</span>}</td>
                    <td>{d.last_attempt_at ? when(d.last_attempt_at) : <span class="muted">not yet</span>}</td>
                    <td class="actions">
                      <button
                        type="button"
                        class="secondary small"
                        aria-expanded={open === d.id}
                        aria-controls={`attempts-of-${d.id}`}
                        onClick={() => setOpen(open === d.id ? undefined : d.id)}
                      >
                        {open === d.id ? 'Hide the attempts' : 'Show the attempts'}
                        <span class="visually-hidden"> of delivery {d.id}</span>
                      </button>{' '}
                      <button
                        type="button"
                        class="small"
                        disabled={busy || webhook.disabled_at !== null}
                        aria-label={`Redeliver ${d.id}`}
                        onClick={() => void redeliver(d)}
                      >
                        Redeliver
                      </button>
                    </td>
                  </tr>
                  {open === d.id && (
                    <tr id={`attempts-of-${d.id}`}>
                      <td colSpan={6}>
                        <Attempts webhook={webhookID} delivery={d.id} version={`${d.status}/${d.attempts}/${d.last_attempt_at ?? ''}`} />
                      </td>
                    </tr>
                  )}
                </Fragment>
              );
            })}
          </tbody>
        </table>
      )}
    </section>
  );
}

export function WebhooksPage({ open }: { open?: string | undefined }) {
  const [webhooks, setWebhooks] = useState<Webhook[] | undefined>(undefined);
  const [loadError, setLoadError] = useState<unknown>(undefined);
  const [failure, setFailure] = useState<Failure>(undefined);
  const [done, setDone] = useState<string | undefined>(undefined);
  const [created, setCreated] = useState<WebhookCreated | undefined>(undefined);
  const [confirming, setConfirming] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState('');
  const [description, setDescription] = useState('');
  const [formProblem, setFormProblem] = useState<{ field: 'url' | 'events'; text: string } | undefined>(undefined);

  const load = () =>
    data(api.GET('/account/webhooks')).then(
      (w) => {
        setWebhooks(w.webhooks);
        setLoadError(undefined);
      },
      (err: unknown) => setLoadError(err),
    );
  useEffect(() => void load(), []);

  const create = async (event: Event) => {
    event.preventDefault();
    setFailure(undefined);
    setDone(undefined);
    const urlProblem = webhookUrlProblem(url);
    if (urlProblem) return setFormProblem({ field: 'url', text: urlProblem });
    const { filters, unknown } = parseEventFilters(events);
    if (unknown.length)
      return setFormProblem({ field: 'events', text: `Unknown event kind${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}.` });
    setFormProblem(undefined);
    setBusy(true);
    try {
      const body = { url: url.trim(), events: filters, ...(description.trim() ? { description: description.trim() } : {}) };
      setCreated(await data(api.POST('/account/webhooks', { body })));
      setUrl('');
      setEvents('');
      setDescription('');
      await load();
    } catch (error) {
      setFailure({ doing: 'Creating the webhook', error, where: 'form' });
    } finally {
      setBusy(false);
    }
  };
  const act = async (doing: string, call: () => Promise<unknown>, said: string) => {
    setBusy(true);
    setFailure(undefined);
    setDone(undefined);
    try {
      await call();
      setConfirming(undefined);
      await load();
      setDone(said);
    } catch (error) {
      setFailure({ doing, error, where: 'list' });
    } finally {
      setBusy(false);
    }
  };
  const remove = (w: Webhook) =>
    act(
      `Deleting the webhook to ${w.url}`,
      async () => {
        await api.DELETE('/account/webhooks/{webhookID}', { params: { path: { webhookID: w.id } } });
        // Its deliveries went with it: the page's address no longer names it.
        if (w.id === open) navigate(hrefOf({ page: 'webhooks' }), { replace: true });
      },
      `Webhook ${w.id} deleted.`,
    );
  const enable = (w: Webhook) =>
    act(
      `Enabling the webhook to ${w.url}`,
      () => data(api.POST('/account/webhooks/{webhookID}/enable', { params: { path: { webhookID: w.id } } })),
      `Webhook ${w.id} enabled.`,
    );

  const opened = open ? webhooks?.find((w) => w.id === open) : undefined;
  return (
    <>
      <PageHeading title="Webhooks">Webhooks</PageHeading>
      <p class="muted">
        Each webhook receives the account's events of the kinds it names as signed HTTP POSTs, retried for about three days when they fail.
      </p>
      {created && <NewSecret key={created.id} created={created} onDone={() => setCreated(undefined)} />}
      {failure?.where === 'list' && <ErrorMessage doing={failure.doing} error={failure.error} />}
      <p role="status" id="webhooks-done" class={done ? 'done' : 'visually-hidden'}>
        {done}
      </p>
      {loadError !== undefined && <ErrorMessage doing="Listing webhooks" error={loadError} />}
      {!webhooks && loadError === undefined && <p role="status">Loading webhooks…</p>}
      {webhooks && webhooks.length === 0 && <p id="webhooks-empty">No webhooks yet: create one below.</p>}
      {webhooks && webhooks.length > 0 && (
        <table class="apps webhooks" id="webhooks">
          <caption class="visually-hidden">Webhooks of the account</caption>
          <TableHead columns={['URL', 'Events', 'State', 'Created']} actions />
          <tbody>
            {webhooks.map((w) => {
              const state = webhookStateInWords(w);
              return (
                <tr key={w.id} data-webhook={w.id} class={w.id === open ? 'selected' : undefined}>
                  <th scope="row">
                    <code class="wrap">{w.url}</code>
                    {w.description && <div class="small">{w.description}</div>}
                    <div class="muted small">
                      <code>{w.id}</code>
                    </div>
                  </th>
                  <td>{w.events.length ? w.events.join(', ') : <span class="muted">every kind</span>}</td>
                  <td>
                    <span class={`dot ${state.tone}`} aria-hidden="true" />
                    {state.text}
                  </td>
                  <td>{when(w.created_at)}</td>
                  <td class="actions">
                    <a href={hrefOf({ page: 'webhooks', webhook: w.id })} aria-current={w.id === open ? 'true' : undefined}>
                      Deliveries<span class="visually-hidden"> of webhook {w.id}</span>
                    </a>{' '}
                    {w.disabled_at && (
                      <button type="button" class="secondary small" disabled={busy} onClick={() => void enable(w)}>
                        Enable<span class="visually-hidden"> webhook {w.id}</span>
                      </button>
                    )}{' '}
                    {confirming === w.id ? (
                      <ConfirmStep
                        label={`Confirm deleting webhook ${w.id}`}
                        action="Delete"
                        busy={busy}
                        onConfirm={() => void remove(w)}
                        onKeep={() => setConfirming(undefined)}
                      >
                        Delete the webhook to {w.url}? Nothing more is sent to it, and its deliveries go with it.
                      </ConfirmStep>
                    ) : (
                      <button
                        type="button"
                        class="secondary small"
                        aria-label={`Delete webhook ${w.id}`}
                        onClick={() => setConfirming(w.id)}
                      >
                        Delete
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {open && webhooks && !opened && (
        <ErrorMessage doing={`Opening webhook ${open}`} error={new Error('the account has no such webhook')} />
      )}
      {opened && <Deliveries key={opened.id} webhook={opened} />}

      <section aria-labelledby="create-webhook-heading">
        <h2 id="create-webhook-heading">Create a webhook</h2>
        <form onSubmit={(e) => void create(e)} id="create-webhook" noValidate>
          <label for="webhook-url">URL to send the events to</label>
          <input
            id="webhook-url"
            type="url"
            value={url}
            autocomplete="off"
            spellcheck={false}
            placeholder="https://hooks.example.com/svc"
            aria-invalid={formProblem?.field === 'url' ? 'true' : undefined}
            aria-describedby={formProblem?.field === 'url' ? 'webhook-form-problem' : undefined}
            onInput={(e) => setUrl(e.currentTarget.value)}
          />
          <label for="webhook-events">Event kinds (separated by commas; prefix.* for a family; empty: every kind)</label>
          <input
            id="webhook-events"
            value={events}
            autocomplete="off"
            spellcheck={false}
            placeholder="deploy.*, machine.crashed"
            list="event-kinds"
            aria-invalid={formProblem?.field === 'events' ? 'true' : undefined}
            aria-describedby={formProblem?.field === 'events' ? 'webhook-form-problem' : 'webhook-events-hint'}
            onInput={(e) => setEvents(e.currentTarget.value)}
          />
          <datalist id="event-kinds">
            {eventKinds.map((k) => (
              <option key={k} value={k} />
            ))}
          </datalist>
          <details class="hint" id="webhook-events-hint">
            <summary>The event kinds</summary>
            <p>
              <code>{eventKinds.join(', ')}</code>
            </p>
          </details>
          <label for="webhook-description">Description (optional)</label>
          <input
            id="webhook-description"
            value={description}
            maxLength={200}
            autocomplete="off"
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
          {formProblem && (
            <p class="error" id="webhook-form-problem" role="alert">
              {formProblem.text}
            </p>
          )}
          <p>
            <button type="submit" disabled={busy}>
              Create the webhook
            </button>
          </p>
          {failure?.where === 'form' && <ErrorMessage doing={failure.doing} error={failure.error} />}
        </form>
      </section>
    </>
  );
}
