// Following the account's events in the browser: the newest of the log (GET /account/events with
// order=newest, one page), then the live stream (GET /events?follow=true as Server-Sent Events) from the
// last id seen. EventSource cannot send X-Svc-Console, without which the API refuses the session
// cookie (decision 0031), so the stream is read with fetch. Whenever it ends (the network dropped,
// the server closed it, the tab went to sleep) the next one starts `after` the last id seen: the API
// sends every event after it, none twice (docs/api/events.md), and mergeEvents drops any repeat.
import { api, data, ConsoleError, type AccountEvent } from './api.js';
import { maxShown, readFrames, reconnectDelay } from './event-feed.js';

export type FeedState =
  | { state: 'loading' }
  | { state: 'live' }
  | { state: 'reconnecting'; error: unknown }
  | { state: 'paused' }
  | { state: 'stopped'; error: unknown };

export interface FollowOptions {
  onEvents: (events: AccountEvent[]) => void;
  onState: (state: FeedState) => void;
  /** The log no longer holds what came after the cursor (410 gone): the feed resumes from the oldest kept. */
  onGone: (message: string) => void;
}

/** A stream that says nothing (not even the 15 s keep-alive) for this long is taken as dropped. */
const silentMs = 45_000;

/** The newest `keep` events of the log (at most 1,000: one page), oldest first as the feed holds them. */
async function newestEvents(keep: number): Promise<{ events: AccountEvent[]; lastId: number }> {
  const page = await data(api.GET('/account/events', { params: { query: { order: 'newest', limit: Math.min(keep, 1000) } } }));
  const events = [...page.events].reverse();
  return { events, lastId: events.length ? events[events.length - 1]!.id : 0 };
}

/** Whether the tab is hidden (asked anew each time: it changes while a stream runs). */
const hidden = () => document.visibilityState === 'hidden';

/** Starts following; the function returned stops it. */
export function followEvents(opts: FollowOptions): () => void {
  let cursor = 0;
  let stopped = false;
  let failures = 0;
  let retryMs = 3000;
  let current: AbortController | undefined;
  let wake: (() => void) | undefined;
  /** Whether the last stream was answered: one that was is retried after the server's `retry`, one that was not backs off. */
  let opened = false;

  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        wake = undefined;
        resolve();
      }
      wake = done;
    });

  /** One stream, read to its end. Resolves when it ends; throws when it could not start or broke. */
  const stream = async () => {
    const controller = new AbortController();
    current = controller;
    let silence = setTimeout(() => controller.abort(), silentMs);
    try {
      const { data: body } = await api.GET('/events', {
        params: { query: { follow: 'true', after: cursor } },
        headers: { Accept: 'text/event-stream' },
        parseAs: 'stream',
        signal: controller.signal,
      });
      if (!body) throw new ConsoleError(0, 'the event stream answered with no body');
      opened = true;
      opts.onState({ state: 'live' });
      const reader = body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        clearTimeout(silence);
        silence = setTimeout(() => controller.abort(), silentMs);
        const { frames, rest } = readFrames(buffer + value);
        buffer = rest;
        const events: AccountEvent[] = [];
        for (const frame of frames) {
          if (frame.retry !== undefined) retryMs = frame.retry;
          if (!frame.data) continue;
          if (frame.event === 'gone') {
            const gone = JSON.parse(frame.data) as { error: string; after: number };
            cursor = gone.after;
            opts.onGone(gone.error);
          } else if (frame.event === 'error') {
            // The API ends the stream after saying why (the token revoked or expired): the next
            // connection's answer (401 signs out) says whether it is over.
            throw new ConsoleError(0, (JSON.parse(frame.data) as { error: string }).error);
          } else {
            const event = JSON.parse(frame.data) as AccountEvent;
            cursor = Math.max(cursor, event.id);
            events.push(event);
          }
        }
        if (events.length > 0) opts.onEvents(events);
      }
    } finally {
      clearTimeout(silence);
      controller.abort();
      if (current === controller) current = undefined;
    }
  };

  const run = async () => {
    try {
      const first = await newestEvents(maxShown);
      cursor = first.lastId;
      opts.onEvents(first.events);
    } catch (err) {
      opts.onState({ state: 'stopped', error: err });
      return;
    }
    while (!stopped) {
      if (hidden()) {
        opts.onState({ state: 'paused' });
        await sleep(24 * 3600_000);
        continue;
      }
      opened = false;
      let error: unknown = new ConsoleError(0, 'the event stream ended');
      try {
        await stream();
      } catch (err) {
        error = err;
      }
      if (stopped) return;
      if (error instanceof ConsoleError && error.status === 401) {
        // The session is over: api.ts has told the shell, which shows sign-in.
        opts.onState({ state: 'stopped', error });
        return;
      }
      if (hidden()) continue;
      failures = opened ? 1 : failures + 1;
      opts.onState({ state: 'reconnecting', error });
      await sleep(reconnectDelay(failures, retryMs));
    }
  };

  // A sleeping tab keeps no connection; awake, it resumes from the last id at once.
  const onVisibility = () => {
    if (hidden()) current?.abort();
    else wake?.();
  };
  // Offline, the stream is dead even if no error says so yet; back online, resume at once.
  const onOffline = () => current?.abort();
  const onOnline = () => wake?.();
  document.addEventListener('visibilitychange', onVisibility);
  addEventListener('offline', onOffline);
  addEventListener('online', onOnline);
  void run();
  return () => {
    stopped = true;
    document.removeEventListener('visibilitychange', onVisibility);
    removeEventListener('offline', onOffline);
    removeEventListener('online', onOnline);
    current?.abort();
    wake?.();
  };
}
