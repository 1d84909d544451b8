// An app's runtime logs, following live: a service selector for an app of several services, a status
// line (live, reconnecting and why, paused), a "Pause following" toggle, and a virtualised list: rows
// of a fixed height, only those in view (and a margin) in the DOM, so 100,000 lines stay responsive.
// After a dropped connection, a hidden tab or a pause it resumes from the last line seen with no gap
// and no repeat (follow-logs.ts, log-view.ts).
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { api, data, type App } from '../api.js';
import { ErrorMessage, errorText } from '../components/error-message.js';
import { PageHeading } from '../components/page-heading.js';
import { followLogs, type LogFollower, type LogState } from '../follow-logs.js';
import { atBottom, LogStore, rowWindow, writerOf } from '../log-view.js';
import { hrefOf } from '../router.js';

/** Each row's height, px (styles.css `.log-row` has the same). */
const rowHeight = 20;

function stateInWords(s: LogState): string {
  switch (s.state) {
    case 'loading':
      return 'Connecting to the log…';
    case 'live':
      return 'Live: new lines appear at the bottom.';
    case 'reconnecting':
      return `Reconnecting (${errorText(s.error)}); no line will be missed.`;
    case 'paused':
      return s.why === 'asked'
        ? 'Paused: following resumes from the last line shown when you ask.'
        : 'Paused while this tab is hidden; it catches up when shown.';
    case 'stopped':
      return 'Not following.';
  }
}

/** The list: a scrolling box with a spacer as tall as every row, and only the rows in view rendered. */
function LogList({ store, version, name }: { store: LogStore; version: number; name: string }) {
  const box = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ scrollTop: 0, height: 480 });
  /** Whether the view stays at the bottom as lines come (until scrolled up). */
  const stick = useRef(true);
  const frame = useRef(0);
  const measure = () => {
    const el = box.current;
    if (!el) return;
    stick.current = atBottom(el.scrollTop, el.clientHeight, el.scrollHeight, rowHeight);
    setView({ scrollTop: el.scrollTop, height: el.clientHeight });
  };
  const onScroll = () => {
    cancelAnimationFrame(frame.current);
    frame.current = requestAnimationFrame(measure);
  };
  useEffect(() => {
    measure();
    const observer = new ResizeObserver(measure);
    if (box.current) observer.observe(box.current);
    return () => {
      observer.disconnect();
      cancelAnimationFrame(frame.current);
    };
  }, []);
  // New lines: stay at the bottom if it was there.
  useLayoutEffect(() => {
    const el = box.current;
    if (el && stick.current) {
      el.scrollTop = el.scrollHeight;
      setView({ scrollTop: el.scrollTop, height: el.clientHeight });
    }
  }, [version]);
  const lines = store.lines;
  const w = rowWindow({ total: lines.length, scrollTop: view.scrollTop, viewportHeight: view.height, rowHeight });
  return (
    <div
      ref={box}
      id="log"
      class="log-view"
      role="region"
      aria-label={`Log lines of ${name}`}
      aria-describedby="log-state"
      tabIndex={0}
      onScroll={onScroll}
    >
      <div class="log-spacer" style={{ height: `${w.totalHeight}px` }}>
        <ol class="log-rows" start={store.dropped + w.first + 1} style={{ transform: `translateY(${w.offsetTop}px)` }}>
          {lines.slice(w.first, w.end).map((l) => (
            <li key={l.seq} class="log-row" data-seq={l.seq}>
              <time dateTime={l.time}>{l.time.slice(11, 23)}</time> <span class="log-writer">{writerOf(l)}</span>{' '}
              <span class="log-text">{l.line}</span>
            </li>
          ))}
        </ol>
      </div>
    </div>
  );
}

export function AppLogsPage({ name }: { name: string }) {
  const [app, setApp] = useState<App | undefined>(undefined);
  const [appError, setAppError] = useState<unknown>(undefined);
  const [service, setService] = useState('');
  const [paused, setPaused] = useState(false);
  const [state, setState] = useState<LogState>({ state: 'loading' });
  const [version, setVersion] = useState(0);
  const store = useRef(new LogStore());
  const follower = useRef<LogFollower | undefined>(undefined);

  useEffect(() => {
    let live = true;
    setApp(undefined);
    setAppError(undefined);
    data(api.GET('/apps/{appID}', { params: { path: { appID: name } } })).then(
      (a) => live && setApp(a),
      (err: unknown) => live && setAppError(err),
    );
    return () => {
      live = false;
    };
  }, [name]);

  useEffect(() => {
    store.current.clear();
    setVersion((v) => v + 1);
    const f = followLogs({
      app: name,
      service: service || undefined,
      onLines: (lines) => {
        store.current.append(lines);
        setVersion(store.current.version);
      },
      onState: setState,
    });
    follower.current = f;
    f.setPaused(paused);
    return () => {
      f.stop();
      follower.current = undefined;
    };
    // `paused` is passed on by togglePause, not by a new follow.
  }, [name, service]);

  const togglePause = () => {
    const next = !paused;
    setPaused(next);
    follower.current?.setPaused(next);
  };
  const services = app?.services ?? [];
  const count = store.current.lines.length;
  return (
    <>
      <p class="crumbs">
        <a href={hrefOf({ page: 'apps' })}>Apps</a> / <a href={hrefOf({ page: 'app', name })}>{name}</a> / logs
      </p>
      <PageHeading title={`Logs of ${name}`}>Logs of {name}</PageHeading>
      {appError !== undefined && <ErrorMessage doing={`Loading app ${name}`} error={appError} />}
      <div class="log-controls">
        {services.length > 1 && (
          <label>
            Service{' '}
            <select id="log-service" value={service} onChange={(e) => setService((e.target as HTMLSelectElement).value)}>
              <option value="">All services</option>
              {services.map((s) => (
                <option key={s.name} value={s.name}>
                  {s.name}
                  {s.public ? ' (public)' : ''}
                </option>
              ))}
            </select>
          </label>
        )}
        <button type="button" class="secondary" id="log-pause" aria-pressed={paused} onClick={togglePause}>
          Pause following
        </button>
      </div>
      <p role="status" id="log-state" class={`feed-state ${state.state}`}>
        <span class={`dot ${state.state === 'live' ? 'ok' : state.state === 'stopped' ? 'bad' : 'busy'}`} aria-hidden="true" />
        {stateInWords(state)}
      </p>
      {state.state === 'stopped' && <ErrorMessage doing={`Following the log of ${name}`} error={state.error} />}
      <p class="muted" id="log-count">
        {count === 1 ? '1 line' : `${count.toLocaleString('en')} lines`}
        {store.current.dropped > 0 && ` (the ${store.current.dropped.toLocaleString('en')} oldest no longer kept)`}
      </p>
      <LogList store={store.current} version={version} name={name} />
    </>
  );
}
