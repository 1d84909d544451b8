// The account's events, newest first, following live: a new event appears on top without a reload,
// and after a dropped connection or a sleeping tab the feed resumes from the last id seen, with no
// gap and no repeat (follow-events.ts, event-feed.ts).
import { useEffect, useState } from 'preact/hooks';
import { ErrorMessage, errorText } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { emptyFeed, eventSummary, mergeEvents, type Feed } from '../event-feed.js';
import { followEvents, type FeedState } from '../follow-events.js';
import { whenExactly } from '../time.js';
import { TableHead } from '../components/table-head.js';

function stateInWords(s: FeedState): string {
  switch (s.state) {
    case 'loading':
      return 'Loading events…';
    case 'live':
      return 'Live: new events appear at the top.';
    case 'reconnecting':
      return `Reconnecting (${errorText(s.error)}); no event will be missed.`;
    case 'paused':
      return 'Paused while this tab is hidden; it catches up when shown.';
    case 'stopped':
      return 'Not following.';
  }
}

export function EventsPage() {
  const [feed, setFeed] = useState<Feed>(emptyFeed);
  const [state, setState] = useState<FeedState>({ state: 'loading' });
  const [gone, setGone] = useState<string | undefined>(undefined);
  const [loaded, setLoaded] = useState(false);
  useEffect(
    () =>
      followEvents({
        onEvents: (events) => {
          setLoaded(true);
          setFeed((f) => mergeEvents(f, events));
        },
        onState: setState,
        onGone: setGone,
      }),
    [],
  );
  return (
    <>
      <PageHeading title="Events">Events</PageHeading>
      <p role="status" id="feed-state" class={`feed-state ${state.state}`}>
        <span class={`dot ${state.state === 'live' ? 'ok' : state.state === 'stopped' ? 'bad' : 'busy'}`} aria-hidden="true" />
        {stateInWords(state)}
      </p>
      {state.state === 'stopped' && <ErrorMessage doing="Following events" error={state.error} />}
      {gone && <p class="notice">Some events were older than the log keeps: {gone}.</p>}
      {loaded && feed.events.length === 0 && <p>No events yet.</p>}
      {feed.events.length > 0 && (
        <table class="apps events" aria-describedby="feed-state">
          <caption class="visually-hidden">Events of the account, newest first</caption>
          <TableHead columns={['When', 'Kind', 'Subject', 'Details']} />
          <tbody>
            {feed.events.map((e) => (
              <tr key={e.id} data-event-id={e.id}>
                <td>
                  <time dateTime={e.created_at}>{whenExactly(e.created_at)}</time>
                </td>
                <td>
                  <code>{e.type}</code>
                </td>
                <th scope="row">{e.subject ?? <span class="muted">none</span>}</th>
                <td>{eventSummary(e)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </>
  );
}
